"""Lowering of `scan`: registers in order, then lanes by shuffles, then warps and register chunks in order.

The plan (analysis/scan_layout.py) says which register, lane and warp bits run along the axis; the result
has the operand's layout. Registers are split into the low run along the axis (`k`, scanned in order in
each thread), the high run along the axis (chunks, `chunk`), and the rest (`o`); the code spells register
indices from those as bit moves. Built-in combiners (`add`, `mul`) are C operators on the accumulation type
(fp32 for 16-bit floats, which round once per element at the end); a user `combine_fn` becomes a device
function `combine(out..., left..., right...)`. A reverse scan walks every position from the end.
"""
from __future__ import annotations

from .. import cexpr, cspell
from ..bits import bit_moves
from ..emitter import Read, jinja_env, lowering, templates_dir
from ...parse.ir import OpKind

def _combine_function(em, op, ctypes):
    """Emit the user's combine_fn as `combine(out..., left..., right...)`: out = combine_fn(left, right)."""
    region = op.regions[0]
    n = len(ctypes)
    fname = em.fresh("combine")
    with em.detached_text():
        em.line_stack.append(None)    # no Python-line comments inside the function
        em.push_scope()
        outs = [em.fresh(f"out{i}") for i in range(n)]
        params = [f"{ct}& {o}" for ct, o in zip(ctypes, outs)]
        for i, a in enumerate(region.args):      # a0.. (the earlier elements), then b0.. (the later ones)
            cname = em.fresh(f"{'left' if i < n else 'right'}{i % n}")
            params.append(f"{ctypes[i % n]} {cname}")
            em.bind(a, Read(scalar=cname, ctype=ctypes[i % n]), None)
        for inner in region.ops[:-1]:
            em.emit_op(inner)
        for o, y in zip(outs, region.ops[-1].operands):
            em.write(f"{o} = {em.scalar(y)};")
        body = "\n".join(em.lines)
        em.pop_scope()
        em.line_stack.pop()
    line = op.loc.line if op.loc else "?"
    em.device_functions.append(f"// combine_fn of the tl.associative_scan at line {line}\n"
                               f"__device__ __forceinline__ void {fname}({', '.join(params)}) {{\n{body}\n}}")
    return lambda outs_, lefts, rights: f"{fname}({', '.join(list(outs_) + list(lefts) + list(rights))});"


def _operator_combine(fn, acc_dts):
    """`add` / `mul` spelled as the elementwise op on the accumulation type (int1's `+` wraps: it is xor)."""
    def spell(outs, lefts, rights):
        return " ".join(f"{o} = {cspell.elementwise_expr(fn, d, d, [a, b])};"
                        for o, a, b, d in zip(outs, lefts, rights, acc_dts))
    return spell


def _use_scan_helpers(em):
    text = (templates_dir() / "device_scan.cuh").read_text().rstrip("\n")
    if text not in em.device_functions:
        em.device_functions.insert(0, text)


def _deposit(var, reg_bits):
    """Register-index bits of `var`'s bits, placed at `reg_bits` (None when there are none)."""
    if not reg_bits:
        return None
    return bit_moves(var, list(enumerate(reg_bits)), len(reg_bits))


def _reg(*parts):
    parts = [p for p in parts if p]
    return " | ".join(parts) if parts else "0"


