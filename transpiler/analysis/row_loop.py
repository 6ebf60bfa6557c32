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
grid. The runtime launches `min(grid x, SMs x programs per SM)` programs (`runtime/launcher.py`).

Rows staged in shared memory (the *row ring*): when every prefetched load has runs of at least 4 bytes (what
`cp.async` copies) and `TRANSPILER_ROW_RING` is on, the loads are folded `depth` rows ahead instead of one, with
no per-thread register budget: the loop carries `depth` rows per load (`x_0` the row reduced now, `x_1 ..` the
ones after it) and yields them shifted by one, with the row `depth` ahead loaded at the top of the body. Held in
registers that would cost `depth` rows of registers; `row_ring.py` (after the layouts) has the emitter keep them
in a ring of `depth + 1` shared-memory slots filled by `cp.async` instead, so only the row being reduced is in
registers. `depth` comes from the shared memory a program may take without lowering the programs per SM its
threads allow (`TRANSPILER_ROW_RING_BYTES` per SM in all, at most `MAX_ROWS_AHEAD` rows ahead). Where blocks
hold several programs of one warp (`program_packing.py`), the body runs in this loop even with no row to
prefetch: its bounds keep the programs past the grid idle, and every program of the grid is launched.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..parse.dead_code import remove_dead_code
from ..parse.ir import LOOPS, Op, OpKind, Region, Type, Value, WRITES_MEMORY, walk
from ..targets import MAX_ROWS_AHEAD, switch, switch_value
from .axis_info import AxisInfoAnalysis
from .layout_assignment import coalesced_order
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


# Threads an SM holds at most, and blocks (sm_80 .. sm_90): a program's share of the ring budget.
SM_THREADS, SM_BLOCKS = 2048, 32
RING_MIN_RUN_BYTES = 4      # the narrowest cp.async


def ring_bytes_per_sm() -> int:
    """Shared memory the rows staged ahead may take per SM, all programs together: 128 KiB by default, which
    fits sm_80's 164 KiB as well as sm_90's 228 KiB beside the reductions' scratch."""
    return switch_value("TRANSPILER_ROW_RING_BYTES")


@dataclass
class RowLoopPlan:
    prefetched: list          # the load ops issued ahead (none: packed programs' loop, see below)
    why: str
    depth: int = 1            # rows ahead of the one being reduced
    ring: bool = False        # whether the rows ahead are meant for shared memory (row_ring.py confirms it)
    max_waves: int = 0        # one wave of programs only for grids of at most this many waves (0: any grid)
    # Filled by the rewrite, for row_ring.py and the emitter: per prefetched load j, the loads of the prologue
    # (first_loads[j][k]: row start + k x step), the load at the top of the body (ahead_loads[j]: `depth` rows on),
    # and the loop's carried index of each row it holds (carried[j][k]).
    loop: object = None
    first_loads: list = None
    ahead_loads: list = None
    carried: list = None

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


def plan_row_loop(kernel, num_warps, packed=False):
    """`(RowLoopPlan or None, why)` for `kernel` (`packed`: one-warp programs share a block: no ring)."""
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
    row_loads = []
    for op in kernel.body.ops:
        if op.name in _WRITES or op.regions:
            break                         # later loads might read what this program wrote
        if op.name != OpKind.LOAD or op.attrs.get("volatile") or op.result.dtype.is_ptr():
            continue
        sliced = [_slice(v, producers) for v in op.operands]
        if any(s is None for s in sliced) or not _reads_row([o for s in sliced for o in s]):
            continue
        row_loads.append(op)
    ring = _ring_plan(kernel, row_loads, num_warps, packed)
    if ring is not None:
        return ring, None
    per_thread = prefetch_bytes_per_thread()
    candidates, budget = [], per_thread * 32 * num_warps
    for op in row_loads:
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


