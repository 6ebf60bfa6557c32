"""Lowering of `reduce`: in-thread, then across lanes by xor shuffles, then across warps through shared memory.

Which register, lane and warp bits run along the reduced axis is read off the operand's layout; the result
is the slice layout (those bits dropped), replicated over the lanes and warps that held the axis.
"""
from __future__ import annotations

import re

from .. import cspell
from ..bits import bit_moves
from ..emitter import Read, lowering


def _combine_function(em, op, acc_ctypes):
    """Emit the user's combine_fn as a device function that folds x into acc in place."""
    region = op.regions[0]
    n = len(acc_ctypes)
    fname = em.fresh("combine")
    saved_lines, saved_indent, saved_last = em.lines, em.indent, em.last_line
    em.lines, em.indent = [], 1
    em.push_scope()
    params = []
    for i, a in enumerate(region.args):
        cname = em.fresh(f"{'acc' if i < n else 'x'}{i % n}")
        params.append(f"{acc_ctypes[i % n]}{'&' if i < n else ''} {cname}")
        em.bind(a, Read(scalar=cname, ctype=acc_ctypes[i % n]), None)
    for inner in region.ops[:-1]:
        em.emit_op(inner)
    results = [em.scalar(y) for y in region.ops[-1].operands]
    tmp = [em.fresh(f"out{i}") for i in range(n)]
    for t, res, ct in zip(tmp, results, acc_ctypes):
        em.write(f"const {ct} {t} = {res};")
    for i, t in enumerate(tmp):
        em.write(f"{params[i].split()[-1]} = {t};")
    body = "\n".join(em.lines)
    em.pop_scope()
    em.lines, em.indent, em.last_line = saved_lines, saved_indent, saved_last
    em.device_functions.append(f"// combine_fn of the tl.reduce at line {op.loc.line if op.loc else '?'}\n"
                               f"__device__ __forceinline__ void {fname}({', '.join(params)}) {{\n{body}\n}}")
    return fname


@lowering("reduce")
def reduce(em, op, layout_unused):
    axis = op.attrs["axis"]
    combine = op.attrs["combine"]
    src_layout = em.layouts.reduce_input[op]
    out_layout = src_layout.drop_dims([axis])
    inputs = [em.operand(v, src_layout) for v in op.operands]
    elem_dts = [v.dtype for v in op.operands]
    if combine == "custom":
        acc_dts = elem_dts
    else:
        acc_dts = [cspell.accumulate_type(elem_dts[0])] + elem_dts[1:]
    acc_ctypes = [cspell.ctype(d) for d in acc_dts]
    fn = _combine_function(em, op, acc_ctypes) if combine == "custom" else cspell.COMBINERS[combine]

    red_regs = [i for i, b in enumerate(src_layout.reg) if b[axis]]
    keep_regs = [i for i, b in enumerate(src_layout.reg) if not b[axis]]
    deposit_o = bit_moves("o", [(j, p) for j, p in enumerate(keep_regs)], len(keep_regs)) if keep_regs else "0"
    deposit_k = bit_moves("k", [(j, p) for j, p in enumerate(red_regs)], len(red_regs)) if red_regs else "0"
    reg_of_ok = deposit_o if not red_regs else (deposit_k if not keep_regs else f"{deposit_o} | {deposit_k}")
    lane_masks = [1 << i for i, b in enumerate(src_layout.lane) if b[axis]]
    warp_bits = [i for i, b in enumerate(src_layout.warp) if b[axis]]
    n_out = out_layout.num_regs
    base = em.fresh(f"{op.results[0].name or 'red'}_acc")
    accs = []
    for i, (inp, ct, edt, adt) in enumerate(zip(inputs, acc_ctypes, elem_dts, acc_dts)):
        init = inp.at("r")
        if edt != adt:
            init = f"tp::cast<{ct}>({init})"
        # each operand's accumulator is a name of its own (`base` + `0` could be another reduction's `base`)
        accs.append(dict(name=em.fresh(f"{base}{i}") if len(inputs) > 1 else base, ctype=ct, init=init))
    acc_refs_o = ", ".join(f"{a['name']}[o]" for a in accs)

    def value_of(i, inp, r):
        x = inp.at(r)
        return f"tp::cast<{acc_ctypes[i]}>({x})" if elem_dts[i] != acc_dts[i] else x

    input_vals = ", ".join(value_of(i, inp, "r") for i, inp in enumerate(inputs))

    def shuffled(m):
        return ", ".join(f"tp::shfl_xor({a['name']}[o], {m})" for a in accs)

    reads_r = re.compile(r"\br\b")     # an operand equal in every register (a splat) reads no register
    ctx = dict(init_reads_r=any(reads_r.search(a["init"]) for a in accs),
               input_reads_r=bool(reads_r.search(input_vals)), accs=accs, n_out=n_out, first_reg=deposit_o, n_in_thread=1 << len(red_regs), reg_of_ok=reg_of_ok,
               combine=fn, acc_refs_o=acc_refs_o, input_vals=input_vals, lane_masks=lane_masks, shuffled=shuffled,
               smem=bool(warp_bits))
    if warp_bits:
        n_groups = 1 << len(warp_bits)
        n_slots = max(out_layout.shape and _numel(out_layout.shape) or 1, 1)
        bufs = [em.shared_buffer(d, n_groups * n_slots, f"{base}{i}_smem", (op, "reduce", i)) for i, d in enumerate(acc_dts)]
        slot = em.linear_index(out_layout, "o")
        group = bit_moves("warp", [(b, j) for j, b in enumerate(warp_bits)], len(src_layout.warp))
        lane_axis_mask = sum(lane_masks)
        ctx.update(acc_bufs=list(zip(accs, bufs)), n_warp_groups=n_groups,
                   smem_slot_w=f"({group}) * {n_slots} + {slot}" if slot != "0" else f"({group}) * {n_slots}",
                   smem_slot_r0=slot,
                   smem_vals_w=", ".join(f"{b}[w * {n_slots} + {slot}]" for b in bufs),
                   writer=f"(lane & {lane_axis_mask}) == 0" if lane_axis_mask else "true",
                   barrier_before=em.loop_depth > 0 and op not in em.smem.unguarded_reductions)
    em.write(em.macros.reduce(ctx))
    # Results: the accumulators, converted back to the result type where they were widened.
    for i, (res, acc) in enumerate(zip(op.results, accs)):
        rdt = res.dtype
        conv = (lambda x: f"tp::cast<{cspell.ctype(rdt)}>({x})") if acc_dts[i] != rdt else (lambda x: x)
        if not any(res in user.operands for user in em.kernel.walk()):
            continue  # e.g. the value half of tl.argmax: an unused copy would draw a compiler warning
        if not res.shape:
            name = em.name_of(res, "red")
            em.write(f"const {cspell.ctype(rdt)} {name} = {conv(acc['name'] + '[0]')};")
            em.bind(res, Read(scalar=name, ctype=cspell.ctype(rdt)), None)
        elif acc_dts[i] != rdt:
            em.define_block(res, out_layout, lambda r: conv(f"{acc['name']}[{r}]"))
        else:
            em.names[res] = acc["name"]
            em.bind(res, Read(array=acc["name"], ctype=acc["ctype"]), out_layout)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
