"""IR + analysis decisions in, one self-contained `.cu` file out (lowering rules + Jinja templates)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from . import cspell
from . import rules  # noqa: F401  (registers the lowering rules)
from .device_header import used_helpers
from .emitter import Emitter, Read, jinja_env, templates_dir
from .single_trip import fold_single_trip_loops
from .text import break_long_lines, indent_pragmas, layout_in_words, wrap


def _params(kernel, written, c_names):
    out = []
    for a in kernel.args:
        dt = a.value.dtype
        name = c_names[a.value]
        if dt.is_ptr():
            const = "" if a.name in written else "const "
            out.append(f"{const}{cspell.ctype(dt.element_ty)}* __restrict__ {name}")
        else:
            out.append(f"{cspell.ctype(dt)} {name}")
    return out


def _specialization_text(kernel):
    parts = []
    for a in kernel.args:
        dt = a.value.dtype
        note = ""
        if dt.is_ptr() and a.divisibility > 1:
            note = f" ({a.divisibility}-byte aligned)"
        elif not dt.is_ptr() and a.equal_to_one:
            note = " (== 1)"
        elif not dt.is_ptr() and a.divisibility > 1:
            note = f" (multiple of {a.divisibility})"
        parts.append(f"{a.name} None (a null pointer, unused)" if a.is_none else f"{a.name} {dt}{note}")
    parts += [f"{k} = {getattr(v, '__transpiler_builtin__', None) or repr(v)}" for k, v in kernel.constexprs.items()]
    return [line[3:] for line in wrap(parts, "// specialization: ", "//   ")]    # the template writes the `// `


def _device_header(kernel_code: str, with_tiles: bool, with_fp8: bool = False, with_tma: bool = False) -> str:
    """Our device helpers, inlined so the `.cu` stands alone: of each header only the helpers `kernel_code` (the
    rest of the file) uses, directly or through another (device_header.py); the tile and tensor-core header and
    the TMA one only where used, and CUDA's fp8 types only in kernels that name them."""
    def shaken(name, used_by):
        return used_helpers((templates_dir() / name).read_text(), used_by)
    tma = shaken("device_tma.cuh", kernel_code) if with_tma else ""
    tiles = shaken("device_tiles.cuh", kernel_code + tma) if with_tiles else ""
    text = shaken("device.cuh", kernel_code + tiles + tma)
    if with_fp8:
        text = "#include <cuda_fp8.h>\n" + text
    return text + "".join("\n" + part for part in (tiles, tma) if part)


def include_dir():
    """The folder of our device headers (`device.cuh`, ...), for `nvcc -I` on `emit_kernel(..., include_headers=True)`."""
    return templates_dir()


def _included_headers(headers, with_fp8) -> str:
    """The device helpers as nvcc users get them: our headers #included whole (NVRTC gets them inlined)."""
    lines = ["#include <cuda_fp8.h>"] if with_fp8 else []
    lines.append("// device helpers: transpiler's headers, from transpiler.emit_cuda.include_dir()")
    return "\n".join(lines + [f'#include "{name}"' for name in headers])


OCCUPANCY_MACRO = "TP_MIN_BLOCKS_PER_SM"   # runtime/occupancy.py defines it on a second compile
MAXNREG_MACRO = "TP_MAXNREG"               # a launch with maxnreg=n compiles with it defined to n


@dataclass(frozen=True)
class EmittedKernel:
    """The `.cu` text and what a launch must provide besides the arguments."""

    source: str
    shared_bytes: int      # dynamic shared memory a launch gives each program (a residency reservation included)
    shared_buffers: tuple = ()   # (name, C type, count, bytes, purpose) of each buffer, for reports
    required_arch: object = None  # analysis.arch_requirements.ArchRequirement, or None
    tensor_maps: tuple = ()       # host descriptions of the tensor map parameters after the arguments (rules/tma.py)
    row_loop: bool = False       # programs folded into a row loop: a launch adds the grid's x as a last parameter
    persistent: bool = False     # ... and launches at most one wave of blocks (rows are prefetched)
    programs_per_block: int = 1  # programs of the grid's x in one block, one warp each (program_packing.py)
    row_loop_waves: int = 0      # persistent only for grids of at most this many waves, else every block (0: any)
    residency: object = None     # analysis.residency.ResidencyPlan: shared_bytes includes a reservation
    num_warps: int = 0           # warps of a block, when not the launch's num_warps (analysis/program_warps.py)
    unspelled_scratch: tuple = ()  # scratch uses analysis planned that no rule spelled (tests: none)


def _reads(text, name) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _referenced_thread_bases(lines, body):
    """The thread-base declarations the body reads: one asked for by an expression that was then not written
    (a derived kernel's shapes can do that) would be an unused variable, which NVRTC warns about. Later lines
    (tile offsets) may read earlier ones, so they are checked last to first."""
    kept, text = [], body
    for line in reversed(lines):
        name = line.split("=")[0].split()[-1]
        if re.search(rf"\b{re.escape(name)}\b", text):
            kept.append(line)
            text += "\n" + line
    return kept[::-1]


