"""Row loop: whether the programs of grid axis 0 are folded into persistent programs, each looping over rows
with the next row's loads issued before this row's reductions.

A program that owns one row loads it, reduces it, then stores: while it reduces, its SM has no loads of its in
flight, and only other programs on the SM keep memory busy. When the kernel has no dependence between
programs, the compiler may run program ids `p, p + G, p + 2G, ...` one after the other in one persistent
program (G programs launched, at most one wave of them) and load row `p + G` while it reduces row `p`.

Decides, from the kernel IR: whether to fold (no atomics, no `tl.dot`, no runtime loop of its own, a reduction or
scan in the body, and at
least one load whose address, mask and `other` depend only on the arguments and `tl.program_id(0)`, issued
before any store: program order inside each program is kept, and the only reordering is across program ids,
which the grid never ordered); which loads run one row ahead (those, while their registers fit the budget);
and records why in the decision log. `fold_row_loop` rewrites the IR:

    row_start = program_id(0); n_rows = the user's grid x (a parameter the runtime adds); step = gridDim.x
    x = load(row row_start)                                 # the first row's loads
    for row in range(row_start, n_rows, step), carrying x:
        x_next = load(row row + step, masked off past n_rows)
        body(row) with x in place of its load                 # program_id(0) -> row, num_programs(0) -> n_rows
        yield x_next

so `tl.program_id(0)` and `tl.num_programs(0)` keep the user's values and results are those of the user's
grid. The runtime launches `min(grid x, SMs x programs per SM)` programs (`runtime/launcher.py`). Where blocks
hold several programs of one warp (`program_packing.py`), the body runs in this loop even with no row to
prefetch: its bounds keep the programs past the grid idle, and every program of the grid is launched.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..parse.dead_code import remove_dead_code
from ..parse.ir import LOOPS, Op, OpKind, Region, Type, Value, WRITES_MEMORY, walk
from ..targets import switch, switch_value
from .pipelining import ADDRESS_OPS

# Ops after which two program ids may see each other's effects, or that plan their own pipelining.
_CROSS_PROGRAM = {OpKind.ATOMIC_RMW: "atomics (programs may depend on each other)",
                  OpKind.ATOMIC_CAS: "atomics (programs may depend on each other)",
                  OpKind.DOT: "tl.dot (tensor-core loops have their own pipeline)"}
_WRITES = WRITES_MEMORY
# Bytes per thread a row's prefetched loads may hold beside the row being reduced (registers: 4 bytes each):
# one 16-byte access. Measured on the H200 (bench/NOTES.md, issue 18): rows of 16 bytes a thread gained 3-13%,
# rows of 32-64 bytes a thread lost 1-8% with the same registers and programs per SM (ncu); cause not isolated.
def prefetch_bytes_per_thread() -> int:
    return switch_value("TRANSPILER_ROW_LOOP_BYTES")


@dataclass
class RowLoopPlan:
    prefetched: list          # the load ops issued one row ahead (none: packed programs' loop, see below)
    why: str

    @property
    def persistent(self) -> bool:
        """Whether the runtime launches one wave of programs (rows are prefetched); otherwise every program of
        the grid is launched and the loop runs its one row, or none past the grid (packed programs)."""
        return bool(self.prefetched)


def _slice(value, producers):
    """The ops computing `value` (in no particular order), or None when one of them is not pure arithmetic."""
    ops, stack, seen = [], [value], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        op = producers.get(v)
        if op is None:
            continue                      # an argument
        if op.name not in ADDRESS_OPS or op.regions:
            return None
        ops.append(op)
        stack.extend(op.operands)
    return ops


def _reads_row(ops):
    return any(op.name == OpKind.PROGRAM_ID and op.attrs["axis"] == 0 for op in ops)


def plan_row_loop(kernel, num_warps):
    """`(RowLoopPlan or None, why)` for `kernel`."""
    if not switch("TRANSPILER_ROW_LOOP"):
        return None, "turned off (TRANSPILER_ROW_LOOP=0)"
    ops = list(kernel.walk())
    for op in ops:
        if op.name in _CROSS_PROGRAM:
            return None, f"not folded: {_CROSS_PROGRAM[op.name]}"
    if any(op.name in LOOPS for op in ops):
        return None, ("not folded: the program has a runtime loop of its own (its loads already follow one another; "
                      "a row loop around it added registers and spilled)")
    if not any(op.name in (OpKind.REDUCE, OpKind.SCAN) for op in ops):
        return None, "not folded: no reduction or scan (many short programs per SM already overlap their phases)"
    producers = {r: op for op in kernel.body.ops for r in op.results}
    per_thread = prefetch_bytes_per_thread()
    candidates, budget = [], per_thread * 32 * num_warps
    for op in kernel.body.ops:
        if op.name in _WRITES or op.regions:
            break                         # later loads might read what this program wrote
        if op.name != OpKind.LOAD or op.attrs.get("volatile") or op.result.dtype.is_ptr():
            continue
        sliced = [_slice(v, producers) for v in op.operands]
        if any(s is None for s in sliced) or not _reads_row([o for s in sliced for o in s]):
            continue
        size = op.result.type.numel * op.result.dtype.itemsize
        if size > budget:
            continue
        budget -= size
        candidates.append(op)
    if not candidates:
        return None, ("not folded: no load of the row (address from the arguments and program_id(0) only, before "
                      "any store) that fits the prefetch budget")
    return RowLoopPlan(candidates, f"no atomics or tl.dot; {len(candidates)} load(s) of the row issued before any "
                                   f"store, {per_thread} bytes per thread at most held one row ahead"), None


def fold_row_loop(kernel, decisions, num_warps, packed=False):
    """Decide (`plan_row_loop`) and, when it says so, rewrite `kernel.body` into the row loop. Idempotent: the
    plan is kept on the kernel as `kernel.row_loop` (None when not folded). `packed`: several programs share a
    block (`program_packing.py`), so the body runs in the loop even with no row to prefetch: its bounds are what
    keeps a program past the user's grid from running."""
    if hasattr(kernel, "row_loop"):
        return kernel.row_loop
    plan, why_not = plan_row_loop(kernel, num_warps)
    first = next((op for op in kernel.body.ops if op.loc), None)
    if plan is None and packed:
        plan = RowLoopPlan([], "packed programs: a program id past the grid runs no iteration")
        kernel.row_loop = plan
        _rewrite(kernel, plan, first.loc if first else None)
        decisions.add("row_loop", first, "one row per program, in a loop of at most one iteration",
                      f"{why_not}; {plan.why}")
        return plan
    kernel.row_loop = plan
    if plan is None:
        decisions.add("row_loop", first, "one row per program", why_not)
        return None
    _rewrite(kernel, plan)
    decisions.add("row_loop", plan.prefetched[0], f"programs folded into a persistent row loop; "
                  f"{len(plan.prefetched)} load(s) issued one row ahead", plan.why)
    return plan


