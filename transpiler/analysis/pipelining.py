"""Software pipelining: which loads of a loop are staged into shared memory `num_stages` iterations ahead.

Decides, for each `for` loop, from the ops of its body, the vector widths and the `num_stages` option:
- which loads are *staged*: a load whose only users are `tl.dot`s (directly or through `tl.trans`) and whose
  access runs are 4, 8 or 16 bytes (what `cp.async` copies). Its result never lives in registers: the copy
  goes global -> shared, and the dot reads its fragments from there;
- the *address slice*: the body ops that compute the staged loads' pointers, masks and `other` values, and
  the loop-carried values they advance (`a_ptrs += BLOCK_K * stride`). The slice must be pure arithmetic that
  does not depend on loaded data; the emitter runs it a second time, `num_stages - 1` iterations ahead of
  the body, with its own copy of those carried values;
- what the body itself no longer computes: slice ops and carried values that only the staged loads needed;
- per staged load, whether its `other` is +0 (`zero_fill`): then a run whose mask is uniform is one cp.async
  whose source size is 0 when masked off (the hardware writes zeros), with no branch and no register path.
A loop qualifies only when every such load can be staged, `num_stages >= 2` and it holds no loop of its own (as
in Triton, only innermost loops are pipelined); otherwise its loads stay in registers and the dot writes them to
shared memory itself.

It also decides whether the loop's warpgroup MMA (sm_90a) stays *in flight* across iterations (`async_dot`):
when the body's last wgmma dot has its operands staged here (or A in registers), its product only becomes the
carried accumulator it was given, and `num_stages >= 3`, the body does not wait for its group; it waits until
only that group is pending (the previous iteration's is done), so the next iteration's wgmmas queue behind it
(with a dot before it in the body, as attention's Q @ K^T before P @ V, that dot's wait retires it, and pins
the carried accumulator there; taken with `num_stages >= 4`). Switches: TRANSPILER_WGMMA_IN_FLIGHT for a loop
with one wgmma dot (off), TRANSPILER_WGMMA_CHAIN_IN_FLIGHT for the last of several (on).
Then the stage of iteration i-1 may still be read during iteration i, so the copies run `num_stages - 2`
iterations ahead into the stage of iteration i-2, which every warp finished with before the barrier at the
top of iteration i. The loop waits for the last group after it ends.

And whether an mma.sync dot *reads its stage into registers first* (`refill_dot`): when the staged tiles feed one
mma.sync dot only and the fragments of its whole K (with the accumulator) fit in a budget of 32-bit registers
per thread (`fragment_register_budget`), the dot loads every fragment of the stage, a barrier follows, and the copies of iteration
i + num_stages refill that same stage while the mma.syncs run: `num_stages` iterations in flight instead of
`num_stages - 1`, in the same shared memory (Triton's mma.sync pipeline reads its stage into registers so too, with
`num_stages - 1` buffers). It pays where the k-step order leaves each mma.sync waiting for the ldmatrix just
before it and one warp per scheduler hides nothing: a small tile (few accumulators, so registers to spare)
streaming a large operand, as a decode-shaped 16 x N x K product. On by default (H200, 2026-12-02: 16x8192x8192 fp16
41.6 -> 48.9 TFLOP/s, 16x4096x14336 22.6 -> 28.8, ncu's short-scoreboard stalls 2.1 -> 0.05 per issue; one more
stage changed nothing, so it is the order, not the bytes in flight; bench/RESULTS.md, issue 12 session 10);
TRANSPILER_MMA_REFILL_READ_STAGE=0 gives the k-step order. The budget stays 128: at 192 the 32 x 128 x 128 tile
takes it (239 registers) and ran 13% slower.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..parse.ir import LOOPS, OpKind, walk
from ..targets import switch, switch_value

# Ops with no side effects and no dependence on memory: what an address slice may contain.
ADDRESS_OPS = {OpKind.CONSTANT, OpKind.SPLAT, OpKind.BROADCAST, OpKind.EXPAND_DIMS, OpKind.RESHAPE, OpKind.PERMUTE,
               OpKind.ELEMENTWISE, OpKind.CAST, OpKind.BITCAST, OpKind.ADDPTR, OpKind.ARANGE, OpKind.PROGRAM_ID,
               OpKind.NUM_PROGRAMS, OpKind.HINT}
# Ops the body may drop when nothing reads their results.
PURE_OPS = ADDRESS_OPS | {OpKind.LOAD, OpKind.REDUCE, OpKind.DOT}
CP_ASYNC_BYTES = (4, 8, 16)


def fragment_register_budget() -> int:
    """32-bit registers per thread that a stage's fragments and the accumulator may take together for the dot to
    read its whole stage into registers before the refill (TRANSPILER_MMA_FRAGMENT_REGISTERS, 128): the skinny
    bench matmul's 16 x 128 x 128 tile over 4 warps needs 112 (Triton's kernel for it holds 128 registers in all),
    where a 128 x 128 accumulator over 4 warps (128 registers alone) keeps the k-step-wise reading."""
    return switch_value("TRANSPILER_MMA_FRAGMENT_REGISTERS")


@dataclass
class StagedLoad:
    op: object
    vec: int            # elements per cp.async
    col_dim: int        # the dimension laid out contiguously in shared memory (the load's fastest)
    zero_fill: bool = False   # masked with `other` +0: a masked-off run is a cp.async that reads 0 bytes


def _is_positive_zero(v):
    """Whether `v` is the constant +0 (through splats, broadcasts and casts)."""
    op = v.owner
    while getattr(op, "name", None) in (OpKind.SPLAT, OpKind.BROADCAST, OpKind.CAST):
        op = op.operands[0].owner
    if getattr(op, "name", None) != OpKind.CONSTANT:
        return False
    value = op.attrs.get("value")
    return isinstance(value, (int, float)) and value == 0 and math.copysign(1.0, value) > 0


@dataclass
class PipelinePlan:
    loop: object
    stages: int
    loads: list
    slice_ops: list                               # body ops the prefetch runs, in program order
    prefetch_carried: list                        # carried-value indices the prefetch advances itself
    main_dead_ops: set = field(default_factory=set)
    main_dead_carried: set = field(default_factory=set)
    async_dot: object = None                      # the wgmma dot left in flight across iterations, if any
    async_carried: int | None = None              # the carried index of its accumulator
    refill_dot: object = None                     # the mma.sync dot that reads its whole stage into registers first

    @property
    def distance(self):
        """How many iterations ahead the copies run: one stage fewer while a wgmma group is in flight, one more
        when the dot frees its stage before the refill (the copies then go into the stage just read)."""
        if self.refill_dot is not None:
            return self.stages
        return self.stages - 1 - (self.async_dot is not None)

    def is_staged(self, op):
        return any(s.op is op for s in self.loads)


def _users(region):
    """value -> ops of `region` (top level) that read it, directly or from inside their own regions."""
    users = {}
    for op in region.ops:
        reads = list(op.operands)
        for r in op.regions:
            for inner in walk(r):
                reads.extend(inner.operands)
        for v in reads:
            users.setdefault(v, []).append(op)
    return users


def _feeds_only_dots(value, users):
    for u in users.get(value, []):
        if u.name == OpKind.DOT and value in u.operands[:2] and value is not u.operands[2]:
            continue
        if u.name == OpKind.PERMUTE and _feeds_only_dots(u.result, users):
            continue
        return False
    return bool(users.get(value))


class _Body:
    """A loop body seen backwards: which body ops and carried values a set of values depends on."""

    def __init__(self, loop):
        region = loop.regions[0]
        self.ops = region.ops
        self.op_ids = {id(op) for op in region.ops}
        self.iv, self.carried, self.yields = region.args[0], region.args[1:], region.ops[-1].operands

    def walk_back(self, roots, follow):
        """From `roots`, through the values made in the body (`follow(op)` gives the op's inputs to walk on, or
        None to give up) and the carried ones (which lead to what the body yields for them). Returns the ids
        of the ops reached and the carried indices reached, in order, or None when `follow` gave up."""
        reached, carried, work = set(), [], list(roots)
        while work:
            v = work.pop()
            if v is self.iv:
                continue
            if v in self.carried:
                i = self.carried.index(v)
                if i not in carried:
                    carried.append(i)
                    work.append(self.yields[i])
                continue
            op = v.owner
            if op is None or id(op) not in self.op_ids or id(op) in reached:
                continue
            reached.add(id(op))
            inputs = follow(op)
            if inputs is None:
                return None
            work.extend(inputs)
        return reached, carried


def _inputs(op):
    """Every value `op` reads, its own regions included."""
    values = list(op.operands)
    for r in op.regions:
        for inner in walk(r):
            values.extend(inner.operands)
    return values


def _stage_loads(loop, dot_loads, vector_width, order_of, decisions):
    staged = []
    for op in dot_loads:
        elem = op.result.dtype.itemsize
        vec = vector_width[op]
        if vec * elem not in CP_ASYNC_BYTES:
            decisions.add("pipeline", loop, "loop not pipelined",
                          f"the load on line {op.loc.line if op.loc else '?'} moves {vec * elem} bytes per access; "
                          "cp.async copies 4, 8 or 16")
            return None
        staged.append(StagedLoad(op, vec, order_of(op), len(op.operands) == 3 and _is_positive_zero(op.operands[2])))
    return staged


def _wgmma_dots(loop, dots):
    return [op for op in walk(loop.regions[0])
            if op.name == OpKind.DOT and getattr(dots.get(op), "kind", None) == "wgmma"]


def _in_flight_by_default(loop, dots, stages) -> bool:
    """The cp.async policy: the loop's only wgmma dot stays in flight under TRANSPILER_WGMMA_IN_FLIGHT (measured
    slower for matmul); the last of a chain (TRANSPILER_WGMMA_CHAIN_IN_FLIGHT: attention's P @ V, whose group then
    runs while the next iteration waits for its stage and issues Q @ K^T) from 4 stages on: in flight the copies
    run one stage less far ahead, and with 3 stages (one iteration ahead) attention ran 1-3% slower on the H200,
    with 4 as fast or faster than waiting."""
    chain = len(_wgmma_dots(loop, dots)) > 1
    if chain:
        return switch("TRANSPILER_WGMMA_CHAIN_IN_FLIGHT") and stages >= 4
    return switch("TRANSPILER_WGMMA_IN_FLIGHT")


def _async_dot(loop, staged, dots, users):
    """(dot, carried index) of the wgmma dot of the loop that may stay in flight, or (None, None): the loop's
    only wgmma dot, or the last of a chain whose earlier dots wait for their own groups (the first one's wait
    retires it)."""
    region = loop.regions[0]
    wgmma = _wgmma_dots(loop, dots)
    if not wgmma or not all(op in region.ops for op in wgmma):
        return None, None
    dot = wgmma[-1]
    staged_values = {s.op.result for s in staged}

    def is_staged(v):
        owner = v.owner
        return v in staged_values or (getattr(owner, "name", None) == OpKind.PERMUTE
                                      and owner.operands[0] in staged_values)
    a_ready = is_staged(dot.operands[0]) or dots[dot].a_layout is not None   # staged, or register-A fragments
    yields = region.ops[-1].operands
    if not (a_ready and is_staged(dot.operands[1])):
        return None, None
    # its product only becomes one carried value (the accumulator it was given, or, as attention's rescaled
    # one, a value computed from it), read again only in the next iteration
    carried_at = [i for i, v in enumerate(yields) if v is dot.result]
    if users.get(dot.result, []) != [region.ops[-1]] or len(carried_at) != 1:
        return None, None
    if len(wgmma) > 1:
        # the next iteration may read the carried product only once the first dot's wait has retired the group
        first = region.ops.index(wgmma[0])
        readers = users.get(region.args[1 + carried_at[0]], [])
        if any(region.ops.index(op) < first for op in readers):
            return None, None
    return dot, carried_at[0]


def fragment_registers(plan, k) -> int:
    """32-bit registers per thread of an mma.sync dot's accumulator and of its A and B fragments over all of K."""
    ins = plan.instruction
    k_steps = k // ins.k
    return 4 * plan.tiles_m * plan.tiles_n + k_steps * (plan.tiles_m * ins.a_regs + plan.tiles_n * ins.b_regs)


