"""The explain report: the decisions made for one specialization, joined to the Python lines they concern.

Reads what the passes already decided (the IR, its `KernelAnalysis` with the decision log and the shared-memory
plan, scratch uses included) and writes plain text: the specialization, each
layout with its registers, lanes and warps per dimension, then per Python line the layout of each block
value defined there, the vector width of each load and store with the reason, how each reduction crosses
registers, lanes and warps, and the shared memory used. Decides nothing itself, and runs the emitter only for
the register report of an `arch` (ptxas needs the source).

`kernel.explain(*args, **constexprs)` and `python -m transpiler explain examples/softmax.py` print it.
"""
from __future__ import annotations

import os

from .analysis.layouts import LinearLayout
from .parse.ir import OpKind


def _bits(bases, dim):
    return sum(1 for b in bases if b[dim])


def layout_per_dim(layout: LinearLayout) -> list:
    """Per dimension: (size, registers, contiguous registers, lanes, warps) along it."""
    out = []
    for d, size in enumerate(layout.shape):
        out.append((size, 1 << _bits(layout.reg, d), layout.contiguous_regs(d), 1 << _bits(layout.lane, d),
                    1 << _bits(layout.warp, d)))
    return out


def describe_layout(layout: LinearLayout) -> str:
    dims = []
    for d, (size, regs, contig, lanes, warps) in enumerate(layout_per_dim(layout)):
        run = f" in runs of {contig}" if contig > 1 else ""
        dims.append(f"dim {d} ({size}): {regs} registers{run} x {lanes} lanes x {warps} warps")
    copies = []
    rep_lanes = bin(layout.replicated_lane_mask()).count("1")
    rep_warps = bin(layout.replicated_warp_mask()).count("1")
    if rep_lanes:
        copies.append(f"{1 << rep_lanes} lanes hold copies")
    if rep_warps:
        copies.append(f"{1 << rep_warps} warps hold copies")
    text = f"{list(layout.shape)}, {layout.num_regs} registers per thread; " + "; ".join(dims)
    return text + (f" ({', '.join(copies)})" if copies else "")


class _Names:
    """Short names L0, L1, ... for the layouts in order of first appearance."""

    def __init__(self):
        self.ids = {}

    def __call__(self, layout):
        if layout not in self.ids:
            self.ids[layout] = f"L{len(self.ids)}"
        return self.ids[layout]


def _value_name(v):
    return v.name or "(unnamed value)"


def _reduce_text(op, layouts, name_of):
    src = layouts.reduce_input[op]
    axis = op.attrs["axis"]
    size, regs, _, lanes, warps = layout_per_dim(src)[axis]
    lane_masks = [1 << i for i, b in enumerate(src.lane) if b[axis]]
    steps = [f"{regs} registers combined in each thread"]
    if lane_masks:
        steps.append(f"{lanes} lanes by xor shuffles ({', '.join(map(str, lane_masks))})")
    if warps > 1:
        steps.append(f"{warps} warps through shared memory")
    else:
        steps.append("no shared memory")
    result = src.drop_dims([axis])
    where = "a scalar" if not result.shape else f"layout {name_of(result)} (the slice of {name_of(src)})"
    operand = op.operands[0]
    return (f"reduce {op.attrs['combine']} over dim {axis} ({size} elements) of {_value_name(operand)} "
            f"{operand.type} in {name_of(src)}: " + ", then ".join(steps) + f"; result in {where}")


def _memory_text(op, analysis, name_of):
    layout = analysis.layouts.mem_layout[op]
    vec = analysis.vector_width[op]
    ptr = op.operands[0]
    elem = ptr.dtype.element_ty
    n_access = layout.num_regs // vec
    what = _value_name(op.result) if op.name == OpKind.LOAD else _value_name(op.operands[1])
    return (f"{op.name} {what} {elem}[{'x'.join(map(str, ptr.shape))}] in {name_of(layout)}: vector width {vec} "
            f"({vec * elem.itemsize} bytes per access, {n_access} access{'es' if n_access != 1 else ''} per "
            f"thread)")


def _specialization(ir) -> list:
    lines = []
    for a in ir.args:
        dt = a.value.dtype
        note = ""
        if dt.is_ptr():
            note = f"{a.divisibility}-byte aligned" if a.divisibility > 1 else "alignment unknown"
        elif a.equal_to_one:
            note = "== 1, folded"
        elif dt.is_int():
            note = f"multiple of {a.divisibility}" if a.divisibility > 1 else "no divisibility known"
        lines.append(f"  {a.name}: {dt}" + (f" ({note})" if note else ""))
    lines += [f"  {k} = {v!r} (constexpr)" for k, v in ir.constexprs.items()]
    return lines


