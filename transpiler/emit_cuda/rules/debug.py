"""Lowering of `device_print` (printf of every element a thread holds, with the program id and the index) and of
`device_assert` (compiled under @jit(debug=True): CUDA's own assertion call for each element that fails)."""
from __future__ import annotations

import os

from ... import dtypes
from ...analysis.layout_assignment import default_layout
from ..emitter import lowering

_FORMAT = {dtypes.Kind.FLOAT: "%f", dtypes.Kind.BOOL: "%d"}


def _fmt(dt, hex_):
    if dt.is_ptr():
        return "%p", lambda x: f"(const void*)({x})"
    if dt.kind is dtypes.Kind.FLOAT:
        return ("%a" if hex_ else "%f"), lambda x: f"(double)tp::cast<float>({x})"
    if dt.bits == 64:
        return ("%llx" if hex_ else ("%lld" if dt.signed else "%llu")), lambda x: f"({'long long' if dt.signed else 'unsigned long long'})({x})"
    return ("%x" if hex_ else ("%d" if dt.signed or dt.kind is dtypes.Kind.BOOL else "%u")), lambda x: f"(int)({x})"


@lowering("device_print")
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
        "transpiler.analysis.layout_assignment", fromlist=["default_layout"]).default_layout(blocks[0].shape, em.kernel.num_warps)
    reads = [em.operand(v, lay) if v.shape else None for v in op.operands]
    idx = [em.coord_expr(lay, d) for d in range(lay.rank)]
    parts, args = [], []
    for v, rd in zip(op.operands, reads):
        f, conv = _fmt(v.dtype, hex_)
        parts.append(f)
        args.append(conv(rd.at("r") if rd is not None else em.scalar(v)))
    fmt = f"pid (%d, %d, %d) idx ({', '.join(['%d'] * lay.rank)}) {prefix}" + " ".join(parts) + "\\n"
    em.write(em.macros.reg_loop(lay.num_regs, f'printf("{fmt}", {", ".join([pid] + idx + args)})'))


# CUDA's device-side assertion (what assert() calls in device code; NVRTC has no <assert.h>): prints
# "file:line: function: block: [...], thread: [...] Assertion `msg` failed." and fails the launch with
# cudaErrorAssert.
_ASSERTFAIL = ('extern "C" __device__ void __assertfail(const char *message, const char *file, unsigned int line,\n'
               '                                        const char *function, size_t char_size);')


def _c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@lowering("device_assert")
def device_assert(em, op, layout):
    if _ASSERTFAIL not in em.device_functions:
        em.device_functions.append(_ASSERTFAIL)
    loc = op.loc
    message = _c_string(op.attrs["msg"] or "tl.device_assert")
    where = f"{_c_string(os.path.basename(loc.file) if loc else em.kernel.name)}, {loc.line if loc else 0}u"
    function = _c_string(loc.function if loc and loc.function else em.kernel.name)
    cond = op.operands[0]
    if not cond.shape:
        test = em.scalar(cond)
        em.write(f"if (!({test})) __assertfail({message}, {where}, {function}, 1);")
        return
    lay = em.layouts.layout.get(cond) or default_layout(cond.shape, em.kernel.num_warps)
    test = em.operand(cond, lay).at("r")
    em.write(em.macros.reg_loop(lay.num_regs, f"if (!({test})) __assertfail({message}, {where}, {function}, 1)"))
