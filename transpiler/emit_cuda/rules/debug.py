"""Lowering of `device_print`: printf of every element a thread holds, with the program id and the index."""
from __future__ import annotations

from ... import dtypes
from ..emitter import lowering
from ...parse.ir import OpKind

_FORMAT = {dtypes.Kind.FLOAT: "%f", dtypes.Kind.BOOL: "%d"}


def _fmt(dt, hex_):
    if dt.is_ptr():
        return "%p", lambda x: f"(const void*)({x})"
    if dt.kind is dtypes.Kind.FLOAT:
        return ("%a" if hex_ else "%f"), lambda x: f"(double)tp::cast<float>({x})"
    if dt.bits == 64:
        return ("%llx" if hex_ else ("%lld" if dt.signed else "%llu")), lambda x: f"({'long long' if dt.signed else 'unsigned long long'})({x})"
    return ("%x" if hex_ else ("%d" if dt.signed or dt.kind is dtypes.Kind.BOOL else "%u")), lambda x: f"(int)({x})"


def _c_text(text):
    """`text` inside a C string literal used as a printf format."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("\n", " ")


@lowering(OpKind.DEVICE_PRINT)
def device_print(em, op, layout):
    prefix = op.attrs["prefix"].replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    hex_ = op.attrs["hex"]
    pid = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z"
    blocks = [v for v in op.operands if v.shape]
    if not blocks:
        parts, args = [], []
        for v in op.operands:
            f, conv = _fmt(v.dtype, hex_)
            parts.append(f)
            args.append(conv(em.scalar(v)))
        fmt = f"pid (%d, %d, %d) {prefix}" + " ".join(parts) + "\\n"
        em.write(f'if (threadIdx.x == 0) printf("{fmt}", {", ".join([pid] + args)});')
        return
    lay = em.layouts.layout.get(blocks[0]) or __import__(
        "transpiler.analysis.layout_assignment", fromlist=["default_layout"]).default_layout(blocks[0].shape, em.options.num_warps)
    reads = [em.operand(v, lay) if v.shape else None for v in op.operands]
    idx = [em.coord_expr(lay, d) for d in range(lay.rank)]
    parts, args = [], []
    for v, rd in zip(op.operands, reads):
        f, conv = _fmt(v.dtype, hex_)
        parts.append(f)
        args.append(conv(rd.at("r") if rd is not None else em.scalar(v)))
    fmt = f"pid (%d, %d, %d) idx ({', '.join(['%d'] * lay.rank)}) {prefix}" + " ".join(parts) + "\\n"
    em.write(em.macros.reg_loop(lay.num_regs, f'printf("{fmt}", {", ".join([pid] + idx + args)})'))


@lowering(OpKind.DEVICE_ASSERT)
def device_assert(em, op, layout):
    """Debug mode only (`options.debug`): every element a thread holds is checked; a failure prints the
    program id, the index, the Python line and the message, then traps (the launch reports a fault)."""
    (cond,) = op.operands
    where = f"{em.kernel.source_file}:{op.loc.line}" if op.loc else em.kernel.name
    head = _c_text(f"device_assert failed at {where}: {op.attrs['msg']}")
    pid = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z"
    if not cond.shape:
        em.write(f'if (!({em.scalar(cond)})) {{ printf("pid (%d, %d, %d) {head}\\n", {pid}); __trap(); }}')
        return
    lay = em.layouts.layout.get(cond) or __import__(
        "transpiler.analysis.layout_assignment", fromlist=["default_layout"]).default_layout(cond.shape, em.options.num_warps)
    read = em.operand(cond, lay)
    idx = [em.coord_expr(lay, d) for d in range(lay.rank)]
    fmt = f"pid (%d, %d, %d) idx ({', '.join(['%d'] * lay.rank)}) {head}\\n"
    em.write(em.macros.reg_loop(lay.num_regs, f'if (!({read.at("r")})) {{ printf("{fmt}", {", ".join([pid] + idx)}); '
                                               f'__trap(); }}'))
