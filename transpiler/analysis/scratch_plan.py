"""The scratch uses of the shared-memory plan: which block values the lowering rules read in a layout other than
their own that no register permutation reaches (a layout conversion through shared memory), which dot operands
held in registers are written to tiles, which atomics hand their old values to every thread and which gathers
read their source back. Decided from the layouts the other passes chose, before anything is spelled.

Each lowering rule reads its operands in layouts fixed by analysis: a load or store in its memory layout, a
reduction in its input layout, a scan in its plan's, a dot's accumulator in the product's layout (and a
register-A operand in the fragment layout), a gather's source and index in theirs, a carried value in the loop's,
a shape op's operand in the layout its own layout implies (`OPERAND_LAYOUTS`), anything else in its result's
layout. A flexible value (layout_assignment.py) is computed in the layout of each use, so its operands are read
in layouts derived from that one, recursively; a fixed value read in another layout costs a conversion unless
`register_map` moves it between registers of the same threads. This walk visits the ops the emitter lowers (in a
pipelined loop: the body but its staged loads and what only they needed, the address slice, the copies), notes
whether each use lies inside a pipelined loop (its scratch follows the stage rings there) and plans one scratch
buffer per distinct use (`SharedMemoryPlan.plan_scratch`). The emitter takes them by key (`scratch_key`); one
it did not find here is an internal error, so the two cannot drift apart silently.
"""
from __future__ import annotations

from ..parse.ir import OpKind
from . import conversion_chunks
from .bank_padding import conversion_padding
from .invariant_operands import invariant_dot_operands, operands_of_inner_loops
from .layout_assignment import default_layout, operand_tile_layout
from .layouts import linear_register_map, register_map


def conversion_needed(own, layout) -> bool:
    """Whether a value held in `own` read in `layout` goes through shared memory (no register map between them)."""
    if own == layout:
        return False
    mapping = register_map(layout, own)
    return mapping is None or linear_register_map(mapping) is None


def conversion_elements(value, own, layout) -> int:
    """Elements of one conversion's buffer: a chunk's elements plus each row's bank padding (bank_padding.py)."""
    chunks = conversion_chunks.plan(own, layout, value.dtype.itemsize)
    pad = conversion_padding(chunks.squeeze(own), chunks.squeeze(layout), value.dtype)
    numel = value.type.numel // chunks.count
    return numel + numel // chunks.squeeze(own).shape[-1] * pad


def scratch_key(what, *parts):
    """The key of a scratch use: ("convert", value, layout, in a pipelined loop), ("dot", op), ("atomic", op) or
    ("gather", op)."""
    return (what, *parts)


def _permute_source(op, layout):
    order = op.attrs["order"]
    return layout.permute([order.index(d) for d in range(len(order))])


def _broadcast_source(op, layout):
    src = op.operands[0]
    dims = [d for d, (a, b) in enumerate(zip(src.shape, op.result.shape)) if a != b]
    return layout.zero_dims(dims, src.shape)


# The layout a shape op reads its operand in, given its result's layout (emit_cuda/rules/values.py spells them).
OPERAND_LAYOUTS = {
    OpKind.BROADCAST: _broadcast_source,
    OpKind.EXPAND_DIMS: lambda op, layout: layout.drop_dims([op.attrs["axis"]]),
    OpKind.PERMUTE: _permute_source,
    OpKind.RESHAPE: lambda op, layout: layout.reshape(op.operands[0].shape),
}


