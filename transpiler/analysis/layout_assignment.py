"""Layout assignment: which thread holds which element of every block value.

Decides, for each block value, either a fixed layout or that it is *flexible*. Memory operations anchor
coalesced layouts (chosen here from axis information: the fastest dimension, and as many contiguous elements
per thread as alignment and contiguity allow, up to 16 bytes); reductions produce the slice of their
operand's layout; loops carry the layout their body yields; a register-A warpgroup MMA reads its A operand
in the wgmma A-fragment layout, and whether that costs nothing (the producer already holds the fragments, as
attention's P computed from a product's accumulator does) or a conversion is recorded here. Values computed only from constants, scalars and
`arange` (index arithmetic, masks, pointer offsets) are flexible: the emitter computes them directly in
whatever layout their user needs, which costs nothing, instead of converting them. A fixed value needed in
another layout is converted by the emitter (through shared memory unless `register_map` proves it free).
"""
from __future__ import annotations

from ..parse.ir import OpKind, Region
from .decisions import DecisionLog
from .layouts import blocked, log2, register_map
from .scan_layout import plan_scan


def coalesced_order(info, rank):
    """Dimensions fastest-first: most contiguous first, ties broken towards the last dimension."""
    return sorted(range(rank), key=lambda d: (-info.contiguity[d], -d))


MAX_ACCESS_BYTES = 16   # the widest access one thread makes (ld.global.v4.b32, cp.async, a 16-byte shared store)


