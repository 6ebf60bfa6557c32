"""Lowering of `gather` (`tl.gather(src, index, axis)`): the source through shared memory.

Every thread writes its registers of the source (in the layout the layout pass gave it) to a scratch buffer,
row-major; after a barrier each register of the result (in the index's layout) reads the element at its own
coordinates with the one along `axis` replaced by its index, or 0 where the index is outside the source
(Triton leaves that undefined). Replicated registers write the same value to the same place. A register per
element either way, where the one-hot composition this replaced held index x source-extent elements (a 256 x 256
gather spilled about 800 bytes and took NVRTC 30-40 s).
"""
from __future__ import annotations

from ..emitter import lowering
from ...analysis.scratch_plan import scratch_key
from ...parse.ir import OpKind


@lowering(OpKind.GATHER)
def gather(em, op, layout_unused):
    src_v, index_v = op.operands
    axis = op.attrs["axis"]
    src_layout = em.layouts.gather_source[op]
    out_layout = em.layouts.layout[op.result]
    src = em.operand(src_v, src_layout)
    index = em.operand(index_v, out_layout)
    ct = em.ctype(src_v)
    shape = src_v.shape
    (buf,), barrier = em.scratch_buffers(scratch_key("gather", op), [(f"gather_{em.name_of(src_v)}", ct)])
    em.write(f"// {em.name_of(src_v)} through shared memory, read back at the indices along axis {axis}")
    if barrier:
        em.write("__syncthreads();")
    em.write(f"#pragma unroll\nfor (int r = 0; r < {src_layout.num_regs}; ++r) "
             f"{buf}[{em.linear_index(src_layout, 'r')}] = {src.at('r')};")
    em.write("__syncthreads();")
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    wide = "long long" if index_v.dtype.bits > 32 else "int"

    def element(r):
        idx = f"static_cast<{wide}>({index.at(r)})"
        terms = [f"{idx} * {strides[axis]}" if strides[axis] != 1 else idx]
        for d in range(len(shape)):
            if d != axis:
                c = em.coord_expr(out_layout, d, r)
                if c != "0":
                    terms.append(f"({c}) * {strides[d]}" if strides[d] != 1 else f"({c})")
        inside = f"static_cast<unsigned {wide}>({idx}) < {shape[axis]}u"
        return f"{inside} ? {buf}[{' + '.join(terms)}] : tp::cast<{ct}>(0)"

    em.define_block(op.result, out_layout, element)