@lowering(OpKind.SCAN)
def scan(em, op, layout_unused):
    plan = em.layouts.scan_plan[op]
    layout, axis, reverse = plan.layout, plan.axis, op.attrs["reverse"]
    combine_kind = op.attrs["combine"]
    inputs = [em.operand(v, layout) for v in op.operands]
    elem_dts = [v.dtype for v in op.operands]
    acc_dts = elem_dts if combine_kind == "custom" else [cspell.accumulate_type(d) for d in elem_dts]
    acc_ctypes = [cspell.ctype(d) for d in acc_dts]
    combine = (_combine_function(em, op, acc_ctypes) if combine_kind == "custom"
               else _operator_combine(combine_kind, acc_dts))
    _use_scan_helpers(em)

    n_lo, n_chunks = 1 << len(plan.lo_regs), 1 << len(plan.hi_regs)
    n_lanes, n_warps = 1 << len(plan.lane_bits), 1 << len(plan.warp_bits)
    base = op.results[0].name or "scan"
    arrays = []
    for i, (res, inp, ct, edt, adt) in enumerate(zip(op.results, inputs, acc_ctypes, elem_dts, acc_dts)):
        name = res.name or (f"{base}{i}" if len(inputs) > 1 else base)
        init = inp.at("r") if edt == adt else f"tp::cast<{ct}>({inp.at('r')})"
        arrays.append(dict(name=em.fresh(name if edt == adt else f"{name}_acc"), ctype=ct, init=init))
    # C names of the per-operand temporaries, taken only for the phases this plan has.
    uses_totals = (plan.lane_bits and n_lo > 1) or plan.hi_regs or plan.warp_bits
    for i, a in enumerate(arrays):
        suffix = str(i) if len(inputs) > 1 else ""
        a["total"] = em.fresh(f"total{suffix}") if uses_totals else None
        a["up"] = em.fresh(f"shuffled{suffix}") if plan.lane_bits else None
        a["carry"] = em.fresh(f"carry{suffix}") if plan.hi_regs else None
        a["prefix"] = em.fresh(f"before{suffix}") if plan.warp_bits else None

    last_k = 0 if reverse else n_lo - 1
    for a in arrays:   # the lane phase scans each group's last register in place when it is the only one
        a["total_o"] = f"{a['total']}[o]" if n_lo > 1 else f"{a['name']}[r]"
    group_bits = plan.other_regs + plan.hi_regs
    ctx = dict(
        arrays=arrays, n_regs=layout.num_regs, axis=axis, reverse=reverse, combine=combine,
        at=lambda r: [f"{a['name']}[{r}]" for a in arrays],
        totals=[a["total"] for a in arrays], totals_o=[a["total_o"] for a in arrays],
        ups=[a["up"] for a in arrays], carries=[a["carry"] for a in arrays], prefixes=[a["prefix"] for a in arrays],
        n_lo=n_lo, n_groups=1 << len(group_bits), n_other=1 << len(plan.other_regs), n_chunks=n_chunks,
        n_warps=n_warps,
        k_loop=f"int k = {n_lo - 2}; k >= 0; --k" if reverse else f"int k = 1; k < {n_lo}; ++k",
        reg_k=_reg(_deposit("o", group_bits), _deposit("k", plan.lo_regs)),
        reg_prev=_reg(_deposit("o", group_bits), _deposit("(k + 1)" if reverse else "(k - 1)", plan.lo_regs)),
        reg_last=_reg(_deposit("o", group_bits), _deposit(str(last_k), plan.lo_regs)),
        lane_pos=None, lane_steps=[], chunks_by_shuffle=False, smem=False)
    # Register expressions of the chunk phase: o over the other registers, `chunk` over the high run.
    ctx["reg_chunk_k"] = _reg(_deposit("o", plan.other_regs), _deposit("k", plan.lo_regs),
                              _deposit("chunk", plan.hi_regs))
    ctx["reg_chunk_last"] = _reg(_deposit("o", plan.other_regs), _deposit(str(last_k), plan.lo_regs),
                                 _deposit("chunk", plan.hi_regs))
    ctx["chunk_of_j"] = f"{n_chunks - 1} - j" if reverse else "j"

    if plan.lane_bits:
        p = plan.lane_bits[0]
        place = f"(lane >> {p})" if p else "lane"
        place = f"{place} & {n_lanes - 1}" if p + len(plan.lane_bits) < 5 else place
        ctx["lane_pos"] = em.fresh(f"{base}_lane")
        ctx["lane_pos_expr"] = f"{n_lanes - 1} - ({place})" if reverse else place
        ctx["shfl"] = "tp::shfl_down" if reverse else "tp::shfl_up"
        ctx["lane_steps"] = [dict(delta=1 << (p + j), reach=1 << j) for j in range(len(plan.lane_bits))]

    if plan.warp_bits:
        _cross_warp_context(em, op, ctx, plan, arrays, acc_dts, base, reverse)
    elif plan.hi_regs:
        # One warp spans the axis: each chunk's total is in the last lane along it.
        ctx["chunks_by_shuffle"] = True
        mask = plan.lane_mask
        ctx["src_lane"] = f"lane & {31 & ~mask}" if reverse else f"lane | {mask}"
        first = n_chunks - 1 if reverse else 0
        ctx["reg_first_chunk_last"] = _reg(_deposit("o", plan.other_regs), _deposit(str(last_k), plan.lo_regs),
                                           _deposit(str(first), plan.hi_regs))

    em.write(jinja_env().get_template("scan.j2").module.scan(ctx))
    for res, a, adt in zip(op.results, arrays, acc_dts):
        if adt != res.dtype:
            rct = cspell.ctype(res.dtype)
            em.define_block(res, layout, lambda r, a=a, rct=rct: f"tp::cast<{rct}>({a['name']}[{r}])")
        else:
            em.names[res] = a["name"]
            em.bind(res, Read(array=a["name"], ctype=a["ctype"]), layout)


def _cross_warp_context(em, op, ctx, plan, arrays, acc_dts, base, reverse):
    """Shared-memory slots [chunk in scan order][warp along the axis][element of the other dimensions]."""
    layout = plan.layout
    n_warps, n_chunks = 1 << len(plan.warp_bits), 1 << len(plan.hi_regs)
    others = layout.drop_dims([plan.axis])
    n_slots = 1
    for s in others.shape:
        n_slots *= s
    slot = em.linear_index(others, "o")
    for i, (a, dt) in enumerate(zip(arrays, acc_dts)):
        a["buf"] = em.shared_buffer(dt, n_chunks * n_warps * n_slots, f"{a['name']}_smem", (op, "scan", i))
    place = bit_moves("warp", [(b, j) for j, b in enumerate(plan.warp_bits)], len(layout.warp))
    ctx["warp_pos"] = em.fresh(f"{base}_warp")
    ctx["warp_pos_expr"] = f"{n_warps - 1} - ({place})" if reverse else place

    def smem_index(w):
        index = cexpr.add(cexpr.mul("j", n_warps), w)
        return cexpr.add(cexpr.mul(index, n_slots), slot) if n_slots > 1 else index
    # One writer per warp total: the last lane along the axis, the first of any lanes or warps holding copies.
    lane_mask = plan.lane_mask | layout.replicated_lane_mask()
    conds = []
    if lane_mask:
        lanes = "lane" if lane_mask == 31 else f"(lane & {lane_mask})"     # (every lane bit: the lane itself)
        conds.append(f"{lanes} == {0 if reverse else plan.lane_mask}")
    if layout.replicated_warp_mask():
        conds.append(f"(warp & {layout.replicated_warp_mask()}) == 0")
    ctx.update(smem=True, smem_index=smem_index, writer=" && ".join(conds),
               smem_reads=lambda w: [f"{a['buf']}[{smem_index(w)}]" for a in arrays],
               barrier_before=em.loop_depth > 0)
