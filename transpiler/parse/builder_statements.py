"""The builder's statements: assignments, asserts, returns and `if`.

A constexpr condition builds only the branch it takes; a runtime `if` becomes an op with two regions whose
results are the variables the branches change (unified to one type, constants materialized in each region).
An `if` holding a `return` runs each branch on into the statements after it (`_returning_if`); values returned
on every path are the if's results.
"""
from __future__ import annotations

import libcst as cst

from .. import dtypes
from ..errors import NOT_TRITON, NOT_YET, CompileTimeError, ShapeError, TranspilerError, UnsupportedSyntaxError
from ..language.core import constexpr
from . import semantic
from .ir import Op, OpKind, Region, Type, Value
from .records import Record, Slots
from .returned_values import ReturnedValues
from .scope import Returned, Unbound
from .statement_walk import statements
from .syntax_refusals import LOOP_EXITS, describe

_AUGOPS = {
    cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul", cst.DivideAssign: "truediv",
    cst.FloorDivideAssign: "floordiv", cst.ModuloAssign: "mod", cst.PowerAssign: "pow",
    cst.LeftShiftAssign: "lshift", cst.RightShiftAssign: "rshift", cst.BitAndAssign: "and_",
    cst.BitOrAssign: "or_", cst.BitXorAssign: "xor", cst.MatrixMultiplyAssign: "matmul",
}
RETURNED_VALUE = "the returned value"     # the name `_unify_branch_values` gets for what an if returns


