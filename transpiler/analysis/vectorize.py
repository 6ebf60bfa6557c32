"""Vector width of every block load and store: the widest access proven legal, up to 16 bytes per thread.

Decides, from the op's layout (how many leading registers run along the fastest dimension) and the pointer's
axis information (contiguity, and divisibility of the first element in bytes), how many elements one access
moves; and whether the mask is proven uniform over such a run (then one predicate guards the run; otherwise
each run is tested as a whole and only a ragged run falls back to element accesses).
"""
from __future__ import annotations

from ..parse.ir import OpKind
from .layout_assignment import coalesced_order, widest_access


def vectorize(kernel, axis, layouts, decisions):
    widths, mask_uniform = {}, {}
    for op, layout in layouts.mem_layout.items():
        ptr = op.operands[0]
        info = axis[ptr]
        elem = ptr.dtype.element_ty.itemsize
        fastest = coalesced_order(info, len(ptr.shape))[0]
        regs = layout.contiguous_regs(fastest)
        vec = widest_access(elem, regs, info.contiguity[fastest], max(1, info.divisibility[fastest] // elem))
        widths[op] = vec
        mask_index = 2 if op.name == OpKind.STORE else 1
        if len(op.operands) > mask_index:
            m = axis[op.operands[mask_index]]
            mask_uniform[op] = m.constancy[fastest] >= vec
        decisions.add("vectorize", op, f"{op.name}: {vec} x {elem} bytes per access"
                      + ("" if len(op.operands) <= mask_index else
                         ("; mask uniform over each run" if mask_uniform[op] else
                          "; mask checked per run, ragged runs use element accesses")),
                      f"{regs} contiguous registers along dim {fastest}, pointer contiguity "
                      f"{info.contiguity[fastest]}, alignment {info.divisibility[fastest]} bytes")
    return widths, mask_uniform
