"""Lowering of `atomic_rmw` and `atomic_cas`: PTX `atom` / `red` with the op's order and scope.

Each (instruction, operation, element type, order, scope) a kernel uses becomes one small device function
named after the instruction (`atom_add_acq_rel_gpu(float* p, float v)`), spelled by `templates/atomics.j2`;
the kernel calls it once per element its threads perform (analysis/atomics.py decides which threads, and
whether the old values travel through shared memory). Masked-off elements do nothing and give 0.
fp32/fp64 max and min are Triton's pair of integer atomics; bf16 add is one instruction from sm_90 on and a
compare-and-swap loop before.
"""
from __future__ import annotations

from ... import dtypes
from .. import cspell
from ..emitter import Read, jinja_env, lowering
from ...parse.ir import OpKind
from ...analysis.scratch_plan import scratch_key

_PTX_OP = {"xchg": "exch"}      # PTX's name where it is not Triton's
_FLOAT_REG = {dtypes.float32: "f", dtypes.float64: "d"}
_INT_REG = {16: "h", 32: "r", 64: "l"}


def _macros():
    return jinja_env().get_template("atomics.j2").module


def _ptx_type(op, dt):
    if op in ("and", "or", "xor", "xchg", "cas"):
        return f"b{dt.bits}"
    if dt in cspell.HALF_TYPES:
        return f"noftz.{'f16' if dt is dtypes.float16 else 'bf16'}"
    if dt.kind is dtypes.Kind.FLOAT:
        return f"f{dt.bits}"
    if op == "add" and dt.bits == 64:
        return "u64"                     # PTX adds 64-bit integers only as .u64 (the bits are the same)
    return f"{'s' if dt.signed else 'u'}{dt.bits}"


def _same_width_int(dt, signed):
    return {(32, True): dtypes.int32, (32, False): dtypes.uint32,
            (64, True): dtypes.int64, (64, False): dtypes.uint64}[(dt.bits, signed)]


def _add(em, text):
    if text not in em.device_functions:
        em.device_functions.append(text)


def helper(em, instruction, op, dt, sem, scope) -> str:
    """Name of the device function performing one atomic (emitting it, and what it calls, on first use)."""
    name = em.function_name(f"{instruction}_{op}_{sem}_{scope}")
    ctype = cspell.ctype(dt)
    returns = instruction == "atom"
    doc = (f"tl.atomic_{op} on {ctype}, {sem} at {scope} scope" + (": returns the old value" if returns else ""))
    ptx = f"{instruction}.{sem}.{scope}.global.{_PTX_OP.get(op, op)}.{_ptx_type(op, dt)}"
    macros = _macros()
    if op in ("max", "min") and dt.kind is dtypes.Kind.FLOAT:
        signed, unsigned = _same_width_int(dt, True), _same_width_int(dt, False)
        other = "min" if op == "max" else "max"
        text = macros.float_minmax(dict(
            doc=doc + " (Triton's integer pair)", name=name, ctype=ctype, result_ctype=ctype if returns else "void",
            returns=returns, signed=cspell.ctype(signed), unsigned=cspell.ctype(unsigned),
            when_positive=helper(em, instruction, op, signed, sem, scope),
            when_negative=helper(em, instruction, other, unsigned, sem, scope)))
    elif op == "add" and dt is dtypes.bfloat16:
        assert returns, "bf16 add is always an atom (before sm_90 it is a compare-and-swap loop)"
        text = macros.bf16_add(dict(doc=doc + " (a compare-and-swap loop before sm_90)", name=name, ptx=ptx,
                                    cas=helper(em, "atom", "cas", dt, sem, scope)))
    else:
        half = dt in cspell.HALF_TYPES
        text = macros.instruction(dict(
            doc=doc, name=name, ctype=ctype, result_ctype=ctype if returns else "void", returns=returns, ptx=ptx,
            args=["cmp", "v"] if op == "cas" else ["v"],
            raw="unsigned short" if half else ctype, reg=_FLOAT_REG.get(dt) or _INT_REG[dt.bits],
            to_raw="tp::bitcast<unsigned short>({})" if half else "{}",
            from_raw=f"tp::bitcast<{ctype}>({{}})" if half else "{}"))
    _add(em, text)
    return name


@lowering(OpKind.ATOMIC_RMW, OpKind.ATOMIC_CAS)
def atomic(em, op, layout):
    plan = em.analysis.atomics[op]
    v = op.result
    dt = v.dtype
    kind = op.attrs.get("op", "cas")
    fn = helper(em, plan.instruction, kind, dt, op.attrs["sem"], op.attrs["scope"])
    n_args = 2 if op.name == OpKind.ATOMIC_CAS else 1
    ptr_v, arg_vs, mask_v = op.operands[0], op.operands[1:1 + n_args], op.operands[1 + n_args:]
    if plan.scalar:
        at = em.scalar
    else:
        def at(x):
            return em.operand(x, layout).at("r")
    call = f"{fn}({', '.join(at(x) for x in [ptr_v, *arg_vs])})"
    mask = at(mask_v[0]) if mask_v else ""
    ctype = cspell.ctype(dt)
    ctx = dict(call=call, mask=mask, ctype=ctype, buf="", old="", barrier_before=False,
               result=f"({mask}) ? {call} : {cspell.literal(0, dt)}" if mask else call)
    if plan.returns_old:
        ctx["old"] = em.name_of(v, "old") if plan.scalar else em.array_name(v, layout)
        em.bind(v, Read(scalar=ctx["old"], ctype=ctype) if plan.scalar else Read(array=ctx["old"], ctype=ctype),
                None if plan.scalar else layout)
    if plan.broadcast:
        (ctx["buf"],), ctx["barrier_before"] = em.scratch_buffers(scratch_key("atomic", op),
                                                                  [(f"{ctx['old'].rstrip('_')}_shared", None)])
    if plan.scalar:
        em.write(_macros().scalar(ctx))
        return
    guards = [f"(lane & {plan.lane_guard}) == 0" if plan.lane_guard else "",
              f"(warp & {plan.warp_guard}) == 0" if plan.warp_guard else ""]
    ctx.update(n=layout.num_regs, guard=" && ".join(g for g in guards if g), index=em.linear_index(layout, "r"))
    em.write(_macros().block(ctx))
