"""Spelling `tl.map_elementwise` (parse/semantic_map.py): the mapped function's region as a device function of
scalars, returning the op's result, called on every register of the block (or once, on scalars)."""
from __future__ import annotations

from .emitter import Read


def device_function(em, op) -> str:
    """Define the region of map op `op` as a `__device__` function; its name."""
    region = op.regions[0]
    fname = em.fresh("mapped")
    result_ct = em.ctype(op.result)
    with em.detached_text():
        em.push_scope()
        params = []
        for a in region.args:
            ct = em.ctype(a)
            cname = em.fresh(a.name or "x")
            params.append(f"{ct} {cname}")
            em.bind(a, Read(scalar=cname, ctype=ct), None)
        for inner in region.ops[:-1]:
            em.emit_op(inner)
        result = em.scalar(region.ops[-1].operands[op.attrs["result"]])
        em.write(f"return {result};")
        body = "\n".join(em.lines)
        em.pop_scope()
    em.device_functions.append(f"// the function tl.map_elementwise maps at line {op.loc.line if op.loc else '?'}"
                               f"{', result ' + str(op.attrs['result']) if op.attrs['result'] else ''}\n"
                               f"__device__ __forceinline__ {result_ct} {fname}({', '.join(params)}) {{\n{body}\n}}")
    return fname


def call_for_effects(em, op, layout, fname):
    """The mapped function called on every register for what it writes, its unread result dropped."""
    if not op.result.shape:
        em.write(f"{fname}({', '.join(em.scalar(o) for o in op.operands)});")
        return
    reads = [em.operand(o, layout) for o in op.operands]
    em.write(f"#pragma unroll\nfor (int r = 0; r < {layout.num_regs}; ++r) "
             f"{fname}({', '.join(rd.at('r') for rd in reads)});")
