"""The shared-memory plan: every buffer of a kernel in its one dynamic buffer `tp_smem`, with its bytes, its
alignment and where it lives, decided here and only spelled by the emitter.

Three kinds of space, by lifetime:
- *persistent*: a buffer of its own for the whole kernel (cross-warp reduction and scan scratch, a loop-invariant
  dot operand's tile), laid out first, each rounded to 16 bytes;
- *stages*: the rings of a pipelined loop, alive from its prologue to its end, after the persistent ones;
- *scratch*: one layout conversion's or one dot's operands' bytes, dead as soon as they are read back. Every
  scratch use starts at the same offset (after a barrier): outside a pipelined loop it reuses the stage rings'
  bytes, inside one it follows them.
Stage rings and scratch are aligned to 128 bytes (1024 with warpgroup MMA, whose swizzled tiles start on 1024-byte
boundaries; so are loop-invariant operand tiles then, which wgmma reads in place). A new kind of buffer is one more
`Buffer` with its kind and alignment; a TMA ring's mbarriers (one 8-byte object per stage, tma.py) are a
persistent buffer of the loop.

`plan_shared_memory` walks the kernel in program order, the order the emitter spells it, and plans the buffers
the IR and the other passes decide: the cross-warp scratch of each reduction and scan (from its layout), the
loop-invariant dot operand tiles (`invariant_operands.py`), the stage rings of each pipelined loop
(`pipelining.py`), each a `Buffer` keyed by (op or value, role, index). `scratch_plan.py` then adds the scratch
uses (layout conversions, dot operands held in registers, atomics' old values, gathers' sources), the padding of
a conversion buffer from `bank_padding.py`; the emitter only names and spells what the plan holds.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

from ..dtypes import accumulate_type, uint64
from ..parse.ir import LOOPS, OpKind
from ..targets import switch
from .invariant_operands import invariant_dot_operands

PERSISTENT, STAGES, SCRATCH = "persistent", "stages", "scratch"
ALIGN = 128
WGMMA_ALIGN = 1024      # warpgroup MMA reads tiles whose swizzle atoms start on 1024-byte boundaries
PERSISTENT_ALIGN = 16


@dataclass
class Buffer:
    """One buffer of the plan. `offset` is a C expression of the plan's base constants (`tp_smem_stage`,
    `tp_smem_scratch_in_loop`), fixed once every buffer is known; `name` is the C name the emitter gave it."""

    kind: str
    nbytes: int
    purpose: str
    dtype: object = None    # element type (None: bytes the emitter types itself)
    count: int = 0          # elements
    offset: str = "0"
    name: str = ""
    ctype: str = ""         # the C element type the emitter declared it with, for reports
    key: tuple = ()
    value: object = None    # the IR value it holds (or whose operation it serves), for reports


class SharedMemoryPlan:
    """Buffers and their offsets in `tp_smem`. Analysis adds what it decides (`persistent`, `stage` rings inside
    `begin_pipeline`/`end_pipeline`, `plan_scratch`); the emitter takes the planned buffers by key (`planned`,
    `begin_scratch`) and keeps, in its own fork, which barriers the order it spells them in needs."""

    def __init__(self, align=ALIGN):
        self.align = align
        self.persistent_bytes = 0
        self.stage_bytes = 0          # the current pipelined loop's rings
        self.max_stage_bytes = 0
        self.in_pipeline = False
        self.max_scratch = 0          # the largest scratch use outside pipelined loops
        self.scratch_uses: dict = {}  # scratch key (scratch_plan.py) -> its buffers
        self.max_scratch_in_pipeline = 0
        self.scratch_used = False     # (emission) whether a scratch use was spelled yet
        self.scratch_held_by = None   # (emission) the use whose bytes are still to be read (a dot's operand tiles)
        self.buffers: list = []       # every Buffer, in the order they were planned
        self.by_key: dict = {}
        self.declared: list = []      # the buffers the emitter declared, in its order
        # Cross-warp reductions inside a loop whose write needs no barrier before it (`_unguarded_reductions`).
        self.unguarded_reductions: set = set()

    def fork(self) -> "SharedMemoryPlan":
        """A copy for one emission to name its buffers in (the analysis' plan stays as planned)."""
        other = copy.copy(self)
        copies = {id(b): dataclasses.replace(b) for b in self.buffers}
        other.buffers = [copies[id(b)] for b in self.buffers]
        other.by_key = {b.key: b for b in other.buffers if b.key}
        other.scratch_uses = {k: [copies[id(b)] for b in use] for k, use in self.scratch_uses.items()}
        other.declared = []
        return other

    def declare(self, buffer, name, ctype):
        """Record the C name and element type the emitter declared `buffer` with."""
        buffer.name, buffer.ctype = name, ctype
        self.declared.append(buffer)

    def _align(self, n):
        return (n + self.align - 1) // self.align * self.align

    def _add(self, buffer):
        self.buffers.append(buffer)
        if buffer.key:
            self.by_key[buffer.key] = buffer
        return buffer

    def planned(self, key) -> Buffer:
        """The buffer analysis planned for `key` (an internal error when it planned none: the emitter spells
        only what the plan holds)."""
        if key not in self.by_key:
            raise AssertionError(f"no shared-memory buffer planned for {key!r}")
        return self.by_key[key]

    # -- persistent ----------------------------------------------------------------------------------------
    def persistent(self, nbytes, purpose, dtype=None, count=0, key=(), align=PERSISTENT_ALIGN, value=None) -> Buffer:
        offset = (self.persistent_bytes + align - 1) // align * align
        self.persistent_bytes = offset + (nbytes + PERSISTENT_ALIGN - 1) // PERSISTENT_ALIGN * PERSISTENT_ALIGN
        return self._add(Buffer(PERSISTENT, nbytes, purpose, dtype, count, str(offset), key=key, value=value))

    # -- stage rings ---------------------------------------------------------------------------------------
    def begin_pipeline(self, in_loop=False) -> bool:
        """Start a loop's stage rings; whether a barrier must come before their first copies: the stages reuse
        the scratch bytes, which a use earlier in the program, or later in an enclosing loop's previous
        iteration (a persistent kernel's epilogue), may still be reading."""
        self.in_pipeline, self.stage_bytes = True, 0
        return self.scratch_used or in_loop

    def end_pipeline(self):
        self.in_pipeline = False

    def stage(self, nbytes, purpose, dtype=None, count=0, key=(), value=None) -> Buffer:
        offset = self.stage_bytes
        self.stage_bytes += self._align(nbytes)
        self.max_stage_bytes = max(self.max_stage_bytes, self.stage_bytes)
        text = f"tp_smem_stage + {offset}" if offset else "tp_smem_stage"
        return self._add(Buffer(STAGES, nbytes, purpose, dtype, count, text, key=key, value=value))

    # -- scratch -------------------------------------------------------------------------------------------
    def plan_scratch(self, key, requests, in_pipeline) -> list:
        """One scratch use (scratch_plan.py): its buffers [(dtype, count, purpose, value)] from the scratch base
        (`tp_smem_scratch_in_loop` inside a pipelined loop, else `tp_smem_stage`), each aligned."""
        base = "tp_smem_scratch_in_loop" if in_pipeline else "tp_smem_stage"
        offset, buffers = 0, []
        for i, (dtype, count, purpose, value) in enumerate(requests):
            nbytes = count * dtype.itemsize
            buffers.append(self._add(Buffer(SCRATCH, nbytes, purpose, dtype, count,
                                            f"{base} + {offset}" if offset else base, key=(*key, i), value=value)))
            offset += self._align(nbytes)
        if in_pipeline:
            self.max_scratch_in_pipeline = max(self.max_scratch_in_pipeline, offset)
        else:
            self.max_scratch = max(self.max_scratch, offset)
        self.scratch_uses[key] = buffers
        return buffers

    def begin_scratch(self, key, in_loop) -> tuple:
        """The emitter starts the planned scratch use `key`: its buffers, and whether a barrier must come first
        (earlier readers may still be reading). An internal error when analysis planned no such use, or while an
        earlier use holds the bytes: this one would overwrite what that one reads."""
        if key not in self.scratch_uses:
            raise AssertionError(f"no scratch shared memory planned for {key[:2]!r}: analysis/scratch_plan.py and "
                                 "the lowering rules disagree")
        if self.scratch_held_by is not None:
            raise AssertionError(f"scratch shared memory claimed while the {self.scratch_held_by} still hold it")
        barrier = self.scratch_used or in_loop
        self.scratch_used = True
        return self.scratch_uses[key], barrier

    def hold_scratch(self, holder: str):
        """The bytes of the current scratch use stay live (until `release_scratch`) past the next statements: a
        dot's operand tiles, read by the product emitted after them."""
        self.scratch_held_by = holder

    def release_scratch(self):
        self.scratch_held_by = None

    # -- totals --------------------------------------------------------------------------------------------
    def stage_base(self) -> int:
        return self._align(self.persistent_bytes)

    def total_bytes(self) -> int:
        stage_base = self.stage_base()
        in_loop = stage_base + self.max_stage_bytes
        return max(stage_base + self.max_scratch, in_loop + self.max_scratch_in_pipeline, self.persistent_bytes)

    def constants(self) -> list:
        """The base constants the offsets are written in: [(C name, bytes)]."""
        stage_base = self.stage_base()
        out = [("tp_smem_stage", stage_base)] if self.max_stage_bytes or self.max_scratch else []
        if self.max_scratch_in_pipeline:
            out.append(("tp_smem_scratch_in_loop", stage_base + self.max_stage_bytes))
        return out

    def unspelled_scratch(self) -> tuple:
        """The planned scratch uses the emission spelled no buffer of (a plan larger than the kernel needs)."""
        spelled = {b.key[:-1] for b in self.declared if b.kind == SCRATCH}
        return tuple(key for key in self.scratch_uses if key not in spelled)

    def report(self) -> tuple:
        """(name, C type, count, bytes, purpose) of each buffer the emitter declared, for reports."""
        return tuple((b.name, b.ctype, b.count, b.nbytes, b.purpose) for b in self.declared)


# -- planning from the IR ---------------------------------------------------------------------------------
def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def reduction_slots(op, layouts):
    """(warp groups, slots per group) of a reduction that crosses warps, or None when it stays in a warp."""
    src = layouts.reduce_input[op]
    axis = op.attrs["axis"]
    warp_bits = [i for i, b in enumerate(src.warp) if b[axis]]
    if not warp_bits:
        return None
    out = src.drop_dims([axis])
    return 1 << len(warp_bits), max(out.shape and _numel(out.shape) or 1, 1)


def scan_slots(op, layouts):
    """Slots of a scan's cross-warp totals ([chunk][warp along the axis][other element]), or None."""
    plan = layouts.scan_plan[op]
    if not plan.warp_bits:
        return None
    others = plan.layout.drop_dims([plan.axis])
    return (1 << len(plan.hi_regs)) * (1 << len(plan.warp_bits)) * _numel(others.shape)


class _Planner:
    def __init__(self, layouts, pipelines, uses_wgmma, tma=None):
        self.layouts, self.pipelines, self.uses_wgmma = layouts, pipelines, uses_wgmma
        self.tma = tma or {}      # loop -> TmaPlan (tma.py): its ring's mbarriers are planned too
        self.plan = SharedMemoryPlan(WGMMA_ALIGN if uses_wgmma else ALIGN)
        self.staged = []          # staged load results of the pipelined loops being walked
    def region(self, region, skip=()):
        for op in region.ops:
            if op not in skip:
                self.op(op)

    def op(self, op):
        if op.name == OpKind.REDUCE:
            self.reduction(op)
        elif op.name == OpKind.SCAN:
            self.scan(op)
        elif op.name in LOOPS:
            self.loop(op)
            return
        for region in op.regions:
            self.region(region)

    def reduction(self, op):
        slots = reduction_slots(op, self.layouts)
        if slots is None:
            return
        elems = [v.dtype for v in op.operands]
        accs = elems if op.attrs["combine"] == "custom" else [accumulate_type(elems[0])] + elems[1:]
        for i, dt in enumerate(accs):
            count = slots[0] * slots[1]
            self.plan.persistent(count * dt.itemsize, "cross-warp reduction", dt, count,
                                 key=(op, "reduce", i), value=op.results[min(i, len(op.results) - 1)])

    def scan(self, op):
        count = scan_slots(op, self.layouts)
        if count is None:
            return
        elems = [v.dtype for v in op.operands]
        accs = elems if op.attrs["combine"] == "custom" else [accumulate_type(d) for d in elems]
        for i, dt in enumerate(accs):
            self.plan.persistent(count * dt.itemsize, "totals of warps and register chunks of a scan",
                                 dt, count, key=(op, "scan", i), value=op.results[min(i, len(op.results) - 1)])

    def _is_staged(self, value):
        owner = value.owner
        return value in self.staged or (getattr(owner, "name", None) == OpKind.PERMUTE
                                        and owner.operands[0] in self.staged)

    def loop(self, op):
        for value, _ in invariant_dot_operands(op):
            key = (value, "invariant operand", 0)
            if not self._is_staged(value) and key not in self.plan.by_key:
                # wgmma reads the tile with its swizzle atoms on 1024-byte boundaries, like the stage rings
                self.plan.persistent(value.type.numel * value.dtype.itemsize, "loop-invariant dot operand",
                                     value.dtype, value.type.numel, key=key, value=value,
                                     align=WGMMA_ALIGN if self.uses_wgmma else PERSISTENT_ALIGN)
        pipeline = self.pipelines.get(op) if op.name == OpKind.FOR else None
        if op.name == OpKind.FOR:
            self.plan.unguarded_reductions |= _unguarded_reductions(op.regions[0], self.layouts)
        if pipeline is None:
            for region in op.regions:
                self.region(region)
            return
        if op in self.tma:
            self.plan.persistent(8 * pipeline.stages, "mbarriers of a TMA ring", uint64, pipeline.stages,
                                 key=(op, "mbarriers", 0))
        self.plan.begin_pipeline()
        for staged in pipeline.loads:
            v = staged.op.result
            count = v.type.numel * pipeline.stages
            self.plan.stage(count * v.dtype.itemsize, "pipeline stages of a loop", v.dtype, count,
                            key=(staged.op, "stages", 0), value=v)
        region = op.regions[0]
        staged_values = {staged.op.result for staged in pipeline.loads}
        skip = {o for o in region.ops if o in pipeline.main_dead_ops or pipeline.is_staged(o)
                or (o.name == OpKind.PERMUTE and o.operands[0] in staged_values)}
        self.staged += list(staged_values)
        self.region(region, skip)
        del self.staged[-len(staged_values):]
        self.plan.end_pipeline()


def _unguarded_reductions(body, layouts) -> set:
    """The cross-warp reductions of a loop body that need no barrier before writing their buffer.

    Each such reduction writes its own persistent buffer, then a barrier, then every warp reads it; in a loop the
    next iteration's write must wait until every warp has read. When the body holds two or more of them outside
    any `if` or inner loop, the path from one's reads to its next write passes another one's barrier, which no
    warp passes before every warp has done those reads: that barrier already orders them. (A softmax row loop
    keeps two barriers per row instead of four.)"""
    if switch("TRANSPILER_LOOP_REDUCTION_BARRIER"):
        return set()
    crossing = [op for op in body.ops if op.name == OpKind.REDUCE and reduction_slots(op, layouts) is not None]
    return set(crossing) if len(crossing) >= 2 else set()


def plan_shared_memory(kernel, layouts, pipelines, uses_wgmma, tma=None, row_ring=None) -> SharedMemoryPlan:
    """The buffers the IR and the other passes decide, in the order the emitter meets them (`tma`: the loops
    tma.py stages by TMA, which also need one mbarrier per stage; `row_ring`: the slots of a row loop's rows
    ahead, row_ring.py, each thread's own bytes for the whole kernel)."""
    planner = _Planner(layouts, pipelines, uses_wgmma, tma)
    for ring in (row_ring.loads if row_ring else ()):
        planner.plan.persistent(ring.count * ring.dtype.itemsize, "rows ahead of a row loop (cp.async ring)",
                                ring.dtype, ring.count, key=(ring.arg, "row ring", 0), align=ALIGN,
                                value=ring.arg)
    planner.region(kernel.body)
    return planner.plan


__all__ = ["SharedMemoryPlan", "Buffer", "plan_shared_memory", "reduction_slots", "scan_slots", "ALIGN",
           "WGMMA_ALIGN", "PERSISTENT", "STAGES", "SCRATCH"]
