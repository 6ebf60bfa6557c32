"""Builds the typed IR of one kernel specialization from its libcst tree.

One visitor method per syntax node (`_stmt_*`, `_expr_*`), as Triton's code generator does; what an operator
or builtin *means* is delegated to the typing rules in `semantic.py`. Names resolve through the function's
locals, then its globals and closure, by object identity, so `import transpiler.language as tl`, `from
transpiler.language import load` and calls to other `@transpile` functions (inlined here) all work.
Constexpr values are plain Python objects during the build: `if CONST:` and `tl.static_range` vanish here;
runtime `if`/`for`/`while` become ops with regions, and the variables they change become their results.
"""
from __future__ import annotations

import ast
import builtins
import inspect

import libcst as cst

from .. import dtypes
from ..errors import (CompileTimeError, DTypeError, NameResolutionError, ShapeError, TranspilerError,
                      UnsupportedSyntaxError)
from ..language import TENSOR_METHODS, TENSOR_PROPERTIES
from ..language import core
from ..language.core import BUILTINS, builtin_name, constexpr
from . import (semantic, semantic_atomic, semantic_block_ptr, semantic_dot,  # noqa: F401  (they register rules)
               semantic_inline_asm, semantic_libdevice, semantic_reduce, semantic_scan, semantic_standard,
               semantic_tensor_desc)
from ..options import DEFAULT as DEFAULT_OPTIONS
from .dead_code import remove_dead_code
from .ir import Argument, KernelIR, Op, Region, Type, Value, walk
from .records import Record, Slots
from .source import parsed_function
from .suggestions import missing_attribute

_BINOPS = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "truediv", cst.FloorDivide: "floordiv",
    cst.Modulo: "mod", cst.Power: "pow", cst.LeftShift: "lshift", cst.RightShift: "rshift", cst.BitAnd: "and_",
    cst.BitOr: "or_", cst.BitXor: "xor", cst.MatrixMultiply: "matmul",
}
_AUGOPS = {
    cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul", cst.DivideAssign: "truediv",
    cst.FloorDivideAssign: "floordiv", cst.ModuloAssign: "mod", cst.PowerAssign: "pow",
    cst.LeftShiftAssign: "lshift", cst.RightShiftAssign: "rshift", cst.BitAndAssign: "and_",
    cst.BitOrAssign: "or_", cst.BitXorAssign: "xor", cst.MatrixMultiplyAssign: "matmul",
}
_CMPOPS = {
    cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt", cst.GreaterThanEqual: "ge",
    cst.Equal: "eq", cst.NotEqual: "ne",
}
_UNARY = {cst.Minus: "neg", cst.Plus: "pos", cst.BitInvert: "invert", cst.Not: "not"}

core.TENSOR_CLASSES += [Value, Record]   # `isinstance(x, tl.tensor)` while compiling

# Python builtins a kernel may call on compile-time values.
_PY_CONST_BUILTINS = {builtins.min: min, builtins.max: max, builtins.len: len, builtins.int: int,
                      builtins.float: float, builtins.bool: bool, builtins.isinstance: isinstance,
                      builtins.tuple: tuple, builtins.list: tuple, builtins.getattr: getattr, builtins.abs: abs}
_RUNTIME_BUILTINS = {builtins.min: "minimum", builtins.max: "maximum", builtins.abs: "abs"}
# Builds of a loop body before giving up: carried types settle in a few, and each record leaf found to change
# adds one more.
_MAX_LOOP_BUILDS = 8


class _Unbound:
    """Placeholder for names a runtime branch defines on one side only."""

    def __init__(self, name):
        self.name = name


class BoundMethod:
    """`x.sum` etc.: a builtin with its first argument fixed."""

    def __init__(self, builtin, self_value):
        self.builtin = builtin
        self.self_value = self_value


# Ops that must run only when the program reaches them: their effect is more than their result, or they can
# fault (a load whose address is valid only under the condition that guards it). A runtime conditional
# expression whose branches hold one becomes an `if` with a result, as Triton's scf.if; others are a select.
GUARDED_OPS = frozenset({"load", "store", "atomic_rmw", "atomic_cas", "device_print", "device_assert", "barrier"})


class _Return(Exception):
    pass


def is_kernel_object(obj):
    return getattr(obj, "__transpiler_kernel__", False)


def kernel_function(obj):
    return obj.fn if is_kernel_object(obj) else obj


