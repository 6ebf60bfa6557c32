"""Lowering of `reduce`: in-thread, then across lanes by xor shuffles, then across warps through shared memory.

Which register, lane and warp bits run along the reduced axis is read off the operand's layout; the result
is the slice layout (those bits dropped), replicated over the lanes and warps that held the axis.
"""
from __future__ import annotations

import re

from .. import cexpr, cspell
from ..bits import bit_moves
from ..emitter import Read, lowering
from ...parse.ir import OpKind


def _combine_function(em, op, acc_ctypes):
    """Emit the user's combine_fn as a device function that folds x into acc in place."""
    region = op.regions[0]
    n = len(acc_ctypes)
    fname = em.fresh("combine")
    with em.detached_text():
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
    em.device_functions.append(f"// combine_fn of the tl.reduce at line {op.loc.line if op.loc else '?'}\n"
                               f"__device__ __forceinline__ void {fname}({', '.join(params)}) {{\n{body}\n}}")
    return fname


# The role a reduction's result plays, for its C name when the Python code gives it none (`x_max`, `e_sum`).
_ROLE = {"add": "sum", "max": "max", "min": "min", "xor": "xor", "argmax": "argmax", "argmin": "argmin"}


def _subscript(expr: str) -> str:
    """A register expression as the index handed to `Read.at` (compound ones parenthesized)."""
    return expr if re.fullmatch(r"\w+", expr) else f"({expr})"


@lowering(OpKind.REDUCE)
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
    used = [any(res in user.operands for user in em.kernel.walk()) for res in op.results]
    # One result register per thread and scalar results: the accumulators are scalars, no loop over results.
    single = n_out == 1 and not any(res.shape for res in op.results)
    operand_name = em.names.get(op.operands[0]) or op.operands[0].name
    role = op.results[0].name or (f"{operand_name}_{_ROLE.get(combine, 'red')}" if operand_name else "red")
    # A scalar result of the accumulator's own type is the accumulator itself.
    direct = single and all(a == r.dtype for a, r in zip(acc_dts, op.results))
    base = em.fresh(role if direct else f"{role}_acc")
    accs = []
    for i, (inp, ct, edt, adt) in enumerate(zip(inputs, acc_ctypes, elem_dts, acc_dts)):
        init = inp.at(_subscript(deposit_o))
        if edt != adt:
            init = f"tp::cast<{ct}>({init})"
        # each operand's accumulator is a name of its own (`base` + `0` could be another reduction's `base`);
        # one that is its result takes the result's Python name (`v, j = tl.max(..., return_indices=True)`)
        if len(inputs) == 1:
            name = base
        elif direct:
            name = base if i == 0 and not op.results[0].name else em.fresh(op.results[i].name or f"{role}_{i}")
        else:
            name = em.fresh(f"{base}{i}")
        accs.append(dict(name=name, ref=name if single else f"{name}[o]", ctype=ct, init=init))
    acc_refs_o = ", ".join(a["ref"] for a in accs)

    def value_of(i, inp, r):
        x = inp.at(r)
        return f"tp::cast<{acc_ctypes[i]}>({x})" if elem_dts[i] != acc_dts[i] else x

    input_vals = ", ".join(value_of(i, inp, _subscript(reg_of_ok)) for i, inp in enumerate(inputs))

    def shuffled(m):
        return ", ".join(f"tp::shfl_xor({a['ref']}, {m})" for a in accs)

    doubling = len(lane_masks) > 1 and all(b == 2 * a for a, b in zip(lane_masks, lane_masks[1:]))
    ctx = dict(accs=accs, n_out=n_out, single=single, n_in_thread=1 << len(red_regs),
               combine=fn, acc_refs_o=acc_refs_o, input_vals=input_vals, lane_masks=lane_masks, shuffled=shuffled,
               lane_loop=(lane_masks[0], lane_masks[-1]) if doubling else None, smem=bool(warp_bits))
    if warp_bits:
        n_groups = 1 << len(warp_bits)
        n_slots = max(out_layout.shape and _numel(out_layout.shape) or 1, 1)
        bufs = [em.shared_buffer(d, n_groups * n_slots, f"{base}{i}_smem" if len(accs) > 1 else f"{base}_smem",
                                 (op, "reduce", i)) for i, d in enumerate(acc_dts)]
        slot = em.linear_index(out_layout, "o")
        group = bit_moves("warp", [(b, j) for j, b in enumerate(warp_bits)], len(src_layout.warp))
        lane_axis_mask = sum(lane_masks)
        ctx.update(acc_bufs=list(zip(accs, bufs)), n_warp_groups=n_groups,
                   smem_slot_w=cexpr.add(cexpr.mul(group, n_slots), slot),
                   smem_slot_r0=slot,
                   smem_vals_w=", ".join(f"{b}[{cexpr.add(cexpr.mul('w', n_slots), slot)}]" for b in bufs),
                   writer=f"(lane & {lane_axis_mask}) == 0" if lane_axis_mask else "true",
                   barrier_before=em.loop_depth > 0 and op not in em.smem.unguarded_reductions)
    em.write(em.macros.reduce(ctx))
    # Results: the accumulators, converted back to the result type where they were widened.
    for i, (res, acc) in enumerate(zip(op.results, accs)):
        rdt = res.dtype
        conv = (lambda x: f"tp::cast<{cspell.ctype(rdt)}>({x})") if acc_dts[i] != rdt else (lambda x: x)
        if not used[i]:
            continue  # e.g. the value half of tl.argmax: an unused copy would draw a compiler warning
        if direct:
            em.names[res] = acc["name"]
            em.bind(res, Read(scalar=acc["name"], ctype=acc["ctype"]), None)
        elif not res.shape:
            name = em.name_of(res, role)
            em.write(f"const {cspell.ctype(rdt)} {name} = {conv(acc['ref'] if single else acc['name'] + '[0]')};")
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