def _refill_dot(loop, staged, dots, users, decisions):
    """The loop's mma.sync dot that may read its whole stage into registers before the stage is refilled (see the
    module docstring), or None."""
    if not switch("TRANSPILER_MMA_REFILL_READ_STAGE"):
        return None
    readers = set()

    def reached_dots(value):
        for u in users.get(value, []):
            if u.name == OpKind.PERMUTE:
                reached_dots(u.result)
            else:
                readers.add(u)
    for s in staged:
        reached_dots(s.op.result)
    if len(readers) != 1:
        return None
    dot = next(iter(readers))
    plan = dots.get(dot)
    if dot not in loop.regions[0].ops or getattr(plan, "kind", None) != "mma":
        return None
    k = dot.operands[0].shape[1]
    registers, budget = fragment_registers(plan, k), fragment_register_budget()
    line = dot.loc.line if dot.loc else "?"
    if registers > budget:
        decisions.add("pipeline", dot, "stage read k step by k step, refilled one iteration later",
                      f"the dot's fragments over K={k} and its accumulator take {registers} registers per thread "
                      f"(more than {budget})")
        return None
    decisions.add("pipeline", dot, "stage read into registers whole, then refilled at once",
                  f"the dot on line {line} is the only reader of the staged tiles and its fragments over K={k} "
                  f"with its accumulator take {registers} registers per thread (at most {budget}): "
                  "one more iteration of copies in flight in the same shared memory")
    return dot


