"""Lowering of a row loop whose rows ahead live in a shared-memory ring (analysis/row_ring.py).

The copies of the rows ahead (the prologue's `depth` rows, the body's row `depth` ahead) become per-run
`tp::row_ring_copy` (cp.async) into this thread's runs of a slot; a run the mask leaves out is written with the
load's `other`, a ragged run element by element. The prologue commits one group per row; the body commits its
row, waits until `depth` groups are in flight (this row's landed) and reads this row's slot into registers, the
region argument the body reduces. The loop carries the ring's read and write slots, not the rows.
"""
from __future__ import annotations

from .. import cspell
from ..emitter import Read
from .control import assign_yield, bind_args, declare_carried, loop_condition, unroll_pragma
from .memory import whole_run


def _thread_runs(em, ring):
    """The C name of this thread's first run in `ring`'s buffer (declared once, at the top)."""
    names = em.row_rings
    if ring.index not in names:
        ct = cspell.ctype(ring.dtype)
        base = em.shared_buffer(ring.dtype, ring.count, f"{em.name_of(ring.arg)}_ring_smem", (ring.arg, "row ring", 0))
        name = em.fresh(f"{em.name_of(ring.arg)}_ring")
        em.shared_decls.append(f"{ct}* {name} = {base} + threadIdx.x * {ring.vec};  // this thread's runs")
        names[ring.index] = name
    return names[ring.index]


def _slot_run(em, ring, slot):
    """C expression of this thread's run `v` of `slot`."""
    return f"{_thread_runs(em, ring)} + ({slot} * {ring.runs} + v) * {ring.threads * ring.vec}"


def ring_copy(em, op, ring, plan):
    """The row a copy op loads, into its slot of `ring` (the prologue's row k: slot k; the body's: the write slot)."""
    layout = em.layouts.mem_layout[op]
    vec = ring.vec
    ct = cspell.ctype(op.result.dtype)
    ptr = em.operand(op.operands[0], layout)
    mask = em.operand(op.operands[1], layout) if len(op.operands) > 1 else None
    other = em.operand(op.operands[2], layout) if len(op.operands) > 2 else None
    slot = ring.copies[op]
    slot_text = str(slot) if slot is not None else em.row_ring_slots[1]
    copy = f"tp::row_ring_copy<{vec}>(dst, {ptr.at('r')});"
    lines = [f"// {em.name_of(ring.arg)}: {'row ' + str(slot) if slot is not None else 'the row ahead'} into slot "
             f"{slot_text} of its ring (cp.async; a run off the mask holds `other`)",
             "#pragma unroll", f"for (int v = 0; v < {ring.runs}; ++v) {{", f"  const int r = v * {vec};",
             f"  {ct}* dst = {_slot_run(em, ring, slot_text)};"]
    if mask is None:
        lines.append(f"  {copy}")
    elif mask.array is None or em.analysis.mask_uniform.get(op, False):
        lines += [f"  if ({mask.at('r')}) {{", f"    {copy}", "  } else {", "    #pragma unroll",
                  f"    for (int j = 0; j < {vec}; ++j) dst[j] = {other.at('r + j')};", "  }"]
    else:
        lines += [f"  if ({whole_run(em, op, mask, vec)}) {{", f"    {copy}", "  } else {",
                  "    // the ragged run: element by element, through registers", "    #pragma unroll",
                  f"    for (int j = 0; j < {vec}; ++j) dst[j] = ({mask.at('(r + j)')}) ? *({ptr.at('r')} + j) : "
                  f"{other.at('(r + j)')};", "  }"]
    lines.append("}")
    em.write("\n".join(lines))
    if slot is not None and plan.last_prologue.get(slot) is op:
        em.write("tp::row_ring_commit();  // one group per row")
    if op is plan.last_ahead:
        em.write("tp::row_ring_commit();")
        em.write(f"tp::row_ring_wait<{plan.depth}>();  // this row's copies have landed (for this thread)")
        for r in plan.loads:
            _read_slot(em, r)


def _read_slot(em, ring):
    ct = cspell.ctype(ring.dtype)
    name = em.array_name(ring.arg, ring.layout)
    em.write(f"{ct} {name}[{ring.layout.num_regs}];\n#pragma unroll\nfor (int v = 0; v < {ring.runs}; ++v) "
             f"tp::load<{ring.vec}>(&{name}[v * {ring.vec}], {_slot_run(em, ring, em.row_ring_slots[0])});")
    em.bind(ring.arg, Read(array=name, ctype=ct), ring.layout)


def row_ring_for(em, op, plan):
    """The row loop, carrying the ring's slots instead of the rows it holds ahead."""
    lo, hi, step = (em.scalar(x) for x in op.operands[:3])
    region = op.regions[0]
    iv = region.args[0]
    kept = [i for i in range(len(op.results)) if i not in plan.carried]
    targets = declare_carried(em, [op.results[i] for i in kept], [op.operands[3 + i] for i in kept])
    for i, (rd, lay) in zip(kept, targets):
        em.bind(op.results[i], rd, lay)
    read, write = em.fresh("ring_read"), em.fresh("ring_write")
    slots = plan.depth + 1
    em.write(f"int {read} = 0, {write} = {plan.depth};  // the slots of this row and of the row {plan.depth} ahead")
    em.row_ring_slots = (read, write)
    ivname = em.name_of(iv, "i")
    ct = cspell.ctype(iv.dtype)
    em.write(unroll_pragma(op))
    em.write(f"for ({ct} {ivname} = {lo}; {loop_condition(ivname, hi, step, 1)}; {ivname} += {step}) {{")
    em.push_scope()
    em.bind(iv, Read(scalar=ivname, ctype=ct), None)
    em.push_scope()
    em.indent += 1
    em.loop_depth += 1
    args = [region.args[1 + i] for i in kept]
    bind_args(em, args, targets)
    em.emit_region(region)
    em.last_line = None
    yielded = region.ops[-1].operands
    assign_yield(em, targets, [yielded[i] for i in kept], args)
    em.write(f"{read} = {read} == {slots - 1} ? 0 : {read} + 1;")
    em.write(f"{write} = {write} == {slots - 1} ? 0 : {write} + 1;")
    em.loop_depth -= 1
    em.indent -= 1
    em.pop_scope()
    em.pop_scope()
    em.write("}")
    em.write("tp::row_ring_wait<0>();  // no copy outlives the kernel")