def _op(name, operands, rtype, loc, value_name=None, **attrs):
    return Op(name, operands, [Value(rtype, value_name)] if rtype else [], attrs, loc)


def _clone_loads(kernel, plan, row, loc, guard=None, suffix=""):
    """Ops loading the prefetched rows for program id `row` (a scalar value); masked by `guard` when given."""
    producers = {r: op for op in kernel.body.ops for r in op.results}
    needed = set()
    for load in plan.prefetched:
        for v in load.operands:
            needed.update(_slice(v, producers))
    if not plan.prefetched:
        return [], []
    out, mapping = [], {}
    for op in kernel.body.ops:          # program order is a topological order
        if op in needed:
            if op.name == OpKind.PROGRAM_ID and op.attrs["axis"] == 0:
                mapping[op.result] = row
                continue
            clone = Op(op.name, [mapping.get(o, o) for o in op.operands],
                       [Value(r.type, r.name) for r in op.results], dict(op.attrs), op.loc)
            mapping.update(zip(op.results, clone.results))
            out.append(clone)
    loaded = []
    for load in plan.prefetched:
        operands = [mapping.get(o, o) for o in load.operands]
        if guard is not None:
            shape = load.result.shape
            cond = guard
            if shape:
                cond = _op(OpKind.SPLAT, [guard], Type(dtypes.int1, shape), loc)
                out.append(cond)
                cond = cond.result
            if len(operands) > 1:
                both = _op(OpKind.ELEMENTWISE, [operands[1], cond], Type(dtypes.int1, shape), loc, fn="and")
                out.append(both)
                operands[1] = both.result
            else:                   # a mask needs an `other`: zero, never read (the row is past the grid)
                zero = _op(OpKind.CONSTANT, [], Type(load.result.dtype), loc,
                           value=0.0 if load.result.dtype.is_floating() else 0)
                out.append(zero)
                other = zero.result
                if shape:
                    other_block = _op(OpKind.SPLAT, [other], load.result.type, loc)
                    out.append(other_block)
                    other = other_block.result
                operands += [cond, other]
        name = f"{load.result.name}{suffix}" if load.result.name else f"row{suffix or '_data'}"
        clone = Op(OpKind.LOAD, operands, [Value(load.result.type, name)], dict(load.attrs), load.loc)
        out.append(clone)
        loaded.append(clone.result)
    return out, loaded