def widest_access(elem_bytes, *limits) -> int:
    """Elements one thread moves in one access: the largest power of two within 16 bytes and every limit
    (contiguity, alignment in elements, elements per thread, contiguous registers). The one rule of vector width:
    the coalesced anchors below, the access widths (vectorize.py) and the register layout of a dot operand
    written to shared memory all use it."""
    n = min(max(1, MAX_ACCESS_BYTES // elem_bytes), *limits)
    return _pow2_floor(max(n, 1))


def operand_tile_layout(value, k_dim, num_warps):
    """The layout a dot operand computed on demand is made in before it is written to a shared-memory tile: blocked,
    as many elements per thread along `k_dim` as one access moves."""
    per_thread = widest_access(value.dtype.itemsize, value.type.numel // (32 * num_warps))
    rank = len(value.shape)       # 2, or 3 for a batched dot's operand (the batch outermost)
    return blocked(value.shape, per_thread, [k_dim] + [d for d in reversed(range(rank)) if d != k_dim], num_warps)


def coalesced_layout(shape, info, elem_bytes, num_warps, decisions=None, op=None):
    rank = len(shape)
    order = coalesced_order(info, rank)
    fastest = order[0]
    contig = min(info.contiguity[fastest], shape[fastest])
    align_elems = max(1, info.divisibility[fastest] // elem_bytes) if info.divisibility else 1
    numel = 1
    for s in shape:
        numel *= s
    per_thread = max(numel // (32 * num_warps), 1)
    vec = widest_access(elem_bytes, contig, align_elems, per_thread)
    layout = blocked(shape, vec, order, num_warps)
    if decisions is not None and op is not None:
        why = (f"dim {fastest} contiguous by {info.contiguity[fastest]}, first element aligned to "
               f"{info.divisibility[fastest]} {'bytes' if op.operands[0].dtype.is_ptr() else 'elements'}, "
               f"{per_thread} elements per thread")
        decisions.add("layout", op, f"{op.name} of {list(shape)}: {vec} contiguous elements per thread "
                      f"({vec * elem_bytes} bytes) along dim {fastest}", why)
    return layout


def _pow2_floor(n):
    return 1 << (int(n).bit_length() - 1) if n >= 1 else 1


def default_layout(shape, num_warps):
    return blocked(shape, 1, list(reversed(range(len(shape)))), num_warps)


class LayoutAssignment:
    """`layout[v]` for fixed block values; `flexible` for the rest; `load_layout[op]` / `store_layout[op]`."""

    def __init__(self, kernel, axis_info, decisions, num_warps, dots=None):
        self.kernel = kernel
        self.dots = dots or {}
        self.axis = axis_info
        self.num_warps = num_warps
        self.if_hints = None      # if result -> the layout its users want (see _users_layouts); None: probing
        self._walk(kernel, DecisionLog())
        if self.unsettled:        # the probe differs from the final walk only where an if result was unsettled
            self.if_hints = self._users_layouts(kernel)
            self._walk(kernel, DecisionLog())
        decisions.items.extend(self.decisions.items)
        self.decisions = decisions
        self._record_register_a()

    def _walk(self, kernel, decisions):
        self.decisions = decisions
        self.layout = {}
        self.provisional = set()
        self.flexible = set()
        self.unsettled = []       # if results no branch gave a layout (given the default one, provisionally)
        self.mem_layout = {}      # load/store op -> its layout
        self.reduce_input = {}    # reduce op -> the layout its operands are read in
        self.gather_source = {}   # gather op -> the layout its source is written to shared memory from
        self.scan_plan = {}       # scan op -> its ScanPlan (the layout of its operands and results)
        self.register_a = {}      # register-A dot op -> whether its A is read in place ("free"), computed
        #                           in the fragment layout ("flexible") or converted ("convert")
        self._assign(kernel.body)

    def _users_layouts(self, kernel):
        """{if result: layout} for the if results no branch fixed whose first user wants another layout
        (attention's masked `qk = tl.where(mask, qk, -inf)` before `qk += tl.dot(q, k)`: the
        product's accumulator layout, where the default one would convert the product and every value after
        it; its output mask, read by the store in the store's layout). A second walk gives them that layout from the start; the branches compute their flexible values
        in it."""
        wanted = {}
        unsettled = set(self.unsettled)

        def visit(region):
            for op in region.ops:
                for v in op.operands:
                    if v in unsettled and v not in wanted:
                        want = self._layout_wanted_by(op, v)
                        if want is not None and want != self.layout[v]:
                            wanted[v] = want
                        unsettled.discard(v)          # the first user decides
                for inner in op.regions:
                    visit(inner)
        visit(kernel.body)
        return wanted

    def _layout_wanted_by(self, op, v):
        """The firm layout `op` reads its operand `v` in: a store's (its mask and value are read in the layout
        of the access), else that of a result of `v`'s shape."""
        if op.name == OpKind.STORE:
            return self.mem_layout.get(op)
        out = next((r for r in op.results if r.shape == v.shape and r in self.layout and r not in self.provisional),
                   None)
        return self.layout[out] if out is not None else None

    # -- helpers -------------------------------------------------------------------------------------------
    def is_fixed(self, v):
        return v in self.layout

    def _set(self, v, layout, provisional=False):
        if not v.shape:
            return
        self.layout[v] = layout
        if provisional:
            self.provisional.add(v)
        else:
            self.provisional.discard(v)
        self.flexible.discard(v)

    def _flex(self, v):
        if v.shape:
            self.flexible.add(v)
            self.layout.pop(v, None)

    def _pick(self, operands):
        fixed = [o for o in operands if o.shape and o in self.layout]
        firm = [o for o in fixed if o not in self.provisional]
        if firm:
            return self.layout[firm[0]], False
        if fixed:
            return self.layout[fixed[0]], True
        return None, False

    def anchor_for_pointer(self, op, ptr):
        elem = ptr.dtype.element_ty
        return coalesced_layout(ptr.shape, self.axis[ptr], elem.itemsize, self.num_warps, self.decisions, op)

    # -- walk ----------------------------------------------------------------------------------------------
    def _assign(self, region: Region):
        for op in region.ops:
            getattr(self, f"_op_{op.name}", self._op_default)(op)

    def _op_default(self, op):
        if not op.results:
            return
        layout, provisional = self._pick(op.operands)
        for r in op.results:
            if layout is None or not r.shape or r.shape != layout.shape:
                if r.shape and layout is not None:
                    self._set(r, layout, provisional)
                else:
                    self._flex(r)
            else:
                self._set(r, layout, provisional)

    def _op_broadcast(self, op):
        self._flex(op.result)

    _op_splat = _op_broadcast
    _op_arange = _op_broadcast
    _op_constant = _op_broadcast

    def _op_expand_dims(self, op):
        src = op.operands[0]
        if src in self.layout:
            self._set(op.result, self.layout[src].insert_dim(op.attrs["axis"]), src in self.provisional)
        else:
            self._flex(op.result)

    def _op_permute(self, op):
        src = op.operands[0]
        if src in self.layout:
            self._set(op.result, self.layout[src].permute(op.attrs["order"]), src in self.provisional)
        else:
            self._flex(op.result)

    def _op_reshape(self, op):
        src = op.operands[0]
        if src in self.layout:
            self._set(op.result, self.layout[src].reshape(op.result.shape), src in self.provisional)
        else:
            self._flex(op.result)

    def _op_load(self, op):
        ptr = op.operands[0]
        if not ptr.shape:
            return
        if ptr in self.layout and ptr not in self.provisional:
            layout = self.layout[ptr]
            self.decisions.add("layout", op, "load in the layout of its pointer block",
                               "the pointer block already has a fixed layout (loaded indices, or carried "
                               "by a loop in the coalesced layout)")
        else:
            layout = self.anchor_for_pointer(op, ptr)
        self.mem_layout[op] = layout
        self._set(op.result, layout)

    def _op_store(self, op):
        ptr, value = op.operands[0], op.operands[1]
        if not ptr.shape:
            return
        anchor = self.anchor_for_pointer(op, ptr)
        layout = anchor
        if value in self.layout:
            own = self.layout[value]
            # Store from the value's own registers when that is as wide as the coalesced layout: no trip
            # through shared memory. Otherwise the emitter converts to the coalesced layout first.
            order = coalesced_order(self.axis[ptr], len(ptr.shape))
            if own.contiguous_regs(order[0]) >= anchor.contiguous_regs(order[0]) or own.lane == anchor.lane:
                layout = own
            else:
                self.decisions.add("layout", op, "convert the stored value to the coalesced layout",
                                   f"its own layout holds {own.contiguous_regs(order[0])} contiguous elements "
                                   f"per thread, the coalesced one {anchor.contiguous_regs(order[0])}")
        self.mem_layout[op] = layout

    def _op_atomic_rmw(self, op):
        """An atomic runs where an operand already lives (no conversion); otherwise one element per thread
        per access, consecutive lanes on consecutive addresses (each element is its own instruction)."""
        ptr = op.operands[0]
        if not ptr.shape:
            return
        layout, provisional = self._pick(op.operands)
        if layout is None:
            order = coalesced_order(self.axis[ptr], len(ptr.shape))
            layout = blocked(ptr.shape, 1, order, self.num_warps)
            self.decisions.add("layout", op, f"{op.name} of {list(ptr.shape)}: one element per thread per access, "
                               f"lanes along dim {order[0]}", "no operand has a layout yet; an atomic is one "
                               "instruction per element, so only coalescing across lanes matters")
        self._set(op.result, layout, provisional)

    _op_atomic_cas = _op_atomic_rmw

    def _op_reduce(self, op):
        src = op.operands[0]
        if src in self.layout:
            layout = self.layout[src]
        else:
            layout = default_layout(src.shape, self.num_warps)
        self.reduce_input[op] = layout
        out = layout.drop_dims([op.attrs["axis"]])
        for r in op.results:
            self._set(r, out, src in self.provisional)
        if op.regions:
            self._assign(op.regions[0])

    def _op_gather(self, op):
        """The source is written to shared memory from the layout it has (the default one when it has none yet);
        the result is read in the index's layout, element for element."""
        src, index = op.operands
        self.gather_source[op] = self.layout.get(src) or default_layout(src.shape, self.num_warps)
        layout = self.layout.get(index) or default_layout(index.shape, self.num_warps)
        self._set(op.result, layout, index not in self.layout or index in self.provisional)

    def _op_scan(self, op):
        layout, provisional = self._pick(op.operands)
        axis = op.attrs["axis"]
        plan = plan_scan(layout, axis) if layout is not None else None
        if plan is None:
            if layout is not None:
                self.decisions.add("layout", op, "scan in the default blocked layout",
                                   f"its operand's layout does not hold dim {axis} as registers, lanes, warps, "
                                   "registers")
            plan = plan_scan(default_layout(op.operands[0].shape, self.num_warps), axis)
        self.scan_plan[op] = plan
        for r in op.results:
            self._set(r, plan.layout, provisional)
        if op.regions:
            self._assign(op.regions[0])

    def _op_dot(self, op):
        # The tensor-core pass fixed the product's layout (the mma accumulator, or a blocked one for FMA).
        self._set(op.result, self.dots[op].layout)

    def _record_register_a(self):
        """For each register-A dot: is its A operand, in the layout it was given, already the A fragments?"""
        for op, plan in self.dots.items():
            if plan.a_layout is None:
                continue
            a = op.operands[0]
            if a not in self.layout:
                self.register_a[op] = "flexible"
                what, why = "A computed in the wgmma A-fragment layout", "it is computed on demand"
            elif register_map(plan.a_layout, self.layout[a]) is not None:
                self.register_a[op] = "free"
                what, why = ("A read in place as wgmma A fragments (no conversion)",
                             "its layout holds every fragment element in the thread that needs it; the emitter "
                             "packs register pairs")
            else:
                self.register_a[op] = "convert"
                what, why = ("A converted to the wgmma A-fragment layout through shared memory",
                             f"its layout ({self.layout[a].describe()}) puts fragment elements in other threads")
            self.decisions.add("layout", op, what, why)

    # -- control flow --------------------------------------------------------------------------------------
    def _carried_layouts(self, op, inits, regions, yields_of):
        """Give loop-carried values one layout: the init's, or else what the body yields."""
        guesses = []
        for v in inits:
            if v.shape and v in self.layout and v not in self.provisional:
                guesses.append((self.layout[v], False))
            elif v.shape:
                guesses.append((default_layout(v.shape, self.num_warps), True))
            else:
                guesses.append((None, False))
        for _ in range(3):
            for region in regions:
                for a, (g, prov) in zip(region.args[-len(inits):] if inits else [], guesses):
                    if g is not None:
                        self._set(a, g, prov)
                self._assign(region)
            changed = False
            new = []
            args = regions[-1].args[-len(inits):] if inits else []
            for a, y, (g, prov) in zip(args, yields_of(), guesses):
                if prov and y.shape and y in self.layout and y not in self.provisional and self.layout[y] != g:
                    new.append((self.layout[y], False))
                    changed = True
                elif prov and a.dtype.is_ptr() and self._memory_layout_of_pointer(a, regions[-1]) not in (None, g):
                    # A carried pointer block: hold it the way the load or store through it wants it.
                    new.append((self._memory_layout_of_pointer(a, regions[-1]), False))
                    changed = True
                else:
                    new.append((g, prov and not (y in self.layout and y not in self.provisional)))
            guesses = new
            if not changed:
                break
        for r, (g, prov) in zip(op.results, guesses):
            if g is not None:
                self._set(r, g, prov)
        return guesses

    def _memory_layout_of_pointer(self, ptr, region):
        """The layout of the first load or store in `region` whose pointer is `ptr` plus offsets."""
        derived = {ptr}
        for op in region.ops:
            if op.name in (OpKind.LOAD, OpKind.STORE) and op.operands[0] in derived:
                return self.mem_layout.get(op)
            if op.name in (OpKind.ADDPTR, OpKind.BROADCAST) and op.operands[0] in derived:
                derived.add(op.result)
        return None

    def _op_for(self, op):
        region = op.regions[0]
        inits = op.operands[3:]
        self._carried_layouts(op, inits, [region], lambda: region.ops[-1].operands)

    def _op_while(self, op):
        cond, body = op.regions
        self._carried_layouts(op, op.operands, [cond, body], lambda: body.ops[-1].operands)

    def _op_if(self, op):
        then_r, else_r = op.regions
        self._assign(then_r)
        self._assign(else_r)
        for i, r in enumerate(op.results):
            if not r.shape:
                continue
            t, e = then_r.ops[-1].operands[i], else_r.ops[-1].operands[i]
            for y in (t, e):
                if y in self.layout and y not in self.provisional:
                    self._set(r, self.layout[y])
                    break
            else:
                probing = self.if_hints is None     # provisional then: a firm user keeps its own layout
                if not probing and r in self.if_hints:
                    self._set(r, self.if_hints[r])
                else:
                    self._set(r, default_layout(r.shape, self.num_warps), provisional=probing)
                    self.unsettled.append(r)

    def describe(self):
        lines = []
        for v, l in self.layout.items():
            lines.append(f"{v!r}: {l.describe()}")
        return "\n".join(lines)


__all__ = ["LayoutAssignment", "coalesced_layout", "default_layout", "log2"]