class StatementBuilder:
    """Statements of the kernel's body, for `Builder` (which supplies the state, `eval` and `_block`)."""

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
            raise self.error(UnsupportedSyntaxError, f"augmented assignment to {describe(stmt.target)} (it works on "
                             "plain names only)", refusal=NOT_TRITON)
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
                raise self.error(ShapeError, "cannot unpack a single value into several names")
            if len(value) != len(target.elements):
                raise self.error(ShapeError, f"cannot unpack {len(value)} values into {len(target.elements)} names")
            for element, v in zip(target.elements, value):
                self._assign(element.value, v, typed_numbers)
            return
        raise self.error(UnsupportedSyntaxError, f"assigning to {describe(target)}",
                         hint="kernels assign to names; write memory with tl.store", refusal=NOT_TRITON)

    def _stmt_Return(self, stmt):
        if self.runtime_depth and self.runtime_depth != self.return_depth:
            # Triton rejects returns inside loops; in an if, `_returning_if` set return_depth for its branches.
            where, kind = (("a runtime for/while loop", NOT_TRITON) if self.loop_depth else
                           ("this runtime region", NOT_YET))
            raise self.error(UnsupportedSyntaxError, f"return inside {where}",
                             hint="`return` may end an if branch outside loops; otherwise return once, "
                                  "at the end of the function", refusal=kind)
        self.return_value = self.eval(stmt.value) if stmt.value is not None else None
        raise Returned()

    def _stmt_Assert(self, stmt):
        cond = self.eval(stmt.test)
        if semantic.is_const(cond):
            if not cond:
                msg = self.eval(stmt.msg) if stmt.msg is not None else ""
                raise self.error(CompileTimeError, f"assertion failed: {msg}")

    def _stmt_Break(self, stmt):
        self._refuse_loop_exit("Break")

    def _stmt_Continue(self, stmt):
        self._refuse_loop_exit("Continue")

    def _refuse_loop_exit(self, kind):
        words, hint = LOOP_EXITS[kind]
        raise self.error(UnsupportedSyntaxError, words, hint=hint, refusal=NOT_TRITON)

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
                 and not isinstance(then_env[n], Unbound)]
        # A record (block pointer) merges by the leaves in which the branches differ.
        slots = Slots(names, then_env)
        slots.carry_differences(else_env, lambda message: self.error(CompileTimeError, message))
        entries = slots.entries()
        merged_then, merged_else = [], []
        for slot, t, e in zip(entries, slots.values(then_env), slots.values(else_env)):
            t, e = self._unify_branch_values(slot.name, t, e, then_region, else_region, slot.const_type)
            merged_then.append(t)
            merged_else.append(e)
        then_region.ops.append(Op(OpKind.YIELD, merged_then, [], {}, loc))
        else_region.ops.append(Op(OpKind.YIELD, merged_else, [], {}, loc))
        op = Op(OpKind.IF, [cond], [Value(v.type, name=slot.name) for slot, v in zip(entries, merged_then)], {}, loc,
                [then_region, else_region])
        self.region.ops.append(op)
        self.scope.locals = before
        for n in set(then_env) | set(else_env):
            if n not in before and (n not in then_env or n not in else_env):
                self.scope.locals[n] = Unbound(n)
        self.scope.locals.update(slots.bind(op.results))

    def _returning_if(self, stmt, cond, rest):
        """A runtime if whose branches may end with a `return`: each branch runs on into `rest` unless it
        returns, so nothing follows the if. Bare returns (or none) yield no values; a value returned on every
        path (a helper's `if a <= b: return a` / `return b`) is yielded by the if and becomes the function's
        return value, as Triton returns from either branch."""
        if self.loop_depth:
            # Point at the return itself, not at the if holding it.
            self.loc = self.scope.parsed.loc(next(
                node for node in statements(stmt, stop=(cst.For, cst.While, cst.FunctionDef))
                if isinstance(node, cst.Return)))
            raise self.error(UnsupportedSyntaxError, "return inside a loop",
                             hint="Triton allows `return` only outside for/while loops", refusal=NOT_TRITON)
        loc = self.loc
        before = dict(self.scope.locals)
        returned = []

        def branch(build):
            def run():
                saved = self.return_depth
                self.return_depth = self.runtime_depth
                self.return_value = None
                try:
                    build()
                except Returned:
                    pass
                finally:
                    self.return_depth = saved
                    returned.append(self.return_value)
            return run

        then_region, _ = self._build_branch(branch(lambda: self._chosen_branch_then(stmt, True, rest)), before)
        else_region, _ = self._build_branch(branch(lambda: self._chosen_branch_then(stmt, False, rest)), before)
        self.loc = loc
        then_values, else_values = self._returned_leaves(returned)
        results = []
        if then_values is None and not then_region.ops:  # `if done: return` reads better as `if (!done) {rest}`
            cond = semantic.elementwise(self, "invert", [cond], dtypes.int1)
            then_region, else_region = else_region, then_region
        elif then_values is not None:
            for i, (t, e) in enumerate(zip(then_values.leaves, else_values.leaves)):
                t, e = self._unify_branch_values(RETURNED_VALUE, t, e, then_region, else_region)
                then_values.leaves[i], else_values.leaves[i] = t, e
            results = [Value(t.type) for t in then_values.leaves]
        then_region.ops.append(Op(OpKind.YIELD, then_values.leaves if then_values else [], [], {}, loc))
        else_region.ops.append(Op(OpKind.YIELD, else_values.leaves if else_values else [], [], {}, loc))
        self.region.ops.append(Op(OpKind.IF, [cond], results, {}, loc, [then_region, else_region]))
        self.scope.locals = before
        self.return_value = then_values.rebuild(results) if then_values else None

    def _returned_leaves(self, returned):
        """The two branches' returned values as `_Returned` (runtime leaves to yield, the rest kept), or
        (None, None) when neither returns a value."""
        if all(r is None for r in returned):
            return None, None
        if any(r is None for r in returned):
            raise self.error(CompileTimeError, "a value is returned on one path of this if but not on the other",
                             hint="return a value on every path (Triton requires the same on both)")
        then_values, else_values = (ReturnedValues(r) for r in returned)
        if then_values.structure != else_values.structure:
            raise self.error(CompileTimeError, "the branches of this if return values of different structures "
                             f"({then_values.structure} and {else_values.structure})")
        for t, e in zip(then_values.leaves, else_values.leaves):
            if isinstance(t, Record) or isinstance(e, Record):
                raise self.error(UnsupportedSyntaxError, "returning a block pointer from a runtime if",
                                 hint="return it once, after the if", refusal=NOT_YET)
        return then_values, else_values

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
            # Triton's words (its tests match them), then ours
            message = (f"Inconsistent return types: {t.type} (if branch) and {e.type} (else branch); both "
                       "branches must return the same type" if name is RETURNED_VALUE else
                       f"Mismatched type for {name} between the if branch ({t.type}) and the else branch "
                       f"({e.type}); both branches must give it the same type")
            raise self.error(CompileTimeError, message, hint="convert one side with .to(...)")
        return t, e

    def _const_in(self, region, value, type_):
        if isinstance(value, Unbound) or not isinstance(value, (bool, int, float)):
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
