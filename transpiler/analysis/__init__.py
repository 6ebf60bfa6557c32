"""Analysis passes, one decision per file; `analyze` runs them in order and collects their decisions."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..options import CompileOptions
from .arch_requirements import ArchRequirement, required_arch
from .atomics import plan_atomics
from .axis_info import AxisInfoAnalysis
from .decisions import DecisionLog
from .fp_contraction import contract
from .layout_assignment import LayoutAssignment, coalesced_order
from .load_combining import combine_loads
from .mask_runs import prefix_masks
from .packed_rows import PackedRows, plan_packed_rows
from .pipelining import plan_pipelines
from .program_packing import plan_packing
from .program_warps import plan_program_warps
from .read_only import ReadOnlyPointers, plan_read_only
from .row_loop import fold_row_loop
from .residency import plan_residency
from .row_ring import plan_row_ring
from .scratch_plan import plan_scratch
from .shared_memory import SharedMemoryPlan, plan_shared_memory
from .tensor_cores import plan_dots
from .tma import plan_tma
from .vectorize import vectorize


@dataclass
class KernelAnalysis:
    axis: AxisInfoAnalysis
    layouts: LayoutAssignment
    vector_width: dict
    mask_uniform: dict
    decisions: DecisionLog
    dots: dict          # dot op -> DotPlan (tensor_cores.py)
    pipelines: dict     # for op -> PipelinePlan (pipelining.py)
    combined_loads: dict  # load op -> CombinedLoad (load_combining.py)
    atomics: dict       # atomic op -> AtomicPlan (atomics.py)
    shared_memory: SharedMemoryPlan   # the buffers in tp_smem (shared_memory.py)
    read_only: ReadOnlyPointers       # pointers no store writes through (read_only.py)
    options: CompileOptions           # num_warps, num_stages, the target architecture, ... (transpiler/options.py)
    required_arch: ArchRequirement | None = None   # the oldest GPU it runs on (arch_requirements.py)
    tma: dict = None    # for op -> TmaPlan (tma.py): loops whose tiles the copy engine brings in
    row_loop: object = None     # RowLoopPlan when programs are folded into a row loop (row_loop.py)
    packing: object = None      # PackingPlan when a block holds several programs, one warp each (program_packing.py)
    row_ring: object = None     # RowRing when the row loop's rows ahead live in shared memory (row_ring.py)
    launched_warps: int = 0     # the launch's num_warps where a program runs on fewer (program_warps.py), else 0
    mask_prefix: frozenset = frozenset()  # accesses whose mask is a prefix of each run (mask_runs.py)
    residency: object = None    # ResidencyPlan: the launch's shared memory keeps programs off an SM (residency.py)
    packed_rows: PackedRows = field(default_factory=PackedRows)  # rows held as loaded words, tails run by runs (packed_rows.py)

    @property
    def program_warps(self) -> int:
        """Warps of one program: `num_warps`, or one where programs are packed (every layout is over these)."""
        return self.packing.program_warps if self.packing else self.options.num_warps

    @property
    def programs_per_block(self) -> int:
        return self.packing.programs_per_block if self.packing else 1

    @property
    def uses_wgmma(self):
        return any(p.kind == "wgmma" for p in self.dots.values())

    @property
    def target(self):
        """The architecture the source is emitted for where that matters ("sm_90a": warpgroup MMA), else None."""
        return self.options.arch


def analyze(kernel, options: CompileOptions) -> KernelAnalysis:
    """Every pass over `kernel` under `options` (the launch options among them: `num_warps`, `num_stages`, `arch`
    the architecture the source is for when it matters)."""
    decisions = DecisionLog()
    packing = plan_packing(kernel, decisions, options.num_warps)
    # Fewer warps a program than launched (program_warps.py): every later pass, the emitter and the launch see
    # them as the options' num_warps (the variant records them for the runtime's block size).
    launched_warps = options.num_warps
    options = replace(options, num_warps=plan_program_warps(kernel, decisions, options.num_warps, packing is not None))
    launched_warps = launched_warps if launched_warps != options.num_warps else 0
    warps = packing.program_warps if packing else options.num_warps    # a program's warps, for every layout
    # The row loop rewrites the IR first: every later pass sees the loop.
    row_loop = fold_row_loop(kernel, decisions, warps, packed=packing is not None)
    contract(kernel, decisions)       # a product read by an add in its region: one fma, as Triton's LLVM fuses it
    axis = AxisInfoAnalysis(kernel)
    dots = plan_dots(kernel, decisions, options.arch, warps, axis)
    layouts = LayoutAssignment(kernel, axis, decisions, warps, dots)
    widths, uniform = vectorize(kernel, axis, layouts, decisions)
    prefix = frozenset(prefix_masks(layouts, axis, widths, uniform, decisions))
    row_ring = plan_row_ring(kernel, row_loop, layouts, widths, decisions, 32 * warps)

    def fastest_dim(load):
        ptr = load.operands[0]
        return coalesced_order(axis[ptr], len(ptr.shape))[0]
    pipelines = plan_pipelines(kernel, widths, fastest_dim, decisions, options.num_stages, dots)
    combined = combine_loads(kernel, axis, layouts, widths, decisions)
    packed_rows = plan_packed_rows(kernel, layouts, widths, combined, row_ring, decisions)
    atomics = plan_atomics(kernel, layouts, decisions)
    tma = plan_tma(kernel, pipelines, dots, decisions, options.arch)
    smem = plan_shared_memory(kernel, layouts, pipelines, any(p.kind == "wgmma" for p in dots.values()), tma,
                              row_ring)
    analysis = KernelAnalysis(axis, layouts, widths, uniform, decisions, dots, pipelines, combined, atomics, smem,
                              plan_read_only(kernel), options, required_arch(kernel), tma, row_loop, packing, row_ring,
                              launched_warps, prefix, packed_rows=packed_rows)
    plan_scratch(kernel, analysis, warps)       # the conversions and other scratch uses the rules will spell
    if analysis.uses_wgmma:     # how many wgmma programs may share an SM, from the kernel's shared memory
        analysis.residency = plan_residency(kernel, dots, smem.total_bytes(), decisions)
    return analysis