class _Walk:
    def __init__(self, kernel, analysis, warps):
        self.kernel, self.a, self.layouts, self.warps = kernel, analysis, analysis.layouts, warps
        self.plan = analysis.shared_memory
        self.in_pipeline = False
        self.computed = set()      # (flexible value, layout, in pipeline) already walked
        self.tiles = []            # per open loop or if: the values read from tiles there (staged, hoisted)
        self.uses = {}             # scratch key -> (in a pipelined loop, [(dtype, count, purpose, value)])

    # -- reads ---------------------------------------------------------------------------------------------
    def read(self, v, layout):
        if not v.shape or layout is None:
            return
        if v in self.layouts.flexible:
            key = (v, layout, self.in_pipeline)
            if key not in self.computed:
                self.computed.add(key)
                self.lower(v.owner, layout)
            return
        own = self.layouts.layout.get(v)
        if own is None or not conversion_needed(own, layout):
            return
        key = scratch_key("convert", v, layout, self.in_pipeline)
        self.use(key, [(v.dtype, conversion_elements(v, own, layout), "layout conversion", v)])

    def use(self, key, requests):
        self.uses.setdefault(key, (self.in_pipeline, requests))

    def in_tile(self, v):
        owner = v.owner
        held = set().union(*self.tiles) if self.tiles else set()
        return v in held or (getattr(owner, "name", None) == OpKind.PERMUTE and owner.operands[0] in held)

    # -- ops -----------------------------------------------------------------------------------------------
    def lower(self, op, layout):
        kind = op.name
        if kind in OPERAND_LAYOUTS:
            if op.operands[0].shape:
                self.read(op.operands[0], OPERAND_LAYOUTS[kind](op, layout))
        elif kind in (OpKind.LOAD, OpKind.STORE):
            self.memory(op)
        elif kind == OpKind.REDUCE:
            for v in op.operands:
                self.read(v, self.layouts.reduce_input[op])
        elif kind == OpKind.SCAN:
            for v in op.operands:
                self.read(v, self.layouts.scan_plan[op].layout)
        elif kind == OpKind.DOT:
            self.dot(op)
        elif kind in (OpKind.ATOMIC_RMW, OpKind.ATOMIC_CAS):
            self.atomic(op, layout)
        elif kind == OpKind.GATHER:
            self.read(op.operands[0], self.layouts.gather_source[op])
            self.read(op.operands[1], self.layouts.layout[op.result])
            src = op.operands[0]
            self.use(scratch_key("gather", op), [(src.dtype, src.type.numel, "tl.gather's source", src)])
        elif kind in (OpKind.DEVICE_PRINT, OpKind.DEVICE_ASSERT):
            blocks = [v for v in op.operands if v.shape]
            if blocks:
                lay = self.layouts.layout.get(blocks[0]) or default_layout(blocks[0].shape, self.warps)
                for v in blocks:
                    self.read(v, lay)
        elif kind in (OpKind.FOR, OpKind.WHILE, OpKind.IF):
            self.construct(op)
        else:
            for v in op.operands:
                self.read(v, layout)

    def memory(self, op):
        group = self.a.combined_loads.get(op) if op.name == OpKind.LOAD else None
        if group is not None:
            if op is group.leader:
                layout = self.layouts.mem_layout[op]
                for v in op.operands[:2]:
                    self.read(v, layout)
                for load in group.loads:
                    if len(load.operands) > 2:
                        self.read(load.operands[2], layout)
            return
        if op.operands[0].shape:
            for v in op.operands:
                self.read(v, self.layouts.mem_layout[op])

    def dot(self, op):
        plan = self.a.dots[op]
        self.read(op.operands[2], plan.layout)
        a, b = op.operands[0], op.operands[1]
        if plan.a_layout is not None:
            self.read(a, plan.a_layout)
        rank = len(a.shape)     # a batched dot's operands are 3-D: K is then dimension 2 of A, 1 of B (rules/dot.py)
        pending = [(v, k) for v, k in ((a, rank - 1), (b, rank - 2))
                   if not self.in_tile(v) and not (plan.a_layout is not None and v is a)]
        for v, k in pending:
            self.read(v, self._tile_layout(v, k))
        if pending:
            self.use(scratch_key("dot", op), [(v.dtype, v.type.numel, "dot operand", v) for v, _ in pending])

    def _tile_layout(self, v, k_dim):
        own = self.layouts.layout.get(v)
        return own if own is not None else operand_tile_layout(v, k_dim, self.warps)

    def atomic(self, op, layout):
        plan = self.a.atomics[op]
        if not plan.scalar:
            for v in op.operands:
                self.read(v, layout)
        if plan.broadcast:
            v = op.result
            purpose = "old values of an atomic, for every thread"
            self.use(scratch_key("atomic", op), [(v.dtype, v.type.numel, purpose, v)])

    # -- regions -------------------------------------------------------------------------------------------
    def ops(self, ops, skip=()):
        for op in ops:
            if op in skip or op.name == OpKind.CONSTANT:
                continue
            if op.results and all(r in self.layouts.flexible for r in op.results):
                continue      # computed on demand, in the layout of each use
            layout = self.layouts.layout.get(op.results[0]) if op.results and op.results[0].shape else None
            self.lower(op, layout)

    def hoist(self, operands):
        """Loop-invariant dot operands written to their tiles before the construct (rules/dot.py)."""
        fresh = set()
        for v, k in operands:
            if not self.in_tile(v):
                self.read(v, self._tile_layout(v, k))
                fresh.add(v)
        return fresh

    def carried(self, results, values):
        for res, v in zip(results, values):
            if res.shape:
                self.read(v, self.layouts.layout[res])

    def construct(self, op):
        invariant = operands_of_inner_loops(op) if op.name == OpKind.IF else invariant_dot_operands(op)
        self.tiles.append(self.hoist(invariant))
        if op.name == OpKind.IF:
            for region in op.regions:
                self.ops(region.ops)
                self.carried(op.results, region.ops[-1].operands)
        elif op.name == OpKind.WHILE:
            self.carried(op.results, op.operands)
            for region in op.regions:
                self.ops(region.ops)
            self.carried(op.results, op.regions[1].ops[-1].operands)
        elif op in self.a.pipelines:
            self.pipelined(op, self.a.pipelines[op])
        else:
            # a row ring's rows are not carried in registers: copied into its slots, read back (row_ring.py)
            ring = self.a.row_ring
            rows = set(ring.carried) if ring is not None and op is ring.loop else set()
            kept = [i for i in range(len(op.results)) if i not in rows]
            yielded = op.regions[0].ops[-1].operands
            self.carried([op.results[i] for i in kept], [op.operands[3 + i] for i in kept])
            self.ops(op.regions[0].ops)
            self.carried([op.results[i] for i in kept], [yielded[i] for i in kept])
        self.tiles.pop()

    def pipelined(self, op, plan):
        region = op.regions[0]
        self.carried(op.results, op.operands[3:])     # the carried values and the address slice's own copies
        outer, self.in_pipeline = self.in_pipeline, True
        staged = {s.op.result for s in plan.loads}
        self.tiles.append(staged)
        self.ops(plan.slice_ops)
        for s in plan.loads:
            self.memory(s.op)
        skip = {o for o in region.ops if o in plan.main_dead_ops or plan.is_staged(o)
                or (o.name == OpKind.PERMUTE and o.operands[0] in staged)}
        self.ops(region.ops, skip)
        self.carried(op.results, region.ops[-1].operands)
        self.tiles.pop()
        self.in_pipeline = outer


def plan_scratch(kernel, analysis, warps):
    """Add the scratch uses of `kernel` to `analysis.shared_memory` (once its persistent buffers and stage rings
    are planned); returns the plan."""
    walk = _Walk(kernel, analysis, warps)
    walk.ops(kernel.body.ops)
    for key, (in_pipeline, requests) in walk.uses.items():
        walk.plan.plan_scratch(key, requests, in_pipeline)
    return walk.plan


__all__ = ["plan_scratch", "scratch_key", "conversion_needed", "conversion_elements", "OPERAND_LAYOUTS"]
