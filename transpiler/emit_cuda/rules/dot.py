"""Lowering of `tl.dot`: operands from shared memory, fragments by ldmatrix (or element by element), mma.sync.

Operands come from the tiles a pipelined loop staged (`em.tiles`), or are written to scratch shared memory
here, between two barriers. Fragment loads, per operand:
- `ldmatrix` when the operand's K runs along the tile's rows (any 8- or 16-bit type);
- `ldmatrix.trans` when the rows run along M (for A) or N (for B), for 16-bit types;
- otherwise (tf32; 8-bit transposed) one shared-memory read per element, packed into registers.
With warpgroup MMA (sm_90a) there are no fragment loads: each wgmma reads its tiles through descriptors
(emit_cuda/wgmma.py), the tiles cut into the 128-byte slabs those describe; a register-A wgmma reads A in the
A-fragment layout the tensor-core pass chose (a register renaming when the value already lives there) and
packs its register pairs into the 32-bit fragment registers.
The tensor-core pass chose the instruction, the warp grid and the product's layout.
"""
from __future__ import annotations

from .. import cexpr, cspell
from .. import wgmma as wg
from ..emitter import Read, lowering
from ..tiles import register_layout_for, staged_view, write_to_tile
from ...analysis.invariant_operands import invariant_dot_operands
from ...analysis.layouts import log2
from ...parse.ir import OpKind
from ...targets import switch


def _operand_views(em, op):
    """Views of A and B in shared memory; operands held in registers are written to scratch first (A of a
    register-A wgmma stays in registers: its view is None)."""
    a, b = op.operands[0], op.operands[1]
    views = {a: staged_view(em, a), b: staged_view(em, b)}
    register_a = em.analysis.dots[op].a_layout is not None
    if register_a:
        # A stays in registers in the wgmma fragment layout; a conversion into it runs through the scratch bytes
        # too, so it is done before B's tile below claims them (after, it overwrote B: a wrong product).
        em.operand(a, em.analysis.dots[op].a_layout)
    pending = [(v, k_dim) for v, k_dim in ((a, 1), (b, 0)) if views[v] is None and not (register_a and v is a)]
    if pending:
        # Compute the operands first: what they come from (a join, a conversion through shared memory, ...)
        # may use the same scratch bytes, and must be done with them before the tiles below are written.
        for v, k_dim in pending:
            em.operand(v, register_layout_for(em, v, k_dim))
        em.write("// dot operands: registers to shared memory")
        names, barrier = em.scratch_buffers([(v.dtype, v.type.numel, f"{em.name_of(v)}_tile") for v, _ in pending],
                                            "dot operand")
        if barrier:
            em.write("__syncthreads();  // earlier readers of this scratch space are done")
        for (v, k_dim), buf in zip(pending, names):
            views[v] = write_to_tile(em, v, buf, k_dim, _needs_k_major(em, v))
        if em.analysis.dots[op].kind == "wgmma":
            em.write("tp::fence_proxy_async();  // the stores above, seen by the tensor cores' reads")
        em.write("__syncthreads();")
        em.smem.hold_scratch("dot operand tiles")   # released once the product is written (`dot` below)
    return views[a], views[b]