def _substitute(region, mapping):
    for op in region.ops:
        op.operands = [mapping.get(o, o) for o in op.operands]
        for r in op.regions:
            _substitute(r, mapping)


def _rewrite(kernel, plan, loc=None):
    loc = plan.prefetched[0].loc if plan.prefetched else loc
    i32 = Type(dtypes.int32)
    start = _op(OpKind.PROGRAM_ID, [], i32, loc, "row_start", axis=0)
    n_rows = _op(OpKind.ROW_COUNT, [], i32, loc, "n_rows")
    step = _op(OpKind.LAUNCHED_PROGRAMS, [], i32, loc, "row_step", axis=0)
    # The first row is loaded before the loop's test: guarded like the rows ahead, since a program of a packed
    # block past the grid (program_packing.py) starts beyond the last row (its load read past the array).
    starts_in_grid = _op(OpKind.ELEMENTWISE, [start.result, n_rows.result], Type(dtypes.int1), loc, "row_start_in_grid",
                         fn="lt")
    prologue, first_rows = _clone_loads(kernel, plan, start.result, loc, guard=starts_in_grid.result)

    iv = Value(i32, "row")
    carried = [Value(load.result.type, load.result.name or "this_row") for load in plan.prefetched]
    ahead = _op(OpKind.ELEMENTWISE, [iv, step.result], i32, loc, "row_ahead", fn="add")
    in_grid = _op(OpKind.ELEMENTWISE, [ahead.result, n_rows.result], Type(dtypes.int1), loc, fn="lt")
    next_ops, next_rows = _clone_loads(kernel, plan, ahead.result, loc, guard=in_grid.result, suffix="_next")

    mapping = dict(zip((load.result for load in plan.prefetched), carried))
    body = []
    for op in kernel.body.ops:
        if op in plan.prefetched:
            continue
        if op.name == OpKind.PROGRAM_ID and op.attrs["axis"] == 0:
            mapping[op.result] = iv
            continue
        if op.name == OpKind.NUM_PROGRAMS and op.attrs["axis"] == 0:
            mapping[op.result] = n_rows.result
            continue
        body.append(op)
    inner = Region([iv] + carried, [ahead, in_grid] + next_ops + body)
    for op in list(walk(inner)):      # program ids inside nested regions too
        if op.name in (OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS) and op.attrs["axis"] == 0 and op not in (ahead, in_grid):
            mapping[op.result] = iv if op.name == OpKind.PROGRAM_ID else n_rows.result
    _substitute(inner, mapping)
    inner.ops = [op for op in inner.ops
                 if not (op.name in (OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS) and op.attrs["axis"] == 0)]
    inner.ops.append(Op(OpKind.YIELD, next_rows, [], {}, loc))
    loop = Op(OpKind.FOR, [start.result, n_rows.result, step.result] + first_rows,
              [Value(v.type, v.name) for v in carried], {"step_sign": 1, "loop_unroll_factor": 1}, loc, [inner])
    kernel.body.ops = [start, n_rows, step, starts_in_grid] + prologue + [loop]
    remove_dead_code(kernel)      # the body's own address arithmetic for the loads it no longer makes
