"""TMA staging: which pipelined loops bring their tiles in by the Tensor Memory Accelerator (sm_90a).

Decides, for each loop the pipelining pass staged (pipelining.py) in a kernel whose dots run on warpgroup MMA,
whether every staged load is an *affine tile* the copy engine can fetch as boxes of a 2-D tensor map, from the
affine forms of its pointer block and mask (affine_tiles.py):

- the pointer block is `base + (t_r + i_r) * S + (t_c + i_c)`: `base` a pointer argument, the tile's row
  dimension (the one contiguous in shared memory, col_dim) with unit stride, the other with a stride `S` of
  kernel arguments; `t_r`, `t_c` (the box origin) polynomials in scalars and the iteration count;
- per dimension an extent `E` of kernel arguments such that TMA's in-bounds test `0 <= t + i < E` is exactly
  the load's mask (`other` +0: TMA writes zeros outside), or, with no mask on it, a dimension whose index wraps
  (`(s + i) % M`, exact under a run-time guard) with extent M;
- the base pointer 16-byte aligned and `S` times the element size a multiple of 16, both proved from the
  specialization (`divisibility` of the arguments);
- the tile's rows are 32, 64 or 128 bytes, or 128-byte slabs of longer rows: the box is one slab, in the
  128/64/32-byte swizzle that the wgmma descriptors of the same tile read (tiles.py, wgmma.py).

Conditions only known at run time (a wrap guard, an origin that must not be negative) become one guard the
kernel evaluates before the loop; the host adds whether every tensor map encoded (runtime/tensor_maps.py). The
loop is emitted twice, the TMA ring when the guard holds and the cp.async ring otherwise, so nothing the
proof could not cover changes behaviour. `TRANSPILER_TMA=0` keeps the cp.async ring only.

With TMA and at least 4 stages the loop's wgmma group stays in flight into the next iteration where its dot
allows it (pipelining.keep_in_flight; `TRANSPILER_TMA_IN_FLIGHT=0` waits for it in its own iteration). The cp.async
version of the loop then copies one stage less far ahead (S-2: every warp issues copies, into the stage of i-2,
freed by the barrier at the top of iteration i). The TMA ring keeps the full distance S-1 (`refill_after_wait`):
its one issuing thread refills the stage of iteration i-1 after the wait that retires i-1's group and a barrier
that says every warp has passed that wait. With one program per SM (small grids: 1024^3 at 128x128 tiles is 64
programs) the copies are the only thing hiding the memory latency, and S-2 left one iteration fewer of it in
flight (`TRANSPILER_TMA_REFILL_AFTER_WAIT=0` gives back S-2).

Thread 0 prefetches the tensor maps at kernel entry (`prefetch_maps`), so the copy engine's descriptor fetch
overlaps the index arithmetic instead of delaying the first box: ncu on the H200, 1024^3 fp16 (64 programs, one
per SM, 32 iterations) 12.2 -> 11.8 us, 2048^3 unchanged (`TRANSPILER_TMA_PREFETCH=0` leaves it out). Keeping
grids under one program per SM on the cp.async ring (`TRANSPILER_TMA_FULL_GRID=1`, a guard on %nsmid) measured
no gain and is off.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..targets import switch
from .affine_tiles import ITER, LoopForms, Poly
from .pipelining import keep_in_flight

SWIZZLE_SPANS = (32, 64, 128)          # bytes per box row the tensor map's swizzle modes cover
# A wgmma group in flight makes the copies run one stage less far ahead: measured +2-10% with 4 stages (2 ahead),
# -20% with 3 (1 ahead) on the H200 (bench/NOTES.md), so only from 4 stages on.
IN_FLIGHT_MIN_STAGES = 4


@dataclass
class TmaLoad:
    staged: object               # pipelining.StagedLoad
    base: object                 # the pointer argument (IR value)
    extents: tuple               # (inner, outer) Polys of kernel arguments, elements
    stride: Poly                 # elements between rows (outer dimension)
    origin: tuple                # (inner, outer) Polys of the box origin, in scalars and ITER
    box: tuple                   # (inner elements, rows) of one box
    slabs: int                   # boxes per tile along the inner dimension
    span: int                    # bytes of a box row: the swizzle

    @property
    def tile_bytes(self):
        return self.box[0] * self.box[1] * self.slabs * self.staged.op.result.dtype.itemsize


@dataclass
class TmaPlan:
    loop: object
    loads: list
    guards: list = field(default_factory=list)     # Polys that must be >= 0 (loop-invariant scalars)
    distance: int = 0              # iterations the boxes run ahead of their use
    full_grid_only: bool = False   # the ring runs only where the grid has a program per SM (else cp.async)
    prefetch_maps: bool = False    # thread 0 prefetches the maps at kernel entry (their first box waits less)
    refill_after_wait: bool = False  # the refill of a stage follows the wgmma wait retiring it (group in flight)

    @property
    def stage_bytes(self):
        return sum(t.tile_bytes for t in self.loads)


class NotAffine(Exception):
    pass


def _divisibility(poly, kernel):
    div = {a.value.id: a.divisibility for a in kernel.args}
    best = None
    for mono, coef in poly.terms.items():
        d = coef & -coef if coef else 1 << 30
        for k in mono:
            d *= div.get(k, 1)
        best = d if best is None else min(best, d)
    return best or 1 << 30


def _host_only(poly, args, what):
    if any(k not in args for k in poly.keys()):
        raise NotAffine(f"the {what} ({poly!r}) is not computed from the kernel's arguments alone")


def _nonnegative(poly, guards, what):
    """Require `poly >= 0`: statically when it is a constant, else as a run-time guard (it must not change
    inside the loop)."""
    if poly.is_const:
        if poly.value < 0:
            raise NotAffine(f"the {what} is negative")
        return
    if ITER in poly.keys():
        raise NotAffine(f"the {what} ({poly!r}) changes from one iteration to the next")
    guards.append(poly)


def _tile(forms, kernel, staged, guards):
    op = staged.op
    v = op.result
    es = v.dtype.itemsize
    if len(v.shape) != 2:
        raise NotAffine("the tile is not 2-D")
    ptr = forms.form(op.operands[0])
    if ptr is None or ptr.base is None:
        raise NotAffine("its pointer block is not an affine tile of one pointer argument")
    if ptr.base not in forms.args:
        raise NotAffine("its base pointer is not a kernel argument")
    inner, outer = staged.col_dim, 1 - staged.col_dim
    if ptr.coefs.get(inner) != Poly.const(1):
        raise NotAffine(f"dimension {inner} (contiguous in shared memory) does not have unit stride")
    stride = ptr.coefs.get(outer)
    if stride is None or stride.is_const or len(stride.terms) != 1:
        raise NotAffine(f"the stride of dimension {outer} is not a kernel argument (times a constant)")
    args = {a.value.id for a in kernel.args}
    _host_only(stride, args, "row stride")
    ((mono, coef),) = stride.terms.items()
    t_outer, t_inner = ptr.const.divide_monomial(mono, coef)
    arg = next(a for a in kernel.args if a.value is ptr.base)
    if arg.divisibility < 16:
        raise NotAffine(f"the base pointer '{arg.name}' is not known to be 16-byte aligned")
    if _divisibility(stride, kernel) * es % 16:
        raise NotAffine(f"the row stride ({stride!r}) times {es} bytes is not known to be a multiple of 16")

    bounds = None
    if len(op.operands) > 1:
        if not staged.zero_fill:
            raise NotAffine("its masked-off elements are not +0 (TMA fills zeros)")
        bounds = forms.bounds(op.operands[1])
        if bounds is None:
            raise NotAffine("its mask is not a bound on each index")
    extents = {}
    for d, t in ((inner, t_inner), (outer, t_outer)):
        upper = bounds.upper.get(d) if bounds else None
        lower = bounds.lower.get(d) if bounds else None
        if upper is not None:
            extent = upper + t
            _host_only(extent, args, f"extent of dimension {d}")
            if lower is not None:
                if lower + t != Poly():
                    raise NotAffine(f"the lower bound of its mask on dimension {d} is not the tensor's start")
            else:
                split = t.split_by(ITER)
                if split is None:
                    raise NotAffine(f"the origin of dimension {d} is not linear in the iteration")
                _nonnegative(split[0], guards, f"first origin of dimension {d}")
                _nonnegative(split[1], guards, f"step of dimension {d}")
        else:
            if lower is not None:
                raise NotAffine(f"its mask bounds dimension {d} from below only")
            wrap = next((w for w in ptr.wraps if w[0] == t and w[1] == v.shape[d]), None)
            if wrap is None:
                raise NotAffine(f"dimension {d} has no bound (neither a mask nor a wrap-around) to take the "
                                "tensor's extent from")
            start, size, modulus = wrap
            extent = modulus
            _host_only(extent, args, f"extent of dimension {d}")
        extents[d] = extent
    for start, size, modulus in ptr.wraps:          # every wrap must be the identity for the boxes to be right
        _nonnegative(start, guards, "first index of a wrapped dimension")
        _nonnegative(modulus - start - Poly.const(size), guards, "room left before the wrap-around")

    row_bytes = v.shape[inner] * es
    span = min(row_bytes, 128)
    if span not in SWIZZLE_SPANS or row_bytes % span or v.shape[outer] > 256:
        raise NotAffine(f"its {row_bytes}-byte rows do not split into 32, 64 or 128-byte boxes of at most 256 rows")
    return TmaLoad(staged, ptr.base, (extents[inner], extents[outer]), stride, (t_inner, t_outer),
                   (span // es, v.shape[outer]), row_bytes // span, span)


def _refill_after_wait(plan, pipe, decisions):
    """With the loop's wgmma group in flight, whether the TMA ring still copies S-1 iterations ahead (see the
    module docstring): the stage of iteration i-1 is refilled once the wait in iteration i has retired its group."""
    if not switch("TRANSPILER_TMA_REFILL_AFTER_WAIT"):
        plan.distance = pipe.distance
        return
    plan.refill_after_wait, plan.distance = True, pipe.stages - 1
    decisions.add("tma", plan.loop, f"boxes issued {plan.distance} iteration(s) ahead, after the wgmma wait",
                  "the group left in flight is the only one pending after the wait, so the stage of the previous "
                  "iteration is free once every warp has passed it (one barrier); the cp.async version copies "
                  f"{pipe.distance} ahead")


def plan_tma(kernel, pipelines, dots, decisions, target):
    """loop -> TmaPlan for the pipelined loops whose staged loads are all affine tiles (sm_90a, wgmma)."""
    plans = {}
    if target != "sm_90a" or not any(p.kind == "wgmma" for p in dots.values()):
        return plans
    for loop, pipe in pipelines.items():
        if not switch("TRANSPILER_TMA"):
            decisions.add("tma", loop, "tiles copied by cp.async, not TMA", "TRANSPILER_TMA=0")
            continue
        if pipe.refill_dot is not None:
            decisions.add("tma", loop, "tiles copied by cp.async, not TMA",
                          "its mma.sync dot reads each stage into registers, refilled by cp.async")
            continue
        forms = LoopForms(kernel, loop)
        guards, loads = [], []
        try:
            for staged in pipe.loads:
                try:
                    loads.append(_tile(forms, kernel, staged, guards))
                except NotAffine as e:
                    line = staged.op.loc.line if staged.op.loc else "?"
                    raise NotAffine(f"the load on line {line}: {e}") from None
        except NotAffine as e:
            decisions.add("tma", loop, "tiles copied by cp.async, not TMA", str(e))
            continue
        plan = TmaPlan(loop, loads, guards, distance=pipe.distance, full_grid_only=switch("TRANSPILER_TMA_FULL_GRID"),
                       prefetch_maps=switch("TRANSPILER_TMA_PREFETCH"))
        plans[loop] = plan
        what = ", ".join(f"line {t.staged.op.loc.line if t.staged.op.loc else '?'} ({t.slabs} box(es) of "
                         f"{t.box[1]}x{t.box[0]}, {t.span}-byte swizzle)" for t in loads)
        conditions = [f"{g!r} >= 0" for g in guards] + (["a program per SM"] if plan.full_grid_only else [])
        guard = f"; run-time guard: {' && '.join(conditions)}, else the cp.async ring" if conditions else ""
        decisions.add("tma", loop, f"TMA + mbarrier ring, {pipe.stages} stages, for the loads on {what}",
                      f"each is an affine tile of a pointer argument whose mask is the tensor's bounds "
                      f"({plan.stage_bytes} bytes per stage){guard}")
        if plan.prefetch_maps:
            decisions.add("tma", loop, "tensor maps prefetched by thread 0 at kernel entry",
                          "their descriptors' fetch then overlaps the index arithmetic instead of delaying the first "
                          "box (H200, 1024^3 fp16: 12.2 -> 11.8 us)")
        if switch("TRANSPILER_TMA_IN_FLIGHT") and pipe.stages >= IN_FLIGHT_MIN_STAGES:
            keep_in_flight(pipe, dots, decisions, f"its tiles come by TMA, {pipe.stages} stages deep")
        if pipe.async_dot is not None:       # in flight by the rule above, or a chain of dots (pipelining.py)
            _refill_after_wait(plan, pipe, decisions)
    return plans


__all__ = ["TmaLoad", "TmaPlan", "plan_tma"]