def hoist_invariant_operands(em, loop, operands=None) -> list:
    """Write the loop-invariant dot operands of `loop` (analysis/invariant_operands.py; `operands` where given:
    those of the loops inside an `if`) to shared-memory tiles of their own before it; the dots inside read them
    there. A tile written earlier on every path to this loop (in a scope still open) is read as it is: nothing
    else writes it. Returns the values to forget after the loop."""
    hoisted, written = [], []
    for value, k_dim in (invariant_dot_operands(loop) if operands is None else operands):
        if value in em.tiles or staged_view(em, value) is not None:
            continue
        buffer, tile, scope = em.invariant_buffers.get(value, (None, None, None))
        if tile is None or not any(s is scope for s in em.scopes):
            if buffer is None:
                buffer = em.shared_buffer(value.dtype, value.type.numel, f"{em.name_of(value)}_tile",
                                          (value, "invariant operand", 0))
            if not written:
                em.write("// dot operands the loop does not change: written to shared memory once, before it")
                em.write("__syncthreads();  // earlier readers of these tiles are done")
            tile = write_to_tile(em, value, buffer, k_dim, _needs_k_major(em, value)).tile
            em.invariant_buffers[value] = (buffer, tile, em.scopes[-1])
            written.append(value)
        em.tiles[value] = tile
        hoisted.append(value)
    if written:
        if em.analysis.uses_wgmma:
            em.write("tp::fence_proxy_async();  // the stores above, seen by the tensor cores' reads")
        em.write("__syncthreads();")
    return hoisted


def _needs_k_major(em, value) -> bool:
    """Whether a wgmma that cannot transpose (types other than fp16/bf16) reads `value` from a tile."""
    return any(plan.kind == "wgmma" and not plan.wgmma.transposable and value in op.operands[:2]
               for op, plan in em.analysis.dots.items())


def forget_hoisted(em, hoisted):
    for value in hoisted:
        del em.tiles[value]


def _warp_index(plan, dim):
    """C expression of this warp's position along M (dim 0) or N (dim 1) of the warp grid."""
    wm_bits = log2(plan.warps_m)
    if dim == 0:
        return f"(warp & {plan.warps_m - 1})" if plan.warps_m > 1 else "0"
    if plan.warps_n == 1:
        return "0"
    shifted = f"(warp >> {wm_bits})" if wm_bits else "warp"
    return f"({shifted} & {plan.warps_n - 1})"


def _scaled(index, size):
    return "0" if index == "0" else f"{index} * {size}"


def _bits(step, count):
    """Basis values of a loop counter running over `count` multiples of `step` (count a power of two)."""
    return [step << i for i in range(log2(count))] if count > 1 else []


def _split_address(em, view, hint, thread, thread_bases, const, const_bases):
    """(declarations of this lane's offset and of the tile's 32-bit shared address, the address of an operand
    element whose coordinates are `thread` (lane/warp part) plus `const` (the unrolled counters' part); bases in
    operand coordinates). The tile's address is made once per product (a stage's base: once per iteration), so
    each read adds only the lane's offset and a constant that ptxas puts in the instruction; with a generic
    pointer NVRTC 13.0 added the stage to each read's own offset register, then the shared window (two
    instructions for each of the skinny loop's 24 ldmatrix)."""
    tile = view.tile
    name = em.fresh(hint)
    declarations = [f"const int {name} = {tile.offset(view.coords(*thread))};"]
    offset = tile.split_offset(name, [view.coords(*b) for b in thread_bases], view.coords(*const),
                               [view.coords(*b) for b in const_bases])
    if not switch("TRANSPILER_MMA_SHARED_BASE"):
        return declarations, f"&{tile.base}[{offset}]"
    base = em.fresh(hint.split("_")[0] + "_tile_smem")
    declarations.append(f"const unsigned {base} = tp::smem_addr({cexpr.strip_parens(tile.base)});")
    return declarations, f"{base} + {tile.dtype.itemsize} * {offset}"


