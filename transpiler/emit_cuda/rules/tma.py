"""Lowering of a pipelined loop whose tiles the Tensor Memory Accelerator brings in (plan: analysis/tma.py).

One thread issues, per iteration, the boxes of every staged tile into the stage's buffers, all completing on
that stage's mbarrier (`tp::tma_load_2d`, templates/device_tma.cuh); everyone waits for the stage's phase:

    before:     thread 0 initialises one mbarrier per stage (one arrival each); barrier
    prologue:   for s < D: thread 0 announces the stage's bytes (arrive.expect_tx) and issues its boxes
    iteration:  wait for this stage's phase (parity flips each time the ring wraps); barrier (every warp is
                done with the stage refilled next); the body, whose first dot has thread 0 issue the boxes of
                iteration i+D into stage (s+D) % S while the tensor cores work
    after:      barrier; thread 0 invalidates the mbarriers (the next run of the loop initialises them again)

D is the TMA plan's distance: S-1. With a wgmma group in flight (`plan.refill_after_wait`) the barrier moves from
the top of the iteration to after the in-flight dot's `wgmma.wait_group 1`, and the boxes follow it: the stage of
iteration i-1 (= i+S-1 mod S) is then free in every warp. (Without that, S-2: the stage of i-2 before the dot.) No address slice runs: the box
origins are the affine forms' polynomials of the iteration count. Each kernel parameter `const __grid_constant__
tp::TensorMap` is one tensor map the host encodes per launch arguments (runtime/tensor_maps.py), described to
it by `em.tma_params`; `tma_ready` says whether all of them encoded.
"""
from __future__ import annotations

from ... import dtypes
from ...analysis.affine_tiles import ITER


def _spell(em, poly, iteration=None, ctype="int"):
    def name(key):
        if key == ITER:
            return f"({iteration})"
        value = poly.atoms[key]
        return f"static_cast<{ctype}>({em.scalar(value)})"
    return poly.spell(name)


def _slot(kernel, value):
    return next(i for i, a in enumerate(kernel.args) if a.value is value)


def _poly_json(kernel, poly):
    return [[coef, [_slot(kernel, poly.atoms[k]) for k in mono]] for mono, coef in poly.terms.items()]


def tensor_map_param(em, t):
    """The C name of the tensor map parameter of TMA load `t` (declared once), with its host description."""
    key = id(t)
    if key not in em.tma_maps:
        name = em.fresh(f"tma_{em.name_of(t.staged.op.result)}")
        kernel = em.kernel
        em.tma_maps[key] = name
        em.tma_params.append((f"const __grid_constant__ tp::TensorMap {name}", dict(
            base=_slot(kernel, t.base), dtype=t.staged.op.result.dtype.name,
            extents=[_poly_json(kernel, p) for p in t.extents], stride=_poly_json(kernel, t.stride),
            box=list(t.box), swizzle=t.span)))
    return em.tma_maps[key]


def tma_condition(em, plan):
    """C condition under which the TMA ring is exact: the host encoded every map, and the run-time guards hold."""
    em.uses_tma = True
    for t in plan.loads:
        tensor_map_param(em, t)
    if em.tma_ready is None:
        em.tma_ready = em.fresh("tma_ready")
    parts = [em.tma_ready] + [f"({_spell(em, g, ctype='long long')}) >= 0" for g in plan.guards]
    if plan.full_grid_only:
        parts.append("tp::grid_fills_sms()")
    em.tma_prefetch = em.tma_prefetch or plan.prefetch_maps
    return " && ".join(parts)


def _issue(em, loop, plan, bars, stage, iteration):
    """Thread 0's copies of iteration `iteration` into stage `stage`: expect the bytes, then every box."""
    bar = em.fresh("bar")
    em.write(f"unsigned long long* {bar} = &{bars}[{stage}];")
    em.write(f"tp::mbarrier_arrive_expect_tx({bar}, {plan.stage_bytes});  // the boxes below, OOB zeros included")
    for t in plan.loads:
        op = t.staged.op
        em.line_stack.append(op.loc.line if op.loc else None)
        em.last_line = None
        ring = em.stage_tiles[op]
        tile = ring.at_stage(em, stage, f"{em.name_of(op.result)}_next")
        inner, outer = (_spell(em, p, iteration) for p in t.origin)
        slab = t.box[0] * t.box[1]
        for j in range(t.slabs):
            dst = tile.base if j == 0 else f"{tile.base} + {j * slab}"
            x = inner if j == 0 else f"{inner} + {j * t.box[0]}"
            em.write(f"tp::tma_load_2d({dst}, &{tensor_map_param(em, t)}, {bar}, {x}, {outer});")
        em.line_stack.pop()
    em.last_line = em.line_stack[-1] if em.line_stack else None