class Scope:
    """One function's view of names: locals (mutable), then the function's globals, closure and builtins."""

    def __init__(self, fn, parsed):
        self.fn = fn
        self.parsed = parsed
        self.locals: dict = {}
        self.globals = dict(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.globals[name] = cell.cell_contents
                except ValueError:
                    pass

    def lookup(self, name):
        if name in self.locals:
            return self.locals[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise KeyError(name)


def _contains_return(node) -> bool:
    """Whether an if statement holds a `return` in one of its branches (loops and nested functions aside)."""
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Return(self, node):
            found.append(node)

        def visit_For(self, node):
            return False

        def visit_While(self, node):
            return False

        def visit_FunctionDef(self, node):
            return False

    node.visit(Finder())
    return bool(found)


class Builder:
    def __init__(self, kernel_fn, arg_specs, options=DEFAULT_OPTIONS):
        self.kernel_fn = kernel_fn
        self.arg_specs = arg_specs
        self.region: Region | None = None
        self.scope: Scope | None = None
        self.loc = None
        self.runtime_depth = 0        # > 0 inside runtime if/for/while regions
        self.loop_depth = 0           # > 0 inside any loop body (runtime or tl.static_range)
        self.return_depth = 0         # the runtime_depth at which a bare `return` may end a branch (see _stmt_If)
        self.call_sites: list = []
        self.options = options        # compile options: only `debug` (device_assert compiled in) changes the IR

    # -- emitting ------------------------------------------------------------------------------------------
    def emit(self, name, operands, result_type, regions=(), **attrs):
        results = [Value(result_type)] if result_type is not None else []
        op = Op(name, list(operands), results, attrs, self.loc, list(regions))
        self.region.ops.append(op)
        return results[0] if results else None

    def emit_multi(self, name, operands, result_types, regions=(), **attrs):
        op = Op(name, list(operands), [Value(t) for t in result_types], attrs, self.loc, list(regions))
        self.region.ops.append(op)
        return op

    def error(self, cls, message, hint=None):
        return cls(message, self.loc, hint=hint)

    # -- entry ---------------------------------------------------------------------------------------------
    def build(self) -> KernelIR:
        parsed = parsed_function(self.kernel_fn)
        self.scope = Scope(self.kernel_fn, parsed)
        self.loc = parsed.loc(parsed.node)
        body = Region()
        self.region = body
        args = []
        params = list(inspect.signature(self.kernel_fn).parameters)
        tuples = {}                    # tuple parameters: name -> {leaf path: what the kernel sees}
        descriptors = {}               # host tensor descriptors: name -> {path: (block shape, padding)}
        for index, spec in enumerate(self.arg_specs):
            if spec.is_constexpr:
                seen = spec.constexpr
            else:
                value = Value(Type(spec.dtype), name=spec.c_name)
                args.append(Argument(spec.c_name, value, index, spec.divisibility, spec.equal_to_one, spec.is_none))
                # Triton specializes integer arguments equal to 1 into the constant 1, which still behaves as
                # a scalar of the argument's type (`n.to(tl.uint8)` works, `x_int8 + n` is int32).
                seen = (semantic.constant(self, 1, spec.dtype) if spec.equal_to_one else None if spec.is_none
                        else value)
            if spec.path:
                tuples.setdefault(spec.name, {})[spec.path] = seen
                if spec.descriptor:
                    descriptors.setdefault(spec.name, {})[spec.descriptor[0]] = spec.descriptor[1:]
            else:
                self.scope.locals[spec.name] = seen
        for name, leaves in tuples.items():
            self.scope.locals[name] = _rebuild_tuple(leaves, descriptor=self._host_descriptor(descriptors.get(name)))
        assert list(dict.fromkeys(s.name for s in self.arg_specs)) == params[:len(set(s.name for s in self.arg_specs))]
        try:
            self._block(parsed.node.body)
        except _Return:
            pass
        return KernelIR(self.kernel_fn.__name__, args, body, parsed.file, parsed.lines,
                        {s.name: s.constexpr for s in self.arg_specs if s.is_constexpr})

    def _host_descriptor(self, statics):
        """For a parameter holding host tensor descriptors (`statics`: {path: (block shape, padding)}), the maker
        `_rebuild_tuple` calls at each path: the descriptor `tl.make_tensor_descriptor` would build from the
        leaves there (base, shape..., strides...), so its checks and errors are that rule's."""
        if not statics:
            return None

        def make(prefix, leaves):
            if prefix not in statics:
                return None
            block_shape, padding = statics[prefix]
            rank = len(block_shape)
            parts = [leaves[prefix + (i,)] for i in range(1 + 2 * rank)]
            return semantic.RULES["make_tensor_descriptor"](self, parts[0], list(parts[1:1 + rank]),
                                                            list(parts[1 + rank:]), list(block_shape), padding)
        return make

    # -- statements ----------------------------------------------------------------------------------------
    def _block(self, body):
        statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else body
        for i, stmt in enumerate(statements):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.loc = self.scope.parsed.loc(small)
                    self._dispatch_stmt(small)
            elif isinstance(stmt, cst.If) and _contains_return(stmt):
                self.loc = self.scope.parsed.loc(stmt)
                if self._stmt_If(stmt, rest=list(statements[i + 1:])):
                    return
            else:
                self.loc = self.scope.parsed.loc(stmt)
                self._dispatch_stmt(stmt)

    def _dispatch_stmt(self, stmt):
        method = getattr(self, f"_stmt_{type(stmt).__name__}", None)
        if method is None:
            raise self.error(UnsupportedSyntaxError, _unsupported_construct(stmt),
                             hint=_SYNTAX_HINT)
        method(stmt)

    def _stmt_Expr(self, stmt):
        if isinstance(stmt.value, (cst.SimpleString, cst.ConcatenatedString)):
            return  # docstring
        value = self.eval(stmt.value)
        if isinstance(value, Record):
            # As Triton does for tl.advance: a record has no side effects, so dropping one is a mistake.
            raise self.error(CompileTimeError, f"this {value.KIND} is made and then dropped; nothing changes",
                             hint="assign it, e.g. p = tl.advance(p, (0, BLOCK)): tl.advance returns the moved "
                                  "pointer and leaves p as it was")

    def _stmt_Pass(self, stmt):
        pass

    def _stmt_Assign(self, stmt):
        value = self.eval(stmt.value)
        for target in stmt.targets:
            self._assign(target.target, value, typed_numbers=True)

    def _stmt_AnnAssign(self, stmt):
        if stmt.value is None:
            return
        value = self.eval(stmt.value)
        self._assign(stmt.target, value, typed_numbers=not self._is_constexpr_annotation(stmt.annotation))

    def _is_constexpr_annotation(self, annotation) -> bool:
        try:
            return self.eval(annotation.annotation) is constexpr
        except TranspilerError:     # `x: SomeType = ...`: only `tl.constexpr` keeps a number a constexpr
            return False

    def _stmt_AugAssign(self, stmt):
        if not isinstance(stmt.target, cst.Name):
            raise self.error(UnsupportedSyntaxError, "augmented assignment works on plain names only (not Triton's "
                             "language)")
        current = self._lookup(stmt.target.value)
        value = semantic.binary_op(self, _AUGOPS[type(stmt.operator)], current, self.eval(stmt.value))
        self._assign(stmt.target, value, typed_numbers=True)

    def _assign(self, target, value, typed_numbers=False):
        """Bind `target` to `value`. With `typed_numbers` (a plain assignment, not `x: tl.constexpr = ...`) a
        Python number becomes a typed 0-d constant, int32 / fp32 / ... as Triton's `to_tensor` types it: after
        `c = 100`, `x_int8 * c` is int32 and `x_fp16 + c` fp32 in Triton, not the weak literal of `x_int8 * 100`.
        Where a constexpr is needed the name still gives its value (`semantic.assigned_constant`)."""
        if isinstance(target, cst.Name):
            if isinstance(value, constexpr):
                value = value.value
            if typed_numbers and isinstance(value, (bool, int, float)):
                value = semantic.constant(self, value)
            if isinstance(value, Value) and value.name is None:
                value.name = target.value
            if isinstance(value, Record):
                value.name_after(target.value)
            self.scope.locals[target.value] = value
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            if not isinstance(value, (tuple, list)):
                raise self.error(UnsupportedSyntaxError, "cannot unpack a single value into several names")
            if len(value) != len(target.elements):
                raise self.error(ShapeError, f"cannot unpack {len(value)} values into {len(target.elements)} names")
            for element, v in zip(target.elements, value):
                self._assign(element.value, v, typed_numbers)
            return
        raise self.error(UnsupportedSyntaxError, f"assigning to {_describe(target)} is not Triton's language",
                         hint="kernels assign to names; write memory with tl.store")

    def _stmt_Return(self, stmt):
        if self.runtime_depth and (self.runtime_depth != self.return_depth or stmt.value is not None):
            # Triton rejects returns inside loops; it accepts a value returned from both branches of an if.
            where, status = (("a runtime for/while loop", "is not Triton's language") if self.loop_depth else
                             ("a runtime if (with a value)", "is not supported yet"))
            raise self.error(UnsupportedSyntaxError, f"return inside {where} {status}",
                             hint="a bare `return` may end an if branch outside loops; otherwise return once, "
                                  "at the end of the function")
        self.return_value = self.eval(stmt.value) if stmt.value is not None else None
        raise _Return()

    def _stmt_Assert(self, stmt):
        cond = self.eval(stmt.test)
        if semantic.is_const(cond):
            if not cond:
                msg = self.eval(stmt.msg) if stmt.msg is not None else ""
                raise self.error(CompileTimeError, f"assertion failed: {msg}")

    def _stmt_Break(self, stmt):
        raise self.error(UnsupportedSyntaxError, "break is not Triton's language (Triton rejects it too)",
                         hint="use a while loop whose condition carries the exit")

    def _stmt_Continue(self, stmt):
        raise self.error(UnsupportedSyntaxError, "continue is not Triton's language (Triton rejects it too)",
                         hint="guard the rest of the body with an if")

    # -- if ------------------------------------------------------------------------------------------------
    def _stmt_If(self, stmt, rest=None):
        """Build an if statement. With `rest` (the statements after an if that holds a `return`), each branch
        that does not return runs on into `rest`, as an early return means, and the result is True: the
        caller's block ends here. Without `rest` the result is False."""
        cond = semantic.assigned_constant(self.eval(stmt.test))
        if isinstance(cond, constexpr):
            cond = cond.value
        if semantic.is_const(cond):
            if rest is not None:          # a return in the chosen branch must skip `rest` too
                self._chosen_branch_then(stmt, bool(cond), rest)
                return True
            if cond:
                self._block(stmt.body)
            elif stmt.orelse is not None:
                self._else(stmt.orelse)
            return False
        if cond.shape:
            raise self.error(ShapeError, f"an if condition must be a scalar, not a block of shape {list(cond.shape)}",
                             hint="use tl.where for elementwise choices")
        cond = semantic.to_bool(self, cond)
        if rest is not None:
            self._returning_if(stmt, cond, rest)
            return True
        loc = self.loc
        before = dict(self.scope.locals)
        then_region, then_env = self._build_branch(lambda: self._block(stmt.body), before)
        else_region, else_env = self._build_branch(
            (lambda: self._else(stmt.orelse)) if stmt.orelse is not None else (lambda: None), before)
        self.loc = loc
        names = [n for n in then_env if n in else_env and then_env[n] is not else_env[n]
                 and not isinstance(then_env[n], _Unbound)]
        # A record (block pointer) merges by the leaves in which the branches differ.
        slots = Slots(names, then_env)
        slots.carry_differences(else_env, lambda message: self.error(CompileTimeError, message))
        entries = slots.entries()
        merged_then, merged_else = [], []
        for slot, t, e in zip(entries, slots.values(then_env), slots.values(else_env)):
            t, e = self._unify_branch_values(slot.name, t, e, then_region, else_region, slot.const_type)
            merged_then.append(t)
            merged_else.append(e)
        then_region.ops.append(Op("yield", merged_then, [], {}, loc))
        else_region.ops.append(Op("yield", merged_else, [], {}, loc))
        op = Op("if", [cond], [Value(v.type, name=slot.name) for slot, v in zip(entries, merged_then)], {}, loc,
                [then_region, else_region])
        self.region.ops.append(op)
        self.scope.locals = before
        for n in set(then_env) | set(else_env):
            if n not in before and (n not in then_env or n not in else_env):
                self.scope.locals[n] = _Unbound(n)
        self.scope.locals.update(slots.bind(op.results))

    def _returning_if(self, stmt, cond, rest):
        """A runtime if whose branches may end with a bare `return`: each branch runs on into `rest` unless
        it returns, so nothing follows the if and it yields no values."""
        if self.loop_depth:
            raise self.error(UnsupportedSyntaxError, "return inside a loop is not Triton's language",
                             hint="Triton allows `return` only outside for/while loops")
        loc = self.loc
        before = dict(self.scope.locals)

        def branch(build):
            def run():
                saved = self.return_depth
                self.return_depth = self.runtime_depth
                try:
                    build()
                except _Return:
                    pass
                finally:
                    self.return_depth = saved
            return run

        then_region, _ = self._build_branch(branch(lambda: self._chosen_branch_then(stmt, True, rest)), before)
        else_region, _ = self._build_branch(branch(lambda: self._chosen_branch_then(stmt, False, rest)), before)
        self.loc = loc
        if not then_region.ops:          # `if done: return` reads better as `if (!done) { rest }`
            cond = semantic.elementwise(self, "invert", [cond], dtypes.int1)
            then_region, else_region = else_region, then_region
        then_region.ops.append(Op("yield", [], [], {}, loc))
        else_region.ops.append(Op("yield", [], [], {}, loc))
        self.region.ops.append(Op("if", [cond], [], {}, loc, [then_region, else_region]))
        self.scope.locals = before

    def _chosen_branch_then(self, stmt, taken, rest):
        """Build the then (`taken`) or else branch of `stmt` followed by `rest`; a `return` in it skips `rest`."""
        if taken:
            self._block(list(stmt.body.body) + rest)
        elif stmt.orelse is None:
            self._block(rest)
        elif isinstance(stmt.orelse, cst.If):
            self.loc = self.scope.parsed.loc(stmt.orelse)
            self._stmt_If(stmt.orelse, rest)
        else:
            self._block(list(stmt.orelse.body.body) + rest)

    def _else(self, orelse):
        if isinstance(orelse, cst.If):
            self.loc = self.scope.parsed.loc(orelse)
            self._stmt_If(orelse)
        else:
            self._block(orelse.body)

    def _build_branch(self, build, before):
        saved_region = self.region
        region = Region()
        self.region = region
        self.scope.locals = dict(before)
        self.runtime_depth += 1
        try:
            build()
        finally:
            self.runtime_depth -= 1
            self.region = saved_region
        return region, self.scope.locals

    def _unify_branch_values(self, name, t, e, then_region, else_region, const_type=None):
        t_is, e_is = isinstance(t, Value), isinstance(e, Value)
        if not t_is and not e_is:
            const_type = const_type or Type(dtypes.python_scalar_dtype(t))
            t = self._const_in(then_region, t, const_type)
            e = self._const_in(else_region, e, const_type)
        elif not t_is:
            t = self._const_in(then_region, t, e.type)
        elif not e_is:
            e = self._const_in(else_region, e, t.type)
        if t.type != e.type:
            raise self.error(CompileTimeError, f"'{name}' is {t.type} after the if branch but {e.type} after the "
                             "else branch; both branches must give it the same type",
                             hint="convert one side with .to(...)")
        return t, e

    def _const_in(self, region, value, type_):
        if isinstance(value, _Unbound) or not isinstance(value, (bool, int, float)):
            raise self.error(CompileTimeError, f"'{getattr(value, 'name', value)}' is not defined on every path")
        saved = self.region
        self.region = region
        try:
            v = semantic.constant(self, value, type_.dtype)
            if type_.shape:
                v = semantic.splat(self, v, type_.shape)
        finally:
            self.region = saved
        # Constants must come before the yield that uses them; regions are still open here.
        return v

    # -- loops ---------------------------------------------------------------------------------------------
    def _stmt_For(self, stmt):
        self.loop_depth += 1
        try:
            self._for(stmt)
        finally:
            self.loop_depth -= 1

    def _for(self, stmt):
        if stmt.orelse is not None:
            raise self.error(UnsupportedSyntaxError, "for ... else is not Triton's language")
        if not isinstance(stmt.target, cst.Name):
            raise self.error(UnsupportedSyntaxError, "the loop variable must be a single name (unpacking is "
                             "not Triton's language)")
        var = stmt.target.value
        it = stmt.iter
        fn = self.eval(it.func) if isinstance(it, cst.Call) else None
        name = builtin_name(fn) if fn is not None else None
        if fn is builtins.range or name in ("range", "static_range"):
            args, kwargs = self._call_args(it)
            if name is not None:
                args, kwargs = self._range_arguments(fn, name, args, kwargs)
            if name == "static_range":
                return self._static_for(stmt, var, self._range_bounds(args, const=True))
            bounds = self._range_bounds(args, const=False)
            attrs = {}
            if name == "range":
                for k in ("num_stages", "loop_unroll_factor"):
                    if kwargs.get(k) is not None:
                        attrs[k] = semantic.const_value(self, kwargs[k], k)
            return self._runtime_for(stmt, var, bounds, attrs)
        iterable = self.eval(it)
        if isinstance(iterable, (tuple, list)):
            return self._static_for(stmt, var, iterable)
        raise self.error(UnsupportedSyntaxError, "a for loop must iterate over range(...), tl.range(...), "
                         "tl.static_range(...) or a constexpr tuple")

    def _range_arguments(self, fn, name, args, kwargs):
        """`tl.range` / `tl.static_range` arguments bound to their signature, so bounds given by keyword
        (`step=2`, `arg2=n`) count like positional ones: (start, end, step) in range() order, and the options."""
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs).arguments
        except TypeError as e:
            raise self.error(CompileTimeError, f"bad arguments to tl.{name}: {e}") from None
        arg1, arg2, step = bound.pop("arg1"), bound.pop("arg2", None), bound.pop("step", None)
        start, end = (0, arg1) if arg2 is None else (arg1, arg2)
        return [start, end, 1 if step is None else step], bound

    def _range_bounds(self, args, const):
        if not 1 <= len(args) <= 3:
            raise self.error(UnsupportedSyntaxError, "range takes 1 to 3 arguments")
        lo, hi, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if const:
            lo, hi, step = (semantic.const_value(self, x, "tl.static_range's bounds") for x in (lo, hi, step))
            return builtins.range(lo, hi, step)
        for x in (lo, hi, step):
            if isinstance(x, Value) and (x.shape or not x.dtype.is_int()):
                raise self.error(CompileTimeError, f"range bounds must be integer scalars, not {x.type}")
        if semantic.is_const(step) and step == 0:
            raise self.error(CompileTimeError, "range step must not be zero")
        return lo, hi, step

    def _static_for(self, stmt, var, values):
        for v in values:
            self.scope.locals[var] = v
            self._block(stmt.body)

    def _runtime_for(self, stmt, var, bounds, attrs):
        lo, hi, step = bounds
        loc = self.loc
        dts = [x.dtype if isinstance(x, Value) else dtypes.python_scalar_dtype(x) for x in (lo, hi, step)]
        iv_dtype = dtypes.int64 if dtypes.int64 in dts or dtypes.uint64 in dts else dtypes.int32
        lo_v, hi_v, step_v = (semantic.cast(self, semantic.to_value(self, x, iv_dtype if semantic.is_const(x)
                                                                        else None), iv_dtype) for x in bounds)
        attrs["step_sign"] = (1 if step > 0 else -1) if semantic.is_const(step) else 0
        carried = self._carried_names(stmt.body)
        carried = [n for n in carried if n != var]

        def build(region):
            self.scope.locals[var] = region.args[0]
            self._block(stmt.body)

        def make_args(types, names):
            return [Value(Type(iv_dtype), name=var)] + [Value(t, name=n) for n, t in zip(names, types)]

        region, slots, inits, results = self._build_loop(carried, build, make_args, offset=1)
        op = Op("for", [lo_v, hi_v, step_v] + inits, results, attrs, loc, [region])
        self._finish_loop(op, slots, var)

    def _stmt_While(self, stmt):
        self.loop_depth += 1
        try:
            self._while(stmt)
        finally:
            self.loop_depth -= 1

    def _while(self, stmt):
        if stmt.orelse is not None:
            raise self.error(UnsupportedSyntaxError, "while ... else is not Triton's language")
        loc = self.loc
        carried = self._carried_names(stmt.body)

        def build(region):
            self._block(stmt.body)

        def make_args(types, names):
            return [Value(t, name=n) for n, t in zip(names, types)]

        region, slots, inits, results = self._build_loop(carried, build, make_args, offset=0)
        # The condition is evaluated with the carried values at the top of each iteration.
        cond_region = Region(args=make_args([v.type for v in inits], [r.name for r in results]))
        saved_region, saved_locals = self.region, dict(self.scope.locals)
        self.region = cond_region
        self.scope.locals.update(slots.bind(cond_region.args))
        self.runtime_depth += 1
        try:
            self.loc = loc
            cond = self.eval(stmt.test)
            if semantic.is_const(cond):
                raise self.error(UnsupportedSyntaxError, "a while loop needs a runtime condition",
                                 hint="constant conditions would never end or never run")
            if cond.shape:
                raise self.error(ShapeError, "a while condition must be a scalar")
            cond = semantic.to_bool(self, cond)
            cond_region.ops.append(Op("condition", [cond], [], {}, loc))
        finally:
            self.runtime_depth -= 1
            self.region, self.scope.locals = saved_region, saved_locals
        op = Op("while", inits, results, {}, loc, [cond_region, region])
        self._finish_loop(op, slots, None)

    def _build_loop(self, carried, build, make_args, offset):
        """Build a loop body until its carried slots and their types are stable; returns (region, slots,
        inits, results). The carried variables are bound here to the region's arguments from `offset` on;
        `build(region)` binds the loop's own (the induction variable) and builds the body. A record variable
        (a block pointer) is carried by the leaves the body changes (`records.Slots`)."""
        before = dict(self.scope.locals)
        for n in carried:
            if isinstance(before.get(n), _Unbound):
                raise self.error(CompileTimeError, f"'{n}' is not defined on every path before the loop")
        # A variable holding what no loop can carry (None, a dtype, a function) is assigned in the body only
        # under a constexpr condition that is false here (`if USE_BIAS: bias_ptrs += ...`): it stays as it is.
        pinned = {n: before[n] for n in carried if not _carryable(before[n])}
        carried = [n for n in carried if n not in pinned]
        slots = Slots(carried, before)
        types = {}
        loc = self.loc
        for _ in range(_MAX_LOOP_BUILDS):
            entries = slots.entries()
            for slot in entries:
                types.setdefault(slot.key, self._slot_type(slot))
            region = Region(args=make_args([types[slot.key] for slot in entries], [slot.name for slot in entries]))
            saved_region = self.region
            self.region = region
            self.runtime_depth += 1
            try:
                entry = slots.bind(region.args[offset:])
                self.scope.locals.update(entry)
                build(region)
                exit_env = {n: self.scope.locals[n] for n in carried}
                changed_pinned = [n for n, v in pinned.items() if self.scope.locals[n] is not v]
            finally:
                self.runtime_depth -= 1
                self.region = saved_region
                self.scope.locals = dict(before)
            self.loc = loc
            if changed_pinned:
                n = changed_pinned[0]
                raise self.error(CompileTimeError, f"'{n}' is {'None' if pinned[n] is None else _short(pinned[n])} before the loop and "
                                 "changes in it: "
                                 "a loop can only carry blocks, scalars, numbers and block pointers",
                                 hint="give it a value of its final type before the loop")
            for n, v in exit_env.items():
                if isinstance(v, _Unbound):
                    raise self.error(CompileTimeError, f"'{n}' is not defined on every path through the loop")
            if slots.grow(entry, exit_env, lambda message: self.error(CompileTimeError, message)):
                continue
            yielded = slots.values(exit_env)
            stable = True
            for slot, v in zip(entries, yielded):
                t = types[slot.key]
                vt = v.type if isinstance(v, Value) else t
                if vt != t and isinstance(slot.initial, Value):
                    raise self.error(CompileTimeError, f"loop-carried '{slot.name}' is {slot.initial.type} before "
                                     f"the loop but {vt} after an iteration; it must keep its type",
                                     hint="initialize it with the final type, e.g. tl.zeros(..., dtype=...)")
                stable = stable and vt == t
                types[slot.key] = vt
            if stable:
                break
        else:
            raise self.error(CompileTimeError, "could not settle the types of the loop-carried variables")
        # Materialize constexpr yields and inits with the settled types.
        slot_types = [types[slot.key] for slot in entries]
        saved_region = self.region
        self.region = region
        yielded = [y if isinstance(y, Value) else self._typed_const(y, t) for y, t in zip(yielded, slot_types)]
        region.ops.append(Op("yield", yielded, [], {}, loc))
        self.region = saved_region
        inits = [slot.initial if isinstance(slot.initial, Value) else self._typed_const(slot.initial, t)
                 for slot, t in zip(entries, slot_types)]
        results = [Value(t, name=slot.name) for slot, t in zip(entries, slot_types)]
        return region, slots, inits, results

    @staticmethod
    def _slot_type(slot):
        if isinstance(slot.initial, Value):
            return slot.initial.type
        return slot.const_type or Type(dtypes.python_scalar_dtype(slot.initial))

    def _typed_const(self, value, type_):
        if isinstance(value, constexpr):
            value = value.value
        if not isinstance(value, (bool, int, float)):
            raise self.error(CompileTimeError, f"cannot carry {value!r} through a loop")
        v = semantic.constant(self, value, type_.dtype)
        return semantic.splat(self, v, type_.shape) if type_.shape else v

    def _finish_loop(self, op, slots, var):
        self.region.ops.append(op)
        self.scope.locals.update(slots.bind(op.results))
        if var is not None:
            self.scope.locals.pop(var, None)

    def _carried_names(self, body):
        """Names assigned anywhere in `body` that are already defined: the loop-carried variables."""
        assigned = []
        _collect_assigned(body, assigned)
        out = []
        for n in assigned:
            if n in self.scope.locals and n not in out:
                out.append(n)
        return out

    # -- expressions ---------------------------------------------------------------------------------------
    def eval(self, node):
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is None:
            self.loc = self.scope.parsed.loc(node)
            raise self.error(UnsupportedSyntaxError, _unsupported_construct(node),
                             hint=_SYNTAX_HINT)
        return method(node)

    def _lookup(self, name):
        try:
            value = self.scope.lookup(name)
        except KeyError:
            raise self.error(NameResolutionError, f"name '{name}' is not defined",
                             hint="assign it before this line, pass it as a kernel argument, or define it at "
                                  "module level (a number, a tl.constexpr or a @transpile function)") from None
        if isinstance(value, _Unbound):
            raise self.error(NameResolutionError, f"'{name}' is defined on only one side of a runtime if",
                             hint="assign it before the if, or in both branches")
        if isinstance(value, constexpr):
            return value.value
        return value

    def _expr_Name(self, node):
        if node.value == "True":
            return True
        if node.value == "False":
            return False
        if node.value == "None":
            return None
        return self._lookup(node.value)

    def _expr_Integer(self, node):
        return int(node.value, 0)

    def _expr_Float(self, node):
        return float(node.value)

    def _expr_SimpleString(self, node):
        return node.evaluated_value

    def _expr_ConcatenatedString(self, node):
        return node.evaluated_value

    def _expr_FormattedString(self, node):
        """An f-string of compile-time values is formatted now, as Python formats it (Triton does the same, so
        `tl.static_assert(..., f"BLOCK={BLOCK}")` reads its constexprs); a runtime value in it is refused."""
        return "".join(self._formatted_parts(node.parts, node.start))

    def _formatted_parts(self, parts, start):
        out = []
        for part in parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(_fstring_text(part.value, start))
                continue
            value = self.eval(part.expression)
            if isinstance(value, (Value, Record)):
                self.loc = self.scope.parsed.loc(part.expression)
                raise self.error(UnsupportedSyntaxError, "an f-string can hold only compile-time values, not a "
                                 "runtime value (not Triton's language: Triton formats f-strings while compiling)",
                                 hint="print runtime values with tl.device_print(prefix, value)")
            spec = "".join(self._formatted_parts(part.format_spec, start)) if part.format_spec else ""
            label = ""
            if part.equal is not None:   # f"{BLOCK=}"
                label = (cst.Module([]).code_for_node(part.expression) + part.equal.whitespace_before.value
                         + "=" + part.equal.whitespace_after.value)
            if part.conversion is not None:
                value = {"r": repr, "s": str, "a": ascii}[part.conversion](value)
            elif part.equal is not None and not spec:
                value = repr(value)
            out.append(label + format(value, spec))
        return out

    def _expr_Ellipsis(self, node):
        return Ellipsis

    def _expr_Tuple(self, node):
        return tuple(self._elements(node.elements))

    def _expr_List(self, node):
        return tuple(self._elements(node.elements))

    def _elements(self, elements):
        out = []
        for e in elements:
            if isinstance(e, cst.StarredElement):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e.value))
        return out

    def _expr_BinaryOperation(self, node):
        left, right = self.eval(node.left), self.eval(node.right)
        self.loc = self.scope.parsed.loc(node)
        return semantic.binary_op(self, _BINOPS[type(node.operator)], left, right)

    def _expr_UnaryOperation(self, node):
        value = self.eval(node.expression)
        self.loc = self.scope.parsed.loc(node)
        return semantic.unary_op(self, _UNARY[type(node.operator)], value)

    def _expr_BooleanOperation(self, node):
        left = self.eval(node.left)
        is_and = isinstance(node.operator, cst.And)
        if semantic.is_const(left):
            if is_and and not left:
                return left
            if not is_and and left:
                return left
            return self.eval(node.right)
        right = self.eval(node.right)
        if semantic.is_const(right):
            if is_and:
                return semantic.to_bool(self, left) if right else False
            return True if right else semantic.to_bool(self, left)
        return semantic.logical(self, "and" if is_and else "or", left, right)

    def _expr_Comparison(self, node):
        left = self.eval(node.left)
        result = None
        for target in node.comparisons:
            right = self.eval(target.comparator)
            op = type(target.operator)
            self.loc = self.scope.parsed.loc(node)
            if op in _CMPOPS:
                r = semantic.binary_op(self, _CMPOPS[op], left, right)
            elif op in (cst.Is, cst.IsNot, cst.In, cst.NotIn):
                # `B is not None` on a runtime value is known (True) while compiling, as in Triton.
                identity_with_none = op in (cst.Is, cst.IsNot) and (left is None or right is None)
                if not (semantic.is_const(left) and semantic.is_const(right)) and not identity_with_none:
                    raise self.error(UnsupportedSyntaxError, f"'{_cmp_text(op)}' works on constexprs only "
                                     "(on runtime values it is not Triton's language)")
                r = {cst.Is: lambda a, b: a is b, cst.IsNot: lambda a, b: a is not b,
                     cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b}[op](left, right)
            else:
                raise self.error(UnsupportedSyntaxError, f"comparison {_describe(target.operator)}")
            result = r if result is None else semantic.logical(self, "and", result, r) \
                if not (semantic.is_const(result) and semantic.is_const(r)) else (result and r)
            left = right
        return result

    def _expr_IfExp(self, node):
        cond = semantic.assigned_constant(self.eval(node.test))
        if isinstance(cond, constexpr):
            cond = cond.value
        if semantic.is_const(cond):
            return self.eval(node.body) if cond else self.eval(node.orelse)
        self.loc = self.scope.parsed.loc(node)
        if cond.shape:
            # Triton lowers a runtime conditional expression to an scf.if, which takes a scalar condition only.
            raise self.error(ShapeError, f"the condition of a conditional expression must be a scalar, not a block "
                             f"of shape {list(cond.shape)} (not Triton's language)",
                             hint="use tl.where(cond, a, b) for elementwise choices")
        cond = semantic.to_bool(self, cond)
        before = dict(self.scope.locals)
        results = []
        then_region, _ = self._build_branch(lambda: results.append(self.eval(node.body)), before)
        else_region, _ = self._build_branch(lambda: results.append(self.eval(node.orelse)), before)
        self.scope.locals = before
        self.loc = self.scope.parsed.loc(node)
        guarded = any(op.name in GUARDED_OPS for r in (then_region, else_region) for op in walk(r))
        t, e = results
        if isinstance(t, Value) and isinstance(e, Value) and t.type != e.type:
            # Triton asserts one type for both branches; a select would promote, the interpreter keeps the
            # taken branch's type.
            raise self.error(CompileTimeError, f"the branches of a conditional expression on a runtime "
                             f"condition are {t.type} and {e.type}; both must have the same type (Triton's rule)",
                             hint="convert one side with .to(...)")
        if not guarded:
            # Pure branches: computing both and selecting gives the taken branch's value, without a branch.
            self.region.ops.extend(then_region.ops + else_region.ops)
            return semantic.RULES["where"](self, cond, *results)
        return self._conditional_region(cond, then_region, else_region, *results)

    def _conditional_region(self, cond, then_region, else_region, then_value, else_value):
        """`a if cond else b` whose branches load, store or have other effects: an `if` yielding the value, so
        only the taken branch runs, as Triton's scf.if does."""
        for v in (then_value, else_value):
            if not isinstance(v, (Value, bool, int, float)):
                raise self.error(UnsupportedSyntaxError, f"a conditional expression on a runtime condition giving "
                                 f"{_short(v)} is not supported yet", hint="write it as an if statement")
        t, e = self._unify_branch_values("the conditional expression", then_value, else_value,
                                         then_region, else_region)
        then_region.ops.append(Op("yield", [t], [], {}, self.loc))
        else_region.ops.append(Op("yield", [e], [], {}, self.loc))
        op = Op("if", [cond], [Value(t.type, name="sel")], {}, self.loc, [then_region, else_region])
        self.region.ops.append(op)
        return op.results[0]

    def _expr_Attribute(self, node):
        base = self.eval(node.value)
        attr = node.attr.value
        self.loc = self.scope.parsed.loc(node)
        if isinstance(base, Value):
            if attr == "dtype":
                return base.dtype
            if attr == "shape":
                return tuple(base.shape)
            if attr == "type":
                return dtypes.value_type(base.dtype, base.shape)
            if attr in TENSOR_METHODS:
                return BoundMethod(BUILTINS[TENSOR_METHODS[attr]], base)
            if attr in TENSOR_PROPERTIES:
                return self._call_builtin(BUILTINS[TENSOR_PROPERTIES[attr]], [base], {})
            raise self.error(NameResolutionError, f"a block has no attribute '{attr}'")
        if attr in TENSOR_METHODS and isinstance(base, (int, float)) and not isinstance(base, bool):
            # `SCALE.to(tl.float32)` on a constexpr (or an argument specialized to 1): the number as the scalar
            # Triton types it (`tl.core.to_tensor`), then the block method.
            return BoundMethod(BUILTINS[TENSOR_METHODS[attr]], semantic.to_value(self, base))
        if isinstance(base, Record):
            if attr in base.ATTRIBUTES:   # `p.dtype`, `p.type` of a block pointer, as Triton types it
                return getattr(base, attr)
            if attr in base.METHODS:      # a tuple of builtin names, or {attribute: builtin name}
                return BoundMethod(BUILTINS[base.METHODS[attr] if isinstance(base.METHODS, dict) else attr], base)
            if attr in base.NOT_YET:
                raise self.error(UnsupportedSyntaxError, f"{base.KIND} method '{attr}' is not supported yet",
                                 hint=base.HINT)
            raise self.error(NameResolutionError, f"a {base.KIND} has no attribute '{attr}'", hint=base.HINT)
        try:
            return getattr(base, attr)
        except AttributeError:
            message, hint = missing_attribute(base, attr, _short(base))
            raise self.error(NameResolutionError, message, hint=hint) from None

    def _expr_Subscript(self, node):
        base = self.eval(node.value)
        self.loc = self.scope.parsed.loc(node)
        items = []
        for element in node.slice:
            s = element.slice
            if isinstance(s, cst.Index):
                items.append(self.eval(s.value))
            elif isinstance(s, cst.Slice):
                if s.lower is None and s.upper is None and s.step is None:
                    items.append(slice(None))
                else:
                    if isinstance(base, Value):
                        raise self.error(UnsupportedSyntaxError, "unsupported tensor index (a slice with bounds): "
                                           "blocks can be indexed only with None and ':' (other indices are not "
                                           "Triton's language)")
                    items.append(slice(*(self.eval(p) if p is not None else None for p in (s.lower, s.upper, s.step))))
        if not isinstance(base, Value):
            key = items[0] if len(items) == 1 else tuple(items)
            try:
                return base[key]
            except Exception as e:
                raise self.error(CompileTimeError, f"indexing failed: {e}") from None
        return self._index_block(base, items)

    def _index_block(self, value, items):
        dim = 0
        for item in items:
            if item is None:
                value = semantic.expand_dims(self, value, dim)
                dim += 1
            elif isinstance(item, slice) and item == slice(None):
                dim += 1
            elif item is Ellipsis:
                dim = len(value.shape) - (len(items) - items.index(Ellipsis) - 1 - items.count(None))
            else:
                raise self.error(UnsupportedSyntaxError, f"unsupported tensor index {item!r}: blocks can be indexed "
                                 "only with None, ':' and '...' (other indices are not Triton's language)")
        # A ':' past the block's rank keeps nothing and changes nothing, as in Triton (`Z[None, None, :]` on a
        # scalar pointer is a [1, 1] block); a None past the rank is refused by expand_dims.
        return value

    # -- calls ---------------------------------------------------------------------------------------------
    def _call_args(self, node):
        args, kwargs = [], {}
        for a in node.args:
            if a.star == "*":
                args.extend(self.eval(a.value))
            elif a.star == "**":
                kwargs.update(self.eval(a.value))
            elif a.keyword is not None:
                kwargs[a.keyword.value] = self.eval(a.value)
            else:
                args.append(self.eval(a.value))
        return args, kwargs

    def _expr_Call(self, node):
        fn = self.eval(node.func)
        args, kwargs = self._call_args(node)
        self.loc = self.scope.parsed.loc(node)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args, kwargs, node=None):
        if isinstance(fn, BoundMethod):
            return self._call_builtin(fn.builtin, [fn.self_value] + list(args), kwargs)
        if builtin_name(fn):
            return self._call_builtin(fn, args, kwargs)
        if is_kernel_object(fn) or (inspect.isfunction(fn) and getattr(fn, "__transpiler_inline__", False)):
            return self.inline_call(kernel_function(fn), args, kwargs)
        if fn is constexpr:
            return args[0]
        if inspect.ismethod(fn) and isinstance(fn.__self__, (dtypes.dtype, dtypes.block_type)):
            # `x.dtype.is_int()`, `P.dtype.element_ty.is_fp16()`: a question about a type, answered now.
            return fn(*args, **kwargs)
        if fn is builtins.print:
            # As in Triton, print(...) is tl.device_print(...): a leading string is the prefix.
            if args and isinstance(args[0], str):
                return semantic.RULES["device_print"](self, args[0], *args[1:])
            return semantic.RULES["device_print"](self, "", *args)
        if fn in _RUNTIME_BUILTINS and any(isinstance(a, Value) for a in args) and not kwargs:
            # As in Triton, min/max/abs of runtime values mean tl.minimum/tl.maximum/tl.abs.
            rule = semantic.RULES[_RUNTIME_BUILTINS[fn]]
            if fn is builtins.abs:
                return rule(self, *args)
            if len(args) < 2:
                raise self.error(UnsupportedSyntaxError, f"{fn.__name__}() of runtime values needs two or more "
                                 "arguments", hint="use tl.min / tl.max to reduce a block")
            result = args[0]
            for other in args[1:]:
                result = rule(self, result, other)
            return result
        if fn in (dtypes.pointer_type, dtypes.block_type) and not any(isinstance(a, Value) for a in args):
            # Types made while compiling (`tl.pointer_type(tl.float16)` for a pointer cast), as in Triton.
            return fn(*args, **kwargs)
        if fn is builtins.isinstance:
            # A question about what a value is, answered now (`isinstance(x, tl.tensor)`, `isinstance(N, int)`).
            return isinstance(*args)
        if fn in _PY_CONST_BUILTINS:
            if any(isinstance(a, Value) for a in args):
                raise self.error(UnsupportedSyntaxError, f"{fn.__name__}() works on constexprs only here",
                                 hint="use tl.minimum/tl.maximum/tl.abs on blocks")
            return _PY_CONST_BUILTINS[fn](*args, **kwargs)
        if fn is builtins.range:
            raise self.error(UnsupportedSyntaxError, "range() can only be used as a for-loop iterable")
        if isinstance(fn, dtypes.dtype):
            raise self.error(UnsupportedSyntaxError, f"call x.to({fn!r}) to convert a value")
        raise self.error(NameResolutionError,
                         f"cannot call {_short(fn)}: it is neither a tl builtin nor a @transpile function",
                         hint="decorate helpers with @transpiler.transpile (or @transpiler.jit)")

    def _call_builtin(self, fn, args, kwargs):
        name = builtin_name(fn)
        try:
            bound = fn.__signature__.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(CompileTimeError, f"bad arguments to tl.{name}: {e}") from None
        rule = semantic.RULES.get(name)
        first = bound.args[0] if bound.args else None
        if isinstance(first, Record):
            # A builtin applied to a record (tl.load of a block pointer) has the record's own rule.
            rule = first.RULES.get(name)
            if rule is None:
                raise self.error(DTypeError, f"tl.{name} does not take a {first.KIND}", hint=first.HINT)
        if rule is None:
            raise self.error(UnsupportedSyntaxError, f"tl.{name} is not supported yet")
        return rule(self, *bound.args, **bound.kwargs)

    def inline_call(self, fn, args, kwargs):
        """Inline a @transpile helper: build its body in a fresh scope, in the current region."""
        call_loc = self.loc
        sig = inspect.signature(fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(CompileTimeError, f"bad arguments to {fn.__name__}: {e}") from None
        bound.apply_defaults()
        parsed = parsed_function(fn)
        saved_scope, saved_return = self.scope, getattr(self, "return_value", None)
        self.scope = Scope(fn, parsed)
        for name, value in bound.arguments.items():
            param = sig.parameters[name]
            if param.kind is param.VAR_POSITIONAL:
                value = tuple(value)
            # A helper's `tl.constexpr` annotation constrains nothing: Triton hands a runtime value to such a
            # parameter as it is (`offs_m: tl.constexpr` in its fused-attention tutorial receives a block).
            self.scope.locals[name] = value.value if isinstance(value, constexpr) else value
        self.return_value = None
        depth, loops, return_depth = self.runtime_depth, self.loop_depth, self.return_depth
        self.runtime_depth = self.loop_depth = self.return_depth = 0
        try:
            self._block(parsed.node.body)
        except _Return:
            pass
        except TranspilerError as e:
            raise e.with_context(call_site=call_loc)
        finally:
            self.runtime_depth, self.loop_depth, self.return_depth = depth, loops, return_depth
            result = self.return_value
            self.scope, self.return_value = saved_scope, saved_return
            self.loc = call_loc
        return result

    def inline_into_region(self, fn, region, what, cast_to):
        """Build `fn(*region.args)` into `region` and end it with a yield of the results cast to `cast_to`."""
        saved = self.region
        self.region = region
        self.runtime_depth += 1
        try:
            if not (is_kernel_object(fn) or inspect.isfunction(fn)):
                raise self.error(NameResolutionError, f"{what} must be a @transpile function")
            out = self.inline_call(kernel_function(fn), list(region.args), {})
            results = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(results) != len(cast_to):
                raise self.error(ShapeError, f"{what} returned {len(results)} values, expected {len(cast_to)}")
            results = [semantic.cast(self, semantic.to_value(self, r, dt), dt) for r, dt in zip(results, cast_to)]
            for r in results:
                if r.shape:
                    raise self.error(ShapeError, f"{what} must return scalars")
            region.ops.append(Op("yield", results, [], {}, self.loc))
        finally:
            self.runtime_depth -= 1
            self.region = saved
        return results


def _rebuild_tuple(leaves: dict, prefix=(), descriptor=None):
    """The nested tuple whose leaf at each index path is `leaves[path]` (a tuple argument, flattened by the
    runtime into one parameter per leaf); where `descriptor(prefix, leaves)` makes one, a host tensor
    descriptor stands at that path instead."""
    if prefix in leaves:
        return leaves[prefix]
    made = descriptor(prefix, leaves) if descriptor else None
    if made is not None:
        return made
    items, i = [], 0
    while any(p[:len(prefix) + 1] == prefix + (i,) for p in leaves):
        items.append(_rebuild_tuple(leaves, prefix + (i,), descriptor))
        i += 1
    return tuple(items)


def _fstring_text(text, start):
    """The characters a literal part of an f-string stands for: braces undoubled, escapes read as Python reads
    them in a string of the same prefix (`rf"..."` keeps backslashes)."""
    prefix = start.rstrip("'\"").replace("f", "").replace("F", "")
    quote = start[len(start.rstrip("'\"")):]
    return ast.literal_eval(prefix + quote + text.replace("{{", "{").replace("}}", "}") + quote)


def _collect_assigned(node, out):
    class Visitor(cst.CSTVisitor):
        def visit_AssignTarget(self, n):
            _names_in_target(n.target, out)

        def visit_AnnAssign(self, n):
            _names_in_target(n.target, out)

        def visit_AugAssign(self, n):
            _names_in_target(n.target, out)

        def visit_For(self, n):
            _names_in_target(n.target, out)

    node.visit(Visitor())


def _names_in_target(target, out):
    if isinstance(target, cst.Name):
        out.append(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for e in target.elements:
            _names_in_target(e.value, out)


_SYNTAX_HINT = ("kernels use assignments, if/for/while, tl builtins and @transpile helpers; "
                "do other work on the host, before the launch")


def _describe(node) -> str:
    names = {
        "While": "while", "With": "a with statement", "Try": "try/except", "Raise": "raise", "Lambda": "lambda",
        "ListComp": "a list comprehension", "GeneratorExp": "a generator expression", "DictComp": "a dict "
        "comprehension", "SetComp": "a set comprehension", "Dict": "a dict literal", "Set": "a set literal",
        "FunctionDef": "a nested function definition", "ClassDef": "a class definition", "Global": "global",
        "Nonlocal": "nonlocal", "Del": "del", "Import": "import", "ImportFrom": "import", "Await": "await",
        "Yield": "yield", "FormattedString": "an f-string", "NamedExpr": "the walrus operator :=",
        "Imaginary": "a complex number", "Match": "match", "Subscript": "a subscript",
        "Attribute": "an attribute",
    }
    kind = type(node).__name__
    return names.get(kind, f"'{kind}'")


# Constructs Triton's code generator also rejects; any other construct we refuse is one we do not support yet.
_NOT_TRITON = {"Lambda", "Try", "TryStar", "Raise", "ClassDef", "FunctionDef", "Global", "Nonlocal", "Del", "Import",
               "ImportFrom", "Await", "Yield", "YieldFrom", "Dict", "Set", "DictComp", "SetComp", "GeneratorExp",
               "Match", "NamedExpr", "Imaginary"}


def _unsupported_construct(node) -> str:
    if type(node).__name__ in _NOT_TRITON:
        return f"{_describe(node)} is not Triton's language (Triton's compiler rejects it too)"
    return f"{_describe(node)} is not supported yet in kernels"


def _cmp_text(op):
    return {cst.Is: "is", cst.IsNot: "is not", cst.In: "in", cst.NotIn: "not in"}[op]


def _carryable(value) -> bool:
    """Whether a loop can carry `value`: an IR value, a record (block pointer) or a number."""
    if isinstance(value, constexpr):
        value = value.value
    return isinstance(value, (Value, Record, bool, int, float)) or isinstance(value, _Unbound)


def _short(obj):
    name = getattr(obj, "__name__", None)
    return f"'{name}'" if name else f"a {type(obj).__name__}"


def build_kernel_ir(fn, arg_specs, options=DEFAULT_OPTIONS) -> KernelIR:
    """Parse (cached) and build the IR of `fn` for one specialization: from the source and the specialization
    alone (and `options.debug`, which compiles device asserts in); the launch options reach analysis instead."""
    builder = Builder(fn, arg_specs, options)
    try:
        kernel = builder.build()
    except TranspilerError as e:
        raise e.with_context(kernel=fn.__name__)
    remove_dead_code(kernel)
    return kernel