def plan_loop(loop, kernel, vector_width, order_of, decisions, num_stages, dots=None):
    region = loop.regions[0]
    stages = loop.attrs.get("num_stages") or num_stages
    users = _users(region)
    dot_loads = [op for op in region.ops if op.name == OpKind.LOAD and op.result.shape
                 and _feeds_only_dots(op.result, users)]
    if not dot_loads:
        return None
    if stages < 2:
        decisions.add("pipeline", loop, "loop not pipelined", f"num_stages={stages}")
        return None
    if any(op.name in LOOPS for op in walk(region)):
        # As Triton: only innermost loops. Staging an outer loop's loads keeps its rings alive across the inner
        # loops, so everything those need in shared memory would come on top of them.
        decisions.add("pipeline", loop, "loop not pipelined", "it contains a loop (only innermost loops are)")
        return None
    staged = _stage_loads(loop, dot_loads, vector_width, order_of, decisions)
    if staged is None:
        return None
    body = _Body(loop)

    # The address slice: backward from the staged loads' operands, through carried values into their updates.
    impure = []

    def address_inputs(op):
        if op.name not in ADDRESS_OPS:
            impure.append(op)
            return None
        return op.operands
    found = body.walk_back([v for s in staged for v in s.op.operands], address_inputs)
    if found is None:
        op = impure[0]
        decisions.add("pipeline", loop, "loop not pipelined",
                      f"the address of a dot operand depends on a '{op.name}' in the loop "
                      f"(line {op.loc.line if op.loc else '?'})")
        return None
    slice_ids, prefetch_carried = found
    slice_ops = [op for op in region.ops if id(op) in slice_ids]

    # What the body still needs once the staged loads stop reading their operands there: everything with a
    # side effect, the loop's other carried values and results used after the loop, and what they read.
    used_after = _values_used_outside(kernel, loop)
    staged_ids = {id(s.op) for s in staged}
    roots_ops = [op for op in region.ops[:-1] if op.name not in PURE_OPS or id(op) in staged_ids]
    roots_carried = [i for i in range(len(body.carried))
                     if i not in prefetch_carried or loop.results[i] in used_after]
    roots = [v for op in roots_ops if id(op) not in staged_ids for v in _inputs(op)]
    roots += [body.yields[i] for i in roots_carried]
    live_ids, live_carried = body.walk_back(roots, lambda op: [] if id(op) in staged_ids else _inputs(op))
    live_ids |= {id(op) for op in roots_ops}
    live_carried = set(live_carried) | set(roots_carried)
    async_dot, async_carried = (_async_dot(loop, staged, dots or {}, users)
                                if stages >= 3 and _in_flight_by_default(loop, dots or {}, stages) else (None, None))
    refill = _refill_dot(loop, staged, dots or {}, users, decisions) if async_dot is None else None
    plan = PipelinePlan(loop, stages, staged, slice_ops, sorted(prefetch_carried),
                        {op for op in region.ops[:-1] if id(op) not in live_ids},
                        {i for i in prefetch_carried if i not in live_carried}, async_dot, async_carried, refill)
    lines = ", ".join(f"line {s.op.loc.line if s.op.loc else '?'} ({s.vec * s.op.result.dtype.itemsize} B cp.async)"
                      for s in staged)
    decisions.add("pipeline", loop, f"{stages}-stage cp.async pipeline for the loads on {lines}",
                  f"they feed only tl.dot; their addresses come from {len(slice_ops)} ops and "
                  f"{len(prefetch_carried)} carried value(s) the prefetch advances "
                  f"{plan.distance} iteration(s) ahead")
    if async_dot is not None:
        decisions.add("pipeline", async_dot, "wgmma left in flight across iterations (wait_group 1)",
                      f"the product only becomes the carried accumulator; the copies run {plan.distance} "
                      "iteration(s) ahead, into the stage the group before the previous one read")
    return plan