def _load_a(em, view, plan, m0, es, k):
    """(lane-offset declaration, statements loading a_frag[mt] for k step kk, whether they need gid/tig)."""
    ins = plan.instruction
    chunk = 16 // es
    warp_bases = [(b, 0) for b in _bits(plan.warp_rows, plan.warps_m)]
    const, const_bases = ("16 * mt", "kk"), [(b, 0) for b in _bits(16, plan.tiles_m)] + \
        [(0, b) for b in _bits(ins.k, k // ins.k)]
    regs = "a_frag[mt][0], a_frag[mt][1], a_frag[mt][2], a_frag[mt][3]"
    if es in (1, 2) and view.contiguous(1):
        decl, addr = _split_address(em, view, "a_lane_offset", (f"{m0} + (lane & 15)", f"{chunk} * (lane >> 4)"),
                                    [(1, 0), (2, 0), (4, 0), (8, 0), (0, chunk)] + warp_bases, const, const_bases)
        return decl, f"tp::ldmatrix_x4({regs}, {addr});", False
    if es == 2:
        decl, addr = _split_address(em, view, "a_lane_offset", (f"{m0} + 8 * ((lane >> 3) & 1)",
                                                                "8 * (lane >> 4) + (lane & 7)"),
                                    [(0, 1), (0, 2), (0, 4), (8, 0), (0, 8)] + warp_bases, const, const_bases)
        return decl, f"tp::ldmatrix_x4_trans({regs}, {addr});", False
    lines = []
    for reg in range(ins.a_regs):
        elems = [view.at(f"{m0} + 16 * mt + {row}", f"kk + {col}")
                 for row, col in (ins.a_element(reg, e) for e in range(ins.elems_per_reg))]
        lines.append(f"a_frag[mt][{reg}] = {_pack(elems, es, plan.tf32)};")
    return "", "\n".join(lines), True


def _load_b(em, view, plan, n0, es, k):
    """(lane-offset declaration, statements loading b_frag[nt] (and b_frag[nt + 1] with the x4 forms),
    whether they need gid/tig, the nt step)."""
    ins = plan.instruction
    chunk = 16 // es
    pair = plan.tiles_n >= 2
    warp_bases = [(0, b) for b in _bits(plan.warp_cols, plan.warps_n)]
    const = ("kk", "8 * nt")
    const_bases = [(b, 0) for b in _bits(ins.k, k // ins.k)] + [(0, b) for b in _bits(16, plan.tiles_n // 2)]
    if es in (1, 2) and view.contiguous(0):
        if pair:
            decl, addr = _split_address(em, view, "b_lane_offset", (f"{chunk} * ((lane >> 3) & 1)",
                                                                    f"{n0} + 8 * (lane >> 4) + (lane & 7)"),
                                        [(0, 1), (0, 2), (0, 4), (chunk, 0), (0, 8)] + warp_bases, const, const_bases)
            return (decl, f"tp::ldmatrix_x4(b_frag[nt][0], b_frag[nt][1], b_frag[nt + 1][0], b_frag[nt + 1][1], "
                    f"{addr});", False, 2)
        decl, addr = _split_address(em, view, "b_lane_offset", (f"{chunk} * ((lane >> 3) & 1)", f"{n0} + (lane & 7)"),
                                    [(0, 1), (0, 2), (0, 4), (chunk, 0)] + warp_bases, const, const_bases)
        return decl, f"tp::ldmatrix_x2(b_frag[nt][0], b_frag[nt][1], {addr});", False, 1
    if es == 2:
        if pair:
            decl, addr = _split_address(em, view, "b_lane_offset", ("lane & 15", f"{n0} + 8 * (lane >> 4)"),
                                        [(1, 0), (2, 0), (4, 0), (8, 0), (0, 8)] + warp_bases, const, const_bases)
            return (decl, f"tp::ldmatrix_x4_trans(b_frag[nt][0], b_frag[nt][1], b_frag[nt + 1][0], "
                    f"b_frag[nt + 1][1], {addr});", False, 2)
        decl, addr = _split_address(em, view, "b_lane_offset", ("lane & 15", n0),
                                    [(1, 0), (2, 0), (4, 0), (8, 0)] + warp_bases, const, const_bases)
        return decl, f"tp::ldmatrix_x2_trans(b_frag[nt][0], b_frag[nt][1], {addr});", False, 1
    lines = []
    for reg in range(ins.b_regs):
        elems = [view.at(f"kk + {kk}", f"{n0} + 8 * nt + {n}")
                 for kk, n in (ins.b_element(reg, e) for e in range(ins.elems_per_reg))]
        lines.append(f"b_frag[nt][{reg}] = {_pack(elems, es, plan.tf32)};")
    return "", "\n".join(lines), True, 1


def _pack(elems, es, tf32):
    if tf32:
        return f"tp::tf32({elems[0]})"
    if es == 2:
        return f"tp::pack2({elems[0]}, {elems[1]})"
    return f"tp::pack4({', '.join(elems)})"


def _describe(op, plan):
    a, b = op.operands[0], op.operands[1]
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if plan.kind == "wgmma":
        w = plan.wgmma
        return (f"{m}x{n}x{k} product on tensor cores: wgmma.mma_async m64n{w.n}k{w.k}, warpgroups "
                f"{w.groups_m}x{w.groups_n}, each {64 * w.tiles_m}x{w.n} ({w.tiles_m} instruction(s) per k{w.k} step)")
    if plan.kind == "fma":
        return f"{m}x{n}x{k} product on CUDA cores (FMA)"
    i = plan.instruction
    return (f"{m}x{n}x{k} product on tensor cores: mma.sync m{i.m}n{i.n}k{i.k}, warps {plan.warps_m}x{plan.warps_n}, "
            f"each {plan.warp_rows}x{plan.warp_cols} ({plan.tiles_m}x{plan.tiles_n} tiles)")


@lowering(OpKind.DOT)
def dot(em, op, layout):
    plan = em.analysis.dots[op]
    em.uses_tiles = True
    res = op.result
    # The accumulator first: its conversion into the product's layout may run through the scratch bytes the
    # operand tiles take next (done after, it overwrote A's tile: a wrong product, chunk_fwd_h's `b_h += dot`).
    acc = em.operand(op.operands[2], plan.layout)
    a_view, b_view = _operand_views(em, op)
    ctype = cspell.ctype(res.dtype)
    name = em.array_name(res, plan.layout)
    em.write(f"// {_describe(op, plan)}")
    k = op.operands[0].shape[1]
    if plan.kind == "wgmma":
        _wgmma(em, op, plan, a_view, b_view, name, ctype, acc, k)
    elif plan.kind == "fma":
        m_r, n_r = em.coord_expr(plan.layout, 0, "r"), em.coord_expr(plan.layout, 1, "r")
        em.write(em.dot_macros.fma(dict(ctype=ctype, name=name, n=plan.layout.num_regs, acc=acc.at("r"), k=k,
                                        a=a_view.at(m_r, "kk"), b=b_view.at("kk", n_r))))
    else:
        es = op.operands[0].dtype.itemsize
        m0, n0 = em.fresh("warp_m0"), em.fresh("warp_n0")
        decl_a, load_a, scalar_a = _load_a(em, a_view, plan, m0, es, k)
        decl_b, load_b, scalar_b, b_step = _load_b(em, b_view, plan, n0, es, k)
        prefetch = None
        if em.prefetch_host is op:
            prefetch, em.pending_prefetch = em.pending_prefetch, None
        em.write(em.dot_macros.mma(dict(
            ctype=ctype, name=name, n=plan.layout.num_regs, acc=acc.at("r"), m0=m0, n0=n0,
            lane_offsets=[line for d in (decl_a, decl_b) if d for line in d], prefetch=prefetch or "",
            fragments_first=prefetch is not None and em.refill_dot is op,
            warp_m=_scaled(_warp_index(plan, 0), plan.warp_rows), warp_n=_scaled(_warp_index(plan, 1), plan.warp_cols),
            needs_gid=scalar_a or scalar_b, k=k, k_step=plan.instruction.k, tiles_m=plan.tiles_m,
            tiles_n=plan.tiles_n, a_regs=plan.instruction.a_regs, b_regs=plan.instruction.b_regs,
            load_a=load_a, load_b=load_b, b_step=b_step, mma=plan.instruction.ptx)))
    em.smem.release_scratch()
    em.bind(res, Read(array=name, ctype=ctype), plan.layout)


def _group_origin(em, w, dim):
    """C expression of this warpgroup's first row (dim 0) or column (dim 1)."""
    count, size = (w.groups_m, 64 * w.tiles_m) if dim == 0 else (w.groups_n, w.n)
    if count == 1:
        return "0"
    group = "(warp >> 2)" if dim == 0 else f"(warp >> {2 + log2(w.groups_m)})"
    return f"({group} & {count - 1}) * {size}"


def _wgmma(em, op, plan, a_view, b_view, name, ctype, acc, k):
    w = plan.wgmma
    helper = wg.instruction_helper(w)
    if helper not in em.device_functions:
        em.device_functions.append(helper)
    m0, n0 = em.fresh("group_m0"), em.fresh("group_n0")
    db = wg.descriptor(b_view, 0)
    if not w.transposable:   # the tensor-core pass took wgmma for this type only with K-major tiles
        assert db.transposed == 0 and (w.a_in_registers or not wg.descriptor(a_view, 1).transposed), \
            f"{w.ptx_type} wgmma planned on a tile that is not K-major"
    b_desc = em.fresh("b_desc")
    if w.a_in_registers:
        a_frag = _register_a_fragments(em, op, plan, k)
        trans_a, desc_a, a_desc, a_desc_base = None, None, None, None
    else:
        da = wg.descriptor(a_view, 1)
        a_desc = em.fresh("a_desc")
        a_desc_base = da.spell(a_view.address(f"{m0} + 64 * mt", "0"))
        a_frag, trans_a, desc_a = None, da.transposed, f"{a_desc}[mt] + {wg.k_step_offset(a_view, 1, 'kk')}"
    prefetch = None
    if em.prefetch_host is op:
        prefetch, em.pending_prefetch = em.pending_prefetch, None
    in_flight = prefetch is not None and em.async_dot is op
    if in_flight:
        em.async_dot_issued = True
    # another dot's group left in flight by the previous iteration retires at this dot's wait<0>
    retires = em.in_flight_acc if em.async_dot is not None and em.async_dot is not op else None
    em.write(em.dot_macros.wgmma(dict(in_flight=in_flight, refill_after_wait=in_flight and em.refill_after_wait,
        ctype=ctype, name=name, n=plan.layout.num_regs, acc=acc.at("r"), m0=m0, n0=n0,
        group_m=_group_origin(em, w, 0), group_n=_group_origin(em, w, 1), k=k, tiles_m=w.tiles_m,
        instruction=w.helper, k_step=w.k, trans_a=trans_a, trans_b=db.transposed, regs_per_tile=w.n // 2,
        desc_a=desc_a, desc_b=f"{b_desc} + {wg.k_step_offset(b_view, 0, 'kk')}", a_frag=a_frag,
        a_desc=a_desc, a_desc_base=a_desc_base, b_desc=b_desc, b_desc_base=db.spell(b_view.address("0", n0)),
        prefetch=prefetch or "", retires=retires)))


def _register_a_fragments(em, op, plan, k):
    """The register-A form's operand: A read in the fragment layout (free when it already lives there), its
    elements packed 4 bytes to a register in fragment order. Returns the render context's `a_frag` part: the
    array's name and size, the packing expression of register `r`, the registers of one (mt, k16) step."""
    a = op.operands[0]
    read = em.operand(a, plan.a_layout)
    per_reg = 4 // a.dtype.itemsize
    elems = [read.at(f"({per_reg} * r + {i})" if i else f"({per_reg} * r)") for i in range(per_reg)]
    pack = f"tp::pack2({elems[0]}, {elems[1]})" if per_reg == 2 else f"tp::pack4({', '.join(elems)})"
    regs = plan.a_layout.num_regs // per_reg
    return dict(name=em.fresh(f"{em.name_of(a)}_frag"), n=regs, pack=pack, per_step=4, k_steps=k // plan.wgmma.k)