def emit_kernel(kernel, analysis, include_headers=False) -> EmittedKernel:
    """The kernel's CUDA with our device helpers inlined (what NVRTC compiles); with `include_headers`, its
    source `#include`s our headers whole instead, for nvcc users (`nvcc -I<include_dir()>`)."""
    em = Emitter(kernel, analysis)
    for a in kernel.args:
        name = em.name_of(a.value, a.name)    # a parameter named like a template local (`r`) is renamed
        em.bind(a.value, Read(scalar=name, ctype=cspell.ctype(a.value.dtype)), None)
    em.emit_region(kernel.body)
    notes = []
    for layout, i in sorted(em.layout_ids.items(), key=lambda kv: kv[1]):
        notes += layout_in_words(layout, i)
    shared_bytes = em.smem.total_bytes()
    residency = analysis.residency     # how many wgmma programs may share an SM (analysis/residency.py)
    smem_constants = [f"constexpr int {name} = {value};" for name, value in em.smem.constants()]
    params = _params(kernel, analysis.read_only.written_args, em.names)
    body = "\n".join(indent_pragmas(fold_single_trip_loops(em.lines)))
    row_loop = getattr(em, "row_count_param", None) is not None
    if row_loop:       # the user's grid x, appended by the runtime after the arguments' slots
        params.append(f"const int {em.row_count_param}")
    if em.uses_tma:     # after the slots: the tensor maps, then whether the host encoded them all
        params += [decl for decl, _ in em.tma_params] + [f"int {em.tma_ready}"]
        if em.tma_prefetch:     # before the index arithmetic, so the descriptors' fetch overlaps it
            maps = " ".join(f"tp::prefetch_tensormap(&{decl.split()[-1]});" for decl, _ in em.tma_params)
            body = f"  if ({em.tma_ready} && threadIdx.x == 0) {{ {maps} }}\n" + body
    if analysis.packing and shared_bytes:
        raise AssertionError("a packed kernel's programs needed shared memory: program_packing.py let through "
                             "a kernel whose programs share their block")
    uses_fp8 = any("__nv_fp8" in text for text in params + [body])
    thread_bases = _referenced_thread_bases(em.thread_base_lines, body)
    reads_ids = "\n".join([body, *thread_bases])      # what reads `lane` and `warp`: the body and its bases
    context = dict(
        source_file=os.path.basename(kernel.source_file),  # no absolute path: stable snapshots
        name=kernel.name, specialization=_specialization_text(kernel),
        num_warps=analysis.options.num_warps, threads=32 * analysis.options.num_warps,
        launched_warps=analysis.launched_warps, layout_notes=notes,
        programs_per_block=analysis.programs_per_block,
        # Tensor-core kernels plan their registers (fragments, stages); the others let the runtime tune occupancy.
        occupancy_macro=None if em.uses_tiles else OCCUPANCY_MACRO, maxnreg_macro=MAXNREG_MACRO,
        device_header="", include_flag="",
        device_functions=["\n".join(indent_pragmas(f.split("\n"))) for f in em.device_functions],
        param_lines=[line.strip() for line in wrap(params, "", "", ") {", 116)] if params else [],
        unused_thread_ids=" ".join(f"(void){n};" for n in ("lane", "warp") if not _reads(reads_ids, n)),
        shared_bytes=shared_bytes, residency=residency,
        smem_align=em.smem.align,
        shared_decls=(smem_constants + em.shared_decls) if shared_bytes else [],
        thread_bases=thread_bases, body=body)
    template = jinja_env().get_template("kernel.cu.j2")
    if include_headers:
        headers = ["device.cuh"] + ["device_tiles.cuh"] * em.uses_tiles + ["device_tma.cuh"] * em.uses_tma
        context.update(device_header=_included_headers(headers, uses_fp8),
                       include_flag=' -I"$(python -m transpiler include-dir)"')
    else:
        context["device_header"] = _device_header(template.render(**context), em.uses_tiles, uses_fp8, em.uses_tma)
    source = template.render(**context)
    if not analysis.options.line_directives:      # a `#line` directive numbers the lines after it: keep them
        source = "\n".join(break_long_lines(source.split("\n")))
    return EmittedKernel(source, residency.launch_shared_bytes if residency else shared_bytes, em.smem.report(),
                         analysis.required_arch, tuple(spec for _, spec in em.tma_params), row_loop,
                         bool(analysis.row_loop and analysis.row_loop.persistent), analysis.programs_per_block,
                         analysis.row_loop.max_waves if analysis.row_loop else 0, residency,
                         analysis.options.num_warps, em.smem.unspelled_scratch())


__all__ = ["emit_kernel", "EmittedKernel", "OCCUPANCY_MACRO", "MAXNREG_MACRO", "include_dir"]