def _ring_run_bytes(load, axis):
    """Bytes of the longest run of `load` that axis info proves contiguous and aligned (at most 16)."""
    ptr = load.operands[0]
    info = axis[ptr]
    fastest = coalesced_order(info, len(ptr.shape))[0] if ptr.shape else 0
    elem = ptr.dtype.element_ty.itemsize
    run = min(info.contiguity[fastest] * elem, info.divisibility[fastest], 16) if ptr.shape else elem
    return 1 << (max(run, 1).bit_length() - 1)


def _invariant_block_loads(kernel, row_loads):
    """The block loads of the body that do not read the row (a layernorm's weights): folded into the loop they are
    loop-invariant, and the C compiler hoists them and holds them in registers across every row (layernorm of
    4096 halves on 8 warps: 40 registers unfolded, 63 folded with the ring; 0.81 of the copy ceiling against
    0.88 unfolded, measured). Such a kernel is not folded by the ring."""
    producers = {r: op for op in kernel.body.ops for r in op.results}
    out = []
    for op in kernel.walk():
        if op.name != OpKind.LOAD or op in row_loads or not op.result.shape:
            continue
        sliced = [_slice(v, producers) for v in op.operands]
        if all(s is not None for s in sliced) and not _reads_row([o for s in sliced for o in s]):
            out.append(op)
    return out


