"""Lowering of a software-pipelined `for` (the plan comes from analysis/pipelining.py).

The loop's staged loads become `cp.async` copies into a ring of `num_stages` shared-memory tiles, issued
`num_stages - 1` iterations ahead (`num_stages - 2` when a wgmma stays in flight: its stage is still being
read while the next iteration runs; `num_stages` when an mma.sync dot reads its whole stage into registers,
then a barrier, then the copies refill that stage):

    prologue:   for s < S-1: run the address slice for iteration s, copy into stage s, commit
    iteration:  wait until the current stage has landed; barrier (also: everyone is done with the stage
                about to be refilled); run the address slice for iteration i+S-1 and copy into that stage;
                commit; then the body, whose dots read the current stage
    after:      wait for every copy, barrier (the shared memory may be reused)

The address slice runs with its own copy of the carried values it advances (`a_ptrs_ahead`), so the body
keeps only what it still uses. Copies run 16 bytes at a time where the mask is whole over a run; a ragged or
masked-off run is loaded through registers and stored to the tile (masked elements get `other`), except that
a load whose `other` is +0 copies a masked-off uniform run as 0 bytes (cp.async zero-fills the rest).
"""
from __future__ import annotations

from .. import cexpr, cspell
from ..emitter import Read
from ..tiles import SharedTile, staged_view
from ...targets import switch
from .control import assign_yield, bind_args, declare_carried, loop_condition, unroll_pragma
from .memory import whole_run
from ...parse.ir import OpKind