def tma_ring(em, loop, targets, plan):
    from .pipeline import ring_loop, stage_rings   # pipeline.py imports this module lazily
    pipe = loop.plan
    stages, distance = pipe.stages, plan.distance
    iv, ct, lo, step = loop.iv, loop.ct, loop.lo, loop.step
    lines = ", ".join(str(t.staged.op.loc.line) for t in plan.loads if t.staged.op.loc)
    em.write(f"// TMA ring, {stages} stages: the tiles of line(s) {lines} are copied by the Tensor Memory "
             f"Accelerator {distance} iteration(s) ahead")
    bars = em.shared_buffer(dtypes.uint64, stages, "tma_bars", (loop.op, "mbarriers", 0))
    stage_rings(em, pipe)
    j = em.fresh("s")
    em.write("if (threadIdx.x == 0) {")
    em.write(f"  for (int {j} = 0; {j} < {stages}; ++{j}) tp::mbarrier_init(&{bars}[{j}], 1);")
    em.write("  tp::fence_mbarrier_init();")
    em.write("}")
    # Ordinary stores may have used these bytes before (an epilogue's scratch, the last tile of a persistent
    # loop): ordered before the copy engine's writes by a proxy fence in every thread, then the barrier.
    em.write("tp::fence_proxy_async();")
    em.write("__syncthreads();  // the barriers are initialised before anyone waits on them")

    s = em.fresh("stage")
    iv_ahead = em.fresh(f"{iv.name or 'i'}_ahead")
    em.write(f"for (int {s} = 0; {s} < {distance}; ++{s}) {{")
    em.indent += 1
    em.write(f"const {ct} {iv_ahead} = {lo} + {s} * {step};")
    em.write(f"if (threadIdx.x == 0 && {loop.condition(iv_ahead)}) {{")
    em.indent += 1
    _issue(em, loop, plan, bars, s, s)
    em.indent -= 1
    em.write("}")
    em.indent -= 1
    em.write("}")

    phase, count = em.fresh("phase"), em.fresh("iteration")
    em.write(f"int {s} = 0;  // the stage this iteration reads")
    em.write(f"unsigned {phase} = 0;  // the parity of its mbarrier's phase this time round the ring")
    em.write(f"int {count} = 0;")
    top = [f"tp::mbarrier_wait_parity(&{bars}[{s}], {phase});  // this iteration's tiles have landed"]
    free = "__syncthreads();  // every warp is done with the stage refilled next"
    if not plan.refill_after_wait:
        top.append(free)

    def prefetch(ivname):
        if plan.refill_after_wait:
            em.write(free)
        em.write("{")
        em.indent += 1
        em.write(f"const {ct} {iv_ahead} = {ivname} + {distance} * {step};")
        em.write(f"if (threadIdx.x == 0 && {loop.condition(iv_ahead)}) {{")
        em.indent += 1
        _issue(em, loop, plan, bars, f"({s} + {distance}) % {stages}", f"{count} + {distance}")
        em.indent -= 1
        em.write("}")
        em.indent -= 1
        em.write("}")
    em.refill_after_wait = plan.refill_after_wait
    ring_loop(em, loop, targets, s, top, prefetch, [f"if (++{s} == {stages}) {{ {s} = 0; {phase} ^= 1; }}",
                                                    f"++{count};"])
    em.refill_after_wait = False
    em.write("__syncthreads();  // every wait is done: the stage buffers and barriers may be reused")
    em.write("if (threadIdx.x == 0) {")
    em.write(f"  for (int {j} = 0; {j} < {stages}; ++{j}) tp::mbarrier_inval(&{bars}[{j}]);")
    em.write("}")
    em.smem.end_pipeline()


__all__ = ["tma_condition", "tma_ring", "tensor_map_param"]
