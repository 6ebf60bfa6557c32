"""The builder's loops: `for` over range / tl.range / tl.static_range / a constexpr tuple, and `while`.

A static loop is unrolled while building. A runtime loop's body is built until the variables it carries and
their types settle (`_build_loop`); they become the region's arguments, its yield and the op's results.
"""
from __future__ import annotations

import builtins
import inspect

import libcst as cst

from .. import dtypes
from ..errors import NOT_TRITON, CompileTimeError, ShapeError, UnsupportedSyntaxError
from ..language.core import builtin_name, constexpr
from . import semantic
from .ir import Op, OpKind, Region, Type, Value
from .records import Record, Slots
from .scope import Unbound
from .statement_walk import statements
from .syntax_refusals import short

_NOT_BOUND = object()      # no binding: never the object a name is bound to

# Builds of a loop body before giving up: carried types settle in a few, and each record leaf found to change
# adds one more.
_MAX_LOOP_BUILDS = 8


class LoopBuilder:
    """Loops of the kernel's body, for `Builder` (which supplies the state, `eval`, `_call_args` and `_block`)."""

    def _stmt_For(self, stmt):
        self.loop_depth += 1
        try:
            self._for(stmt)
        finally:
            self.loop_depth -= 1

    def _for(self, stmt):
        if stmt.orelse is not None:
            raise self.error(UnsupportedSyntaxError, "for ... else", refusal=NOT_TRITON)
        if not isinstance(stmt.target, cst.Name):
            raise self.error(UnsupportedSyntaxError, "unpacking in a for loop's target (the loop variable must be "
                             "a single name)", refusal=NOT_TRITON)
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
                         "tl.static_range(...) or a constexpr tuple", refusal=NOT_TRITON)

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
            raise self.error(CompileTimeError, "range takes 1 to 3 arguments")
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
        op = Op(OpKind.FOR, [lo_v, hi_v, step_v] + inits, results, attrs, loc, [region])
        self._finish_loop(op, slots, var)

    def _stmt_While(self, stmt):
        self.loop_depth += 1
        try:
            self._while(stmt)
        finally:
            self.loop_depth -= 1

    def _while(self, stmt):
        if stmt.orelse is not None:
            raise self.error(UnsupportedSyntaxError, "while ... else", refusal=NOT_TRITON)
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
                raise self.error(UnsupportedSyntaxError, "a while loop on a compile-time condition (it needs a "
                                 "runtime one)", hint="constant conditions would never end or never run",
                                 refusal=NOT_TRITON)
            if cond.shape:
                raise self.error(ShapeError, "a while condition must be a scalar")
            cond = semantic.to_bool(self, cond)
            cond_region.ops.append(Op(OpKind.CONDITION, [cond], [], {}, loc))
        finally:
            self.runtime_depth -= 1
            self.region, self.scope.locals = saved_region, saved_locals
        op = Op(OpKind.WHILE, inits, results, {}, loc, [cond_region, region])
        self._finish_loop(op, slots, None)

    def _build_loop(self, carried, build, make_args, offset):
        """Build a loop body until its carried slots and their types are stable; returns (region, slots,
        inits, results). The carried variables are bound here to the region's arguments from `offset` on;
        `build(region)` binds the loop's own (the induction variable) and builds the body. A record variable
        (a block pointer) is carried by the leaves the body changes (`records.Slots`)."""
        before = dict(self.scope.locals)
        for n in carried:
            if isinstance(before.get(n), Unbound):
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
                raise self.error(CompileTimeError, f"'{n}' is {'None' if pinned[n] is None else short(pinned[n])} before the loop and "
                                 "changes in it: "
                                 "a loop can only carry blocks, scalars, numbers and block pointers",
                                 hint="give it a value of its final type before the loop")
            for n, v in exit_env.items():
                if isinstance(v, Unbound):
                    raise self.error(CompileTimeError, f"'{n}' is not defined on every path through the loop")
            if slots.grow(entry, exit_env, lambda message: self.error(CompileTimeError, message)):
                continue
            yielded = slots.values(exit_env)
            stable = True
            for slot, v in zip(entries, yielded):
                t = types[slot.key]
                vt = v.type if isinstance(v, Value) else t
                if vt != t and isinstance(slot.initial, Value):
                    raise self.error(CompileTimeError, f"Loop-carried variable {slot.name} has initial type "
                                     f"{slot.initial.type} but is re-assigned to {vt} in the loop; it must keep "
                                     "its type",
                                     hint="initialize it with the final type, e.g. tl.zeros(..., dtype=...)")
                stable = stable and vt == t
                types[slot.key] = vt
            if stable:
                break
        else:
            raise self.error(CompileTimeError, "could not settle the types of the loop-carried variables")
        # A variable the built body leaves as it was (assigned only under a constexpr condition that is false
        # here, `if HAS_SEQ_IDX: seq_idx = ...`) is not carried, as in Triton: rebuilt without it, it keeps its
        # value before the loop (no unused C variable either).
        unchanged = [n for n in carried if exit_env[n] is entry.get(n, _NOT_BOUND)]
        if unchanged:
            self.scope.locals = dict(before)
            return self._build_loop([n for n in carried if n not in unchanged] + list(pinned), build, make_args,
                                    offset)
        # Materialize constexpr yields and inits with the settled types.
        slot_types = [types[slot.key] for slot in entries]
        saved_region = self.region
        self.region = region
        yielded = [y if isinstance(y, Value) else self._typed_const(y, t) for y, t in zip(yielded, slot_types)]
        region.ops.append(Op(OpKind.YIELD, yielded, [], {}, loc))
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


def _collect_assigned(node, out):
    """Append to `out` the names `node`'s statements assign (targets of =, annotated and augmented assignments,
    `for` targets), in source order."""
    for stmt in statements(node):
        if isinstance(stmt, cst.Assign):
            for target in stmt.targets:
                _names_in_target(target.target, out)
        elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign, cst.For)):
            _names_in_target(stmt.target, out)


def _names_in_target(target, out):
    if isinstance(target, cst.Name):
        out.append(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for e in target.elements:
            _names_in_target(e.value, out)


def _carryable(value) -> bool:
    """Whether a loop can carry `value`: an IR value, a record (block pointer) or a number."""
    if isinstance(value, constexpr):
        value = value.value
    return isinstance(value, (Value, Record, bool, int, float)) or isinstance(value, Unbound)