def _issue_copies(em, staged, tile):
    op = staged.op
    layout = em.layouts.mem_layout[op]
    vec, elem = staged.vec, op.result.dtype
    ptr = em.operand(op.operands[0], layout)
    cp = f"tp::cp_async<{vec * elem.itemsize}>(&{tile.base}[{em.tile_offset(layout, tile, 'r')}], {ptr.at('r')});"
    if len(op.operands) == 1:
        em.write(em.macros.run_loop(layout.num_regs // vec, vec, cp))
        return
    mask = em.operand(op.operands[1], layout)
    other = em.operand(op.operands[2], layout)
    uniform = mask.array is None or em.analysis.mask_uniform.get(op, False)
    whole = mask.at("r") if uniform else whole_run(em, op, mask, vec)
    if uniform and staged.zero_fill and switch("TRANSPILER_CP_ZFILL"):   # masked off: a copy of 0 bytes, which zero-fills the chunk
        offset = em.tile_offset(layout, tile, "r")
        em.write(em.macros.run_loop(layout.num_regs // vec, vec, f"tp::cp_async_zfill<{vec * elem.itemsize}>("
                                    f"&{tile.base}[{offset}], {ptr.at('r')}, {whole});"))
        return
    em.write(em.macros.async_copy(dict(
        n_runs=layout.num_regs // vec, vec=vec, whole=whole, cp=cp,
        element=f"{tile.base}[{em.tile_offset(layout, tile, '(r + j)')}]", ptr=ptr.at("r"),
        mask_j=mask.at("(r + j)"), other_j=other.at("(r + j)"), fence=em.analysis.uses_wgmma)))


def _prefetch(em, plan, iv, iv_name, ct, carried, ahead_targets, yields, stage):
    """Run the address slice for the iteration `iv_name` and issue its copies into stage `stage`."""
    em.push_scope()
    em.bind(iv, Read(scalar=iv_name, ctype=ct), None)
    bind_args(em, [carried[i] for i in plan.prefetch_carried], ahead_targets)
    em.last_line = None
    em.emit_ops(plan.slice_ops)
    for staged in plan.loads:
        em.line_stack.append(staged.op.loc.line if staged.op.loc else None)
        em.last_line = None
        ring = em.stage_tiles[staged.op]
        _issue_copies(em, staged, ring.at_stage(em, stage, f"{em.name_of(staged.op.result)}_next"))
        em.line_stack.pop()
    em.last_line = None
    assign_yield(em, ahead_targets, [yields[i] for i in plan.prefetch_carried],
                 [carried[i] for i in plan.prefetch_carried])
    em.pop_scope()


class StageRing:
    """The `num_stages` tiles of one staged load, back to back in one buffer."""

    def __init__(self, buffer, shape, col_dim, dtype, slabs=False):
        self.buffer, self.shape, self.col_dim, self.dtype, self.slabs = buffer, shape, col_dim, dtype, slabs
        self.numel = shape[0] * shape[1]

    def at_stage(self, em, stage, hint) -> SharedTile:
        """The tile of stage `stage` (a C expression), its first element named once by a pointer declared here:
        the copies and reads then index `a_tile[...]`, not `(a_stages + (stage) * 8192)[...]`."""
        base = self.buffer
        if stage != "0":
            base = em.fresh(hint)
            em.write(f"{cspell.ctype(self.dtype)}* {base} = {self.buffer} + {cexpr.mul(stage, self.numel)};")
        return SharedTile(base, self.shape, self.col_dim, self.dtype, self.slabs)


class _Loop:
    """What both rings of one loop share: its bounds and the carried values the body keeps."""

    def __init__(self, em, op, plan):
        region = op.regions[0]
        self.op, self.plan, self.region = op, plan, region
        self.iv, self.carried, self.yields = region.args[0], region.args[1:], region.ops[-1].operands
        self.lo, self.hi, self.step = (em.scalar(x) for x in op.operands[:3])
        self.sign = op.attrs.get("step_sign", 1)
        self.ct = cspell.ctype(self.iv.dtype)
        self.main = [i for i in range(len(self.carried)) if i not in plan.main_dead_carried]

    def condition(self, ivname):
        return loop_condition(ivname, self.hi, self.step, self.sign)


def pipelined_for(em, op, plan):
    em.uses_tiles = True
    loop = _Loop(em, op, plan)
    tma = (em.analysis.tma or {}).get(op)
    if tma is None:
        _cp_async_comment(em, plan)
    targets = declare_carried(em, [op.results[i] for i in loop.main], [op.operands[3 + i] for i in loop.main])
    for i, (rd, lay) in zip(loop.main, targets):
        em.bind(op.results[i], rd, lay)
    if tma is None:
        _cp_async_ring(em, loop, targets)
        return
    # Two versions of the loop: the TMA ring where the analysis' run-time guard and the host's tensor maps hold
    # (analysis/tma.py), the cp.async ring otherwise (a wrapped edge tile, a map the driver would not encode).
    from .tma import tma_condition, tma_ring
    em.write(f"if ({tma_condition(em, tma)}) {{")
    em.indent += 1
    em.push_scope()
    tma_ring(em, loop, targets, tma)
    em.pop_scope()
    em.indent -= 1
    em.write("} else {")
    em.indent += 1
    em.push_scope()
    _cp_async_comment(em, plan)
    _cp_async_ring(em, loop, targets)
    em.pop_scope()
    em.indent -= 1
    em.write("}")


def stage_rings(em, plan):
    """Allocate the stage rings of the loop's staged loads (the pipeline's shared memory from here on); whether
    a barrier must precede their first copies (`SharedMemoryPlan.begin_pipeline`)."""
    barrier = em.smem.begin_pipeline(em.loop_depth > 0)
    for staged in plan.loads:
        v = staged.op.result
        buf = em.stage_buffer(v.dtype, v.type.numel * plan.stages, f"{em.name_of(v)}_stages",
                              (staged.op, "stages", 0))
        em.stage_tiles[staged.op] = StageRing(buf, v.shape, staged.col_dim, v.dtype, em.analysis.uses_wgmma)
    return barrier


def emit_body(em, loop, targets, stage, prefetch):
    """The loop body reading stage `stage`, with the copies `prefetch` issued by its first dot (or at its end),
    and the carried values assigned; returns whether the dot left a wgmma group in flight."""
    plan, region = loop.plan, loop.region
    bind_args(em, [loop.carried[i] for i in loop.main], targets)
    for staged in plan.loads:
        ring = em.stage_tiles[staged.op]
        em.tiles[staged.op.result] = ring.at_stage(em, stage, f"{em.name_of(staged.op.result)}_tile")
    staged_values = {staged.op.result for staged in plan.loads}
    # Staged loads have no registers to fill, and a tl.trans of one is only a different view of its tile.
    skip = {o for o in region.ops if o in plan.main_dead_ops or plan.is_staged(o)
            or (o.name == OpKind.PERMUTE and o.operands[0] in staged_values)}
    em.pending_prefetch = prefetch
    em.async_dot, em.async_dot_issued = plan.async_dot, False
    if plan.async_dot is not None:   # the other dots' waits retire its group: they pin its accumulator
        acc, acc_layout = targets[loop.main.index(plan.async_carried)]
        em.in_flight_acc = (acc.array, acc_layout.num_regs)
    em.prefetch_host = plan.async_dot or plan.refill_dot or next(
        (o for o in region.ops if o.name == OpKind.DOT and any(staged_view(em, x) for x in o.operands[:2])), None)
    em.refill_dot = plan.refill_dot
    em.last_line = None
    em.emit_region(region, skip)
    em.refill_dot = None
    # copies into the stage being read must follow the barrier of the dot that reads it whole
    assert plan.refill_dot is None or em.pending_prefetch is None, "the refill dot did not issue the copies"
    if em.pending_prefetch is not None:   # no dot took it
        em.write(em.pending_prefetch)
        em.pending_prefetch = None
    em.prefetch_host = None
    in_flight, em.async_dot, em.in_flight_acc = em.async_dot_issued, None, None
    em.last_line = None
    assign_yield(em, targets, [loop.yields[i] for i in loop.main], [loop.carried[i] for i in loop.main])
    return in_flight


def ring_loop(em, loop, targets, stage, top, prefetch, advance):
    """The loop of a ring: `top` lines first in each iteration, then the body reading stage `stage`, whose first
    dot issues the copies `prefetch(ivname)` writes, then the `advance` lines; after it, the last wgmma group."""
    iv, ct = loop.iv, loop.ct
    ivname = em.name_of(iv, "i")
    em.write(unroll_pragma(loop.op))
    em.write(f"for ({ct} {ivname} = {loop.lo}; {loop.condition(ivname)}; {ivname} += {loop.step}) {{")
    em.push_scope()
    em.indent += 1
    em.loop_depth += 1
    em.bind(iv, Read(scalar=ivname, ctype=ct), None)
    for line in top:
        em.write(line)
    with em.detached_text(indent=0):
        prefetch(ivname)
        copies = "\n".join(em.lines)
    in_flight = emit_body(em, loop, targets, stage, copies)
    for line in advance:
        em.write(line)
    for staged in loop.plan.loads:
        del em.tiles[staged.op.result]
    em.loop_depth -= 1
    em.indent -= 1
    em.pop_scope()
    em.write("}")
    finish_in_flight(em, loop, targets, in_flight)


def finish_in_flight(em, loop, targets, in_flight):
    if in_flight:
        acc, layout = targets[loop.main.index(loop.plan.async_carried)]
        em.write("tp::wgmma_wait<0>();  // the last iteration's wgmma group")
        em.write(f"tp::wgmma_pin<{layout.num_regs}>({acc.array});")


def _cp_async_comment(em, plan):
    lines = ", ".join(str(s.op.loc.line) for s in plan.loads if s.op.loc)
    em.write(f"// software pipeline, {plan.stages} stages: the loads on line(s) {lines} are copied to shared memory "
             f"{plan.distance} iteration(s) ahead (cp.async)")


def _cp_async_ring(em, loop, targets):
    op, plan = loop.op, loop.plan
    iv, carried, yields, ct, lo, step = loop.iv, loop.carried, loop.yields, loop.ct, loop.lo, loop.step
    stages, distance = plan.stages, plan.distance
    ahead = declare_carried(em, [op.results[i] for i in plan.prefetch_carried],
                            [op.operands[3 + i] for i in plan.prefetch_carried], suffix="_ahead")
    if stage_rings(em, plan):
        em.write("__syncthreads();  // earlier readers of the scratch space the stages reuse are done")

    # Prologue: the first S-1 iterations' copies.
    s = em.fresh("stage")
    iv_ahead = em.fresh(f"{iv.name or 'i'}_ahead")
    em.loop_depth += 1
    em.write(f"for (int {s} = 0; {s} < {distance}; ++{s}) {{")
    em.indent += 1
    em.write(f"const {ct} {iv_ahead} = {cexpr.add(lo, cexpr.mul(s, step))};")
    em.write(f"if ({loop.condition(iv_ahead)}) {{")
    em.indent += 1
    _prefetch(em, plan, iv, iv_ahead, ct, carried, ahead, yields, s)
    em.indent -= 1
    em.write("}")
    em.write("tp::cp_async_commit();  // one group per iteration, even an empty one")
    em.indent -= 1
    em.write("}")
    em.loop_depth -= 1

    # The loop.
    em.write(f"int {s} = 0;  // the stage this iteration reads")
    top = [f"tp::cp_async_wait<{distance - 1}>();  // this iteration's stage has landed (for this thread)"]
    if em.analysis.uses_wgmma and switch("TRANSPILER_WGMMA_CP_FENCE"):
        top.append("tp::fence_proxy_async();         // ... and is visible to the tensor cores' reads (wgmma)")
    if plan.refill_dot is not None:
        top.append("__syncthreads();                 // ... for every thread")
        refilled = s
    else:
        top.append("__syncthreads();                 // ... for every thread; and the stage refilled next is free")
        refilled = f"({s} + {distance}) % {stages}"

    # The copies for iteration i+S-1 go to the stage read in iteration i-1, which the barrier above freed;
    # they may be issued anywhere in the body: the first dot issues them after its first k step. A dot that reads
    # its whole stage into registers first (plan.refill_dot) issues the copies for iteration i+S into that stage,
    # after a barrier of its own.
    def prefetch(ivname):
        em.write("{")
        em.indent += 1
        em.write(f"const {ct} {iv_ahead} = {cexpr.add(ivname, cexpr.mul(distance, step))};")
        em.write(f"if ({loop.condition(iv_ahead)}) {{")
        em.indent += 1
        _prefetch(em, plan, iv, iv_ahead, ct, carried, ahead, yields, refilled)
        em.indent -= 1
        em.write("}")
        em.indent -= 1
        em.write("}")
        em.write("tp::cp_async_commit();")
    ring_loop(em, loop, targets, s, top, prefetch, [f"{s} = {s} + 1 == {stages} ? 0 : {s} + 1;"])
    em.write("tp::cp_async_wait<0>();")
    em.write("__syncthreads();  // the stage buffers may be reused from here on")
    em.smem.end_pipeline()
