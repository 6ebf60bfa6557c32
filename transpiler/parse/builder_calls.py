"""The builder's calls: tl builtins (bound to their signature, then their typing rule), inlined @transpile
helpers, and the Python builtins a kernel may call (on constexprs, or min/max/abs/print on runtime values).
"""
from __future__ import annotations

import builtins
import inspect

from .. import dtypes
from ..errors import (NOT_TRITON, NOT_YET, CompileTimeError, NameResolutionError, ShapeError, TranspilerError,
                      UnsupportedSyntaxError)
from ..language.core import builtin_name, constexpr, is_constexpr_function
from . import semantic
from .ir import Op, OpKind, Value
from .records import Record, record_rule
from .semantic_reduce import combine_result
from .scope import BoundMethod, Returned, Scope
from .source import parsed_function
from .syntax_refusals import short

# Python builtins a kernel may call on compile-time values.
_PY_CONST_BUILTINS = {builtins.min: min, builtins.max: max, builtins.len: len, builtins.int: int,
                      builtins.float: float, builtins.bool: bool, builtins.isinstance: isinstance,
                      builtins.tuple: tuple, builtins.list: tuple, builtins.getattr: getattr, builtins.abs: abs}
_RUNTIME_BUILTINS = {builtins.min: "minimum", builtins.max: "maximum", builtins.abs: "abs"}


def is_kernel_object(obj):
    return getattr(obj, "__transpiler_kernel__", False)


def kernel_function(obj):
    return obj.fn if is_kernel_object(obj) else obj


class CallBuilder:
    """Calls, for `Builder` (which supplies the state, `eval` and `_block`)."""

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
        if isinstance(fn, constexpr) and callable(fn.value):
            fn = fn.value        # `@tl.constexpr` on a Python helper: Triton unwraps the callee first
        if isinstance(fn, BoundMethod):
            return self._call_builtin(fn.builtin, [fn.self_value] + list(args), kwargs)
        if builtin_name(fn):
            return self._call_builtin(fn, args, kwargs)
        if is_kernel_object(fn) or (inspect.isfunction(fn) and getattr(fn, "__transpiler_inline__", False)):
            return self.inline_call(kernel_function(fn), args, kwargs)
        if fn is constexpr:
            return args[0]
        if is_constexpr_function(fn):
            return self._call_constexpr_function(fn, args, kwargs)
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
                raise self.error(UnsupportedSyntaxError, f"{fn.__name__}() of one runtime value (it needs two or "
                                 "more arguments)", hint="use tl.min / tl.max to reduce a block", refusal=NOT_TRITON)
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
                raise self.error(UnsupportedSyntaxError, f"{fn.__name__}() of runtime values (Python's builtins run "
                                 "while compiling, on constexprs)", hint="use tl.minimum/tl.maximum/tl.abs on blocks",
                                 refusal=NOT_TRITON)
            return _PY_CONST_BUILTINS[fn](*args, **kwargs)
        if fn is builtins.range:
            raise self.error(UnsupportedSyntaxError, "range() outside a for loop's iterable", refusal=NOT_TRITON)
        if isinstance(fn, dtypes.dtype):
            raise self.error(UnsupportedSyntaxError, f"calling the dtype {fn!r}", hint=f"call x.to({fn!r}) to convert "
                             "a value", refusal=NOT_TRITON)
        if callable(fn) and not self._has_runtime_values(args, kwargs):
            # Triton's code generator calls any other Python function there and then, on compile-time
            # arguments (FlagGems' `@tl.constexpr def get_int_t(num_bits, signed)`, `math.log2(BLOCK)`).
            return self._call_at_compile_time(fn, args, kwargs)
        raise self.error(NameResolutionError,
                         f"cannot call {short(fn)}: it is neither a tl builtin nor a @transpile function",
                         hint="decorate helpers with @transpiler.transpile (or @transpiler.jit)")

    @staticmethod
    def _has_runtime_values(args, kwargs) -> bool:
        return any(isinstance(a, (Value, Record)) for a in [*args, *kwargs.values()])

    def _call_constexpr_function(self, fn, args, kwargs):
        """A `constexpr_function` runs now, on compile-time values (Triton's rule: its arguments are unwrapped
        constexprs, so a runtime value there is an error in Triton as well)."""
        if self._has_runtime_values(args, kwargs):
            raise self.error(CompileTimeError, f"{short(fn)} runs while the kernel is compiled: its arguments "
                             "must be compile-time values", hint="pass constexprs, or use tl.cdiv on runtime values")
        return self._call_at_compile_time(fn, args, kwargs)

    def _call_at_compile_time(self, fn, args, kwargs):
        """`fn` called now on the compile-time values `args`; what it raises is located at the call."""
        plain = lambda v: v.value if isinstance(v, constexpr) else v      # noqa: E731
        try:
            return fn(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})
        except TranspilerError:
            raise
        except Exception as e:     # noqa: BLE001  the function's own failure, reported where it was called
            raise self.error(CompileTimeError, f"{short(fn)}(...) ran while the kernel was compiled and raised "
                             f"{type(e).__name__}: {e}", hint="a Python function called in a kernel runs at compile "
                             "time on constexprs; decorate it with @transpiler.jit if it works on blocks") from None

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
            rule = record_rule(self, name, first)
        if rule is None:
            raise self.error(UnsupportedSyntaxError, f"tl.{name}", refusal=NOT_YET)
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
        except Returned:
            pass
        except TranspilerError as e:
            raise e.with_context(call_site=call_loc)
        finally:
            self.runtime_depth, self.loop_depth, self.return_depth = depth, loops, return_depth
            result = self.return_value
            self.scope, self.return_value = saved_scope, saved_return
            self.loc = call_loc
        return self._returned_numbers_typed(result)

    def _returned_numbers_typed(self, result):
        """A helper's returned Python number (or constexpr) as a typed 0-d constant, tuple items one by one: Triton's
        code generator decays them on return (`return 3` gives an int32 scalar, so `x_int8 * three()` is int32,
        not the int8 of `x_int8 * 3`). Where a constexpr is needed the constant still gives its value
        (`semantic.assigned_constant`), as for an assigned number."""
        if isinstance(result, tuple):
            return tuple(self._returned_numbers_typed(r) for r in result)
        if isinstance(result, constexpr):
            result = result.value
        if isinstance(result, (bool, int, float)):
            return semantic.constant(self, result)
        return result

    def inline_into_region(self, fn, region, what, cast_to):
        """Build `fn(*region.args)` into `region` and end it with a yield of the results, of the types `cast_to`
        (None: any number of results, each of its own type)."""
        saved = self.region
        self.region = region
        self.runtime_depth += 1
        try:
            if not (is_kernel_object(fn) or inspect.isfunction(fn)):
                raise self.error(NameResolutionError, f"{what} must be a @transpile function")
            out = self.inline_call(kernel_function(fn), list(region.args), {})
            results = list(out) if isinstance(out, (tuple, list)) else [out]
            if cast_to is None:
                if not results or any(r is None for r in results):
                    raise self.error(ShapeError, f"{what} must return one or more values")
                results = [semantic.to_value(self, r) for r in results]
            elif len(results) != len(cast_to):
                raise self.error(ShapeError, f"{what} returned {len(results)} values, expected {len(cast_to)}")
            else:
                results = [combine_result(self, r, dt, what) for r, dt in zip(results, cast_to)]
            for r in results:
                if r.shape:
                    raise self.error(ShapeError, f"{what} must return scalars")
            region.ops.append(Op(OpKind.YIELD, results, [], {}, self.loc))
        finally:
            self.runtime_depth -= 1
            self.region = saved
        return results