def explain_ir(ir, analysis, arch=None) -> str:
    """The report for a kernel IR and its analysis (with `arch`, the registers of NVRTC's compile for it)."""
    name_of = _Names()
    layouts = analysis.layouts
    num_warps = analysis.options.num_warps
    threads = (f"{32 * num_warps} threads per block, {analysis.programs_per_block} programs of one warp"
               if analysis.packing else f"{32 * num_warps} threads per program")
    out = [f"kernel {ir.name} ({os.path.basename(ir.source_file)}), num_warps = {num_warps} ({threads})", "",
           "specialization:"]
    out += _specialization(ir)

    by_line: dict = {}
    for op in ir.walk():
        line = op.loc.line if op.loc else None
        entries = by_line.setdefault(line, [])
        if op.name in (OpKind.LOAD, OpKind.STORE) and op in layouts.mem_layout:
            entries.append(_memory_text(op, analysis, name_of))
        elif op.name == OpKind.REDUCE:
            entries.append(_reduce_text(op, layouts, name_of))
        elif op.name == OpKind.SCAN:
            plan = layouts.scan_plan[op]
            entries.append(f"scan {op.attrs['combine']} along dim {plan.axis}"
                           f"{' from the end' if op.attrs['reverse'] else ''} in {name_of(plan.layout)}: "
                           f"{plan.describe()}")
        for r in op.results:
            if r.shape and r.name and op.name not in (OpKind.LOAD):
                if r in layouts.layout:
                    entries.append(f"{r.name} {r.type} in {name_of(layouts.layout[r])}")
                elif r in layouts.flexible:
                    entries.append(f"{r.name} {r.type}: computed in the layout of each use (no registers of "
                                   "its own)")
    for d in analysis.decisions.items:
        by_line.setdefault(d.line, []).append(f"why [{d.pass_name}]: {d.what} ({d.why})")

    out += ["", "per line:"]
    for line in sorted(k for k in by_line if k is not None):
        entries = list(dict.fromkeys(by_line[line]))
        if not entries:
            continue
        text = ir.source_lines.get(line, "").strip()
        out.append(f"  line {line}: {text}")
        out += [f"    {e}" for e in entries]
    if by_line.get(None):
        out.append("  (no line)")
        out += [f"    {e}" for e in dict.fromkeys(by_line[None])]

    out += ["", "layouts:"]
    for layout, lid in name_of.ids.items():
        out.append(f"  {lid}: {describe_layout(layout)}")
        out.append(f"      bases: {layout.describe().split(': ', 1)[1]}")

    out += [""] + shared_memory_text(analysis)
    out += ["", _occupancy_text(ir, analysis, arch)]
    return "\n".join(out) + "\n"


def _about(v) -> str:
    """The Python name of the value a buffer holds, else what made it and where."""
    if v is None:
        return ""
    if v.name:
        return v.name
    owner = v.owner
    line = getattr(getattr(owner, "loc", None), "line", None)
    what = getattr(owner, "name", "value")
    if what in (OpKind.REDUCE, OpKind.SCAN):
        what = f"{owner.attrs['combine']} {'reduction' if what == OpKind.REDUCE else 'scan'}"
    return f"the {what} of line {line}" if line else f"a {what}"


def shared_memory_text(analysis) -> list:
    """The shared-memory plan (analysis/shared_memory.py, scratch_plan.py): the bytes a launch gives a program and
    each buffer with its offset; scratch buffers share their bytes with every other scratch use."""
    plan, res = analysis.shared_memory, analysis.residency
    total = res.launch_shared_bytes if res else plan.total_bytes()
    reserved = (f" at launch (the buffers use {res.used_shared_bytes}; the rest keeps more than {res.programs_per_sm} "
                f"program(s) off an SM)" if res else "")
    out = [f"shared memory: {total} bytes per program{reserved}" + (":" if plan.buffers else " (none)")]
    for b in plan.buffers:
        about = _about(b.value)
        out.append(f"  {about or b.purpose}: {b.count} x {b.dtype} = {b.nbytes} bytes at {b.offset} ({b.purpose}"
                   f"{', scratch' if b.kind == 'scratch' else ''})")
    return out


def _occupancy_text(ir, analysis, arch) -> str:
    if analysis.dots:       # the emitter leaves the occupancy macro out of kernels with tiles or tensor cores
        return "registers: as ptxas chooses under __launch_bounds__ (tensor-core kernels plan their own)"
    if arch is None:
        return ("registers: tuned when compiled for a GPU (a second compile for one more program per SM when ptxas' "
                "report puts it within reach; explain(..., arch='sm_90a') shows the outcome)")
    from .emit_cuda import OCCUPANCY_MACRO, emit_kernel
    from .runtime.compiler import compile_tuned
    emitted = emit_kernel(ir, analysis)
    if OCCUPANCY_MACRO not in emitted.source:   # a conversion by stmatrix uses the tensor-core helpers
        return "registers: as ptxas chooses under __launch_bounds__ (tensor-core kernels plan their own)"
    _, occupancy = compile_tuned(emitted.source, ir.name, arch, emitted.shared_bytes)
    text = occupancy.describe() if occupancy else "no ptxas report"
    per_block = emitted.programs_per_block
    if occupancy and per_block > 1:     # the occupancy counts blocks; each holds several one-warp programs
        blocks = occupancy.blocks_per_sm
        text = text.replace(f"{blocks} programs per SM",
                            f"{blocks} blocks of {per_block} programs per SM ({blocks * per_block} programs)", 1)
    return f"registers ({arch}): " + text


def explain_kernel(kernel, *args, num_warps=4, num_stages=3, arch=None, **constexprs) -> str:
    """The report for the specialization these launch arguments select (NumPy arrays may stand in); with
    `arch` ('sm_90a', ...), the source written for that architecture (warpgroup MMA on sm_90a) and the
    registers and programs per SM NVRTC's compile for it gives."""
    ir, analysis = kernel.analysis(*args, num_warps=num_warps, num_stages=num_stages, arch=arch, **constexprs)
    return explain_ir(ir, analysis, arch)