def keep_in_flight(plan, dots, decisions, why):
    """Leave the loop's wgmma group in flight across iterations when its dot allows it (see the module
    docstring; the TMA pass asks for it: with the copy engine filling the stages the shorter load distance costs
    nothing measurable). Returns whether it does."""
    if plan.async_dot is not None or plan.stages < 3 or plan.refill_dot is not None:
        return plan.async_dot is not None
    dot, carried = _async_dot(plan.loop, plan.loads, dots, _users(plan.loop.regions[0]))
    if dot is None:
        return False
    plan.async_dot, plan.async_carried = dot, carried
    decisions.add("pipeline", dot, "wgmma left in flight across iterations (wait_group 1)",
                  f"{why}; cp.async copies run {plan.distance} iteration(s) ahead, into the stage the group before "
                  "the previous one read")
    return True


def _values_used_outside(kernel, loop):
    inside = {id(op) for op in walk(loop.regions[0])}
    used = set()
    for op in kernel.walk():
        if id(op) not in inside and op is not loop:
            used.update(op.operands)
    return used


def plan_pipelines(kernel, vector_width, order_of, decisions, num_stages, dots=None):
    plans = {}
    for op in kernel.walk():
        if op.name == OpKind.FOR:
            plan = plan_loop(op, kernel, vector_width, order_of, decisions, num_stages, dots)
            if plan is not None:
                plans[op] = plan
    return plans


__all__ = ["PipelinePlan", "StagedLoad", "fragment_register_budget", "fragment_registers", "keep_in_flight",
           "plan_pipelines"]