def _ring_plan(kernel, row_loads, num_warps, packed):
    """The plan staging every row load `depth` rows ahead in shared memory, or None (then registers, one row)."""
    mode = switch_value("TRANSPILER_ROW_RING")
    if not row_loads or packed or not mode:
        return None
    threads = 32 * num_warps
    row_bytes = sum(load.result.type.numel * load.result.dtype.itemsize for load in row_loads)
    if mode == 1 and row_bytes <= prefetch_bytes_per_thread() * threads:
        return None                       # the register fold takes it (one row ahead: no ring measured faster)
    if _invariant_block_loads(kernel, row_loads):
        return None                       # see _invariant_block_loads
    axis = AxisInfoAnalysis(kernel)
    if any(not load.result.shape or _ring_run_bytes(load, axis) < RING_MIN_RUN_BYTES for load in row_loads):
        return None                       # runs of 1-2 bytes: no cp.async (the register fold stays)
    programs_per_sm = max(1, min(SM_THREADS // threads, SM_BLOCKS))
    per_program = ring_bytes_per_sm() // programs_per_sm
    slots = min(MAX_ROWS_AHEAD + 1, per_program // max(row_bytes, 1))
    if slots < 2:
        return None
    waves = switch_value("TRANSPILER_ROW_RING_WAVES")
    launch = (f"; one wave of programs for grids of at most {waves} waves, every program otherwise (rows of 32 "
              f"bytes a thread or more ran slower folded over many waves)" if waves else "")
    return RowLoopPlan(row_loads, f"no atomics or tl.dot; {len(row_loads)} load(s) of the row ({row_bytes} bytes, "
                                  f"{row_bytes // threads} a thread) issued before any store, runs of 4 bytes or "
                                  f"more: {slots} shared-memory slots a program for {programs_per_sm} programs per "
                                  f"SM fit {ring_bytes_per_sm()} bytes per SM{launch}",
                       depth=slots - 1, ring=True, max_waves=waves)


def fold_row_loop(kernel, decisions, num_warps, packed=False):
    """Decide (`plan_row_loop`) and, when it says so, rewrite `kernel.body` into the row loop. Idempotent: the
    plan is kept on the kernel as `kernel.row_loop` (None when not folded). `packed`: several programs share a
    block (`program_packing.py`), so the body runs in the loop even with no row to prefetch: its bounds are what
    keeps a program past the user's grid from running."""
    if hasattr(kernel, "row_loop"):
        return kernel.row_loop
    plan, why_not = plan_row_loop(kernel, num_warps, packed)
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
    ahead = "one row ahead" if plan.depth == 1 else f"{plan.depth} rows ahead"
    decisions.add("row_loop", plan.prefetched[0], f"programs folded into a persistent row loop; "
                  f"{len(plan.prefetched)} load(s) issued {ahead}", plan.why)
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
    i32, i1 = Type(dtypes.int32), Type(dtypes.int1)
    depth = plan.depth if plan.prefetched else 1
    start = _op(OpKind.PROGRAM_ID, [], i32, loc, "row_start", axis=0)
    n_rows = _op(OpKind.ROW_COUNT, [], i32, loc, "n_rows")
    step = _op(OpKind.LAUNCHED_PROGRAMS, [], i32, loc, "row_step", axis=0)
    # The first rows are loaded before the loop's test: guarded like the rows ahead, since a program of a packed
    # block past the grid (program_packing.py) starts beyond the last row (its load read past the array), and a
    # program's k-th row may be past the grid.
    starts_in_grid = _op(OpKind.ELEMENTWISE, [start.result, n_rows.result], i1, loc, "row_start_in_grid", fn="lt")
    prologue = [start, n_rows, step, starts_in_grid]
    first_rows, row_k, guard_k = [], start.result, starts_in_grid.result
    for k in range(depth):
        if k:
            nxt = _op(OpKind.ELEMENTWISE, [row_k, step.result], i32, loc, f"row_start_{k}", fn="add")
            inside = _op(OpKind.ELEMENTWISE, [nxt.result, n_rows.result], i1, loc, f"row_start_{k}_in_grid", fn="lt")
            prologue += [nxt, inside]
            row_k, guard_k = nxt.result, inside.result
        ops, loaded = _clone_loads(kernel, plan, row_k, loc, guard=guard_k, suffix=f"_{k}" if k else "")
        prologue += ops
        first_rows.append(loaded)
    stride = step
    if depth > 1:
        times = _op(OpKind.CONSTANT, [], i32, loc, value=depth)
        stride = _op(OpKind.ELEMENTWISE, [step.result, times.result], i32, loc, "rows_ahead_step", fn="mul")
        prologue += [times, stride]

    iv = Value(i32, "row")
    # carried[j][k]: load j's row k rows after the one this iteration reduces
    carried = [[Value(load.result.type, (load.result.name or "this_row") + (f"_ahead{k}" if k else ""))
                for k in range(depth)] for load in plan.prefetched]
    ahead = _op(OpKind.ELEMENTWISE, [iv, stride.result], i32, loc, "row_ahead", fn="add")
    in_grid = _op(OpKind.ELEMENTWISE, [ahead.result, n_rows.result], i1, loc, fn="lt")
    next_ops, next_rows = _clone_loads(kernel, plan, ahead.result, loc, guard=in_grid.result, suffix="_next")

    mapping = {load.result: rows[0] for load, rows in zip(plan.prefetched, carried)}
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
    flat = [v for rows in carried for v in rows]
    inner = Region([iv] + flat, [ahead, in_grid] + next_ops + body)
    for op in list(walk(inner)):      # program ids inside nested regions too
        if op.name in (OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS) and op.attrs["axis"] == 0 and op not in (ahead, in_grid):
            mapping[op.result] = iv if op.name == OpKind.PROGRAM_ID else n_rows.result
    _substitute(inner, mapping)
    inner.ops = [op for op in inner.ops
                 if not (op.name in (OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS) and op.attrs["axis"] == 0)]
    yielded = [v for rows, nxt in zip(carried, next_rows) for v in rows[1:] + [nxt]]
    inner.ops.append(Op(OpKind.YIELD, yielded, [], {}, loc))
    inits = [first_rows[k][j] for j in range(len(plan.prefetched)) for k in range(depth)]
    loop = Op(OpKind.FOR, [start.result, n_rows.result, step.result] + inits,
              [Value(v.type, v.name) for v in flat], {"step_sign": 1, "loop_unroll_factor": 1}, loc, [inner])
    kernel.body.ops = prologue + [loop]
    remove_dead_code(kernel)      # the body's own address arithmetic for the loads it no longer makes
    if plan.prefetched:
        plan.loop = loop
        plan.first_loads = [[first_rows[k][j].owner for k in range(depth)] for j in range(len(plan.prefetched))]
        plan.ahead_loads = [v.owner for v in next_rows]
        plan.carried = [[j * depth + k for k in range(depth)] for j in range(len(plan.prefetched))]
