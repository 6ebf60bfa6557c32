"""A compiled variant: one specialization's CUDA source and what launching it needs, its cubin per
architecture (memory, then the disk cache, then NVRTC, tuned for occupancy unless `maxnreg` is given) and its
function loaded per device; and the form its architecture requirement takes in the disk cache."""
from __future__ import annotations

from ..errors import LaunchError, SourceLocation
from .. import options as options_mod
from . import cache, compiler, toolchain
from .launcher import STICKY_ERRORS
from .once import OnceMap

MULTIPROCESSOR_COUNT = 16     # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT


class CompiledVariant:
    """One specialization: its source, the dynamic shared memory a launch gives each program, its cubin per
    architecture and its loaded function per device."""

    def __init__(self, name, source, param_kinds, shared_bytes=0, disk_key=None, options=options_mod.DEFAULT,
                 required_arch=None, maxnreg=None, tensor_maps=(), row_loop=False, persistent=None,
                 programs_per_block=1, row_loop_waves=0, num_warps=None):
        self.name = name
        self.source = source
        self.param_kinds = param_kinds       # per kernel parameter: "ptr", a dtype name, or None (constexpr)
        self.row_loop = row_loop             # folded into a row loop: the grid's x is a last int32 parameter
        self.persistent = row_loop if persistent is None else persistent   # ... one wave of blocks launched
        self.programs_per_block = programs_per_block   # programs of the grid's x per block (program_packing.py)
        self.row_loop_waves = row_loop_waves   # one wave only for grids of at most this many waves (0: any grid)
        # warps of a block: the launch's num_warps, or fewer where the compiler chose so (analysis/program_warps.py)
        self.num_warps = options.num_warps if num_warps is None else num_warps
        self.slot_kinds = [k for k in param_kinds if k is not None] + (["int32"] if row_loop else [])
        self.shared_bytes = shared_bytes     # dynamic shared memory per program
        self.disk_key = disk_key
        self.options = options               # transpiler.options.CompileOptions it was made under
        self.required_arch = required_arch   # ArchRequirement: the oldest GPU the source runs on, or None
        self.maxnreg = maxnreg               # registers per thread a launch asked for (maxnreg=), or None
        self.tensor_maps = tuple(tensor_maps)   # TMA parameters after the arguments (runtime/tensor_maps.py)
        self._cubins = OnceMap()             # arch -> cubin bytes
        self._functions = OnceMap()          # device -> (module, function, context)
        self._from_disk = set()              # architectures whose cubin came from the disk cache
        self.occupancy = {}                  # arch -> occupancy.Occupancy, for cubins this process compiled

    def cubin(self, arch):
        return self._cubins.get(arch, lambda: self._build_cubin(arch))

    def check_arch(self, arch):
        """LaunchError at the op that needs a newer GPU than `arch` (before NVRTC would fail on it)."""
        need = self.required_arch
        if need is None:
            return
        from ..analysis.arch_requirements import capability_of   # here: a warm start imports no analysis
        if capability_of(arch) < need.capability:
            raise LaunchError(f"{need.what} needs a GPU of compute capability {need.capability // 10}."
                              f"{need.capability % 10} ({need.arch}) or newer; this one is {arch}", need.loc,
                              kernel=self.name, hint="run it on an Ampere (sm_80) or newer GPU, or on the CPU "
                                                     "with kernel.interpret[grid](...)")

    def _build_cubin(self, arch):
        self.check_arch(arch)
        cubin = cache.load_cubin(self.disk_key, arch, toolchain.cubin_fingerprint(arch)) if self.disk_key else None
        if cubin is None and self.disk_key and toolchain.nvrtc_version() == "none":
            # No NVRTC here (a machine with only a driver): a cubin another NVRTC made is the only one this process
            # can run; the driver refuses one it cannot load, and `_load` then says why.
            cubin = cache.load_any_cubin(self.disk_key, arch)
        if cubin is not None:
            self._from_disk.add(arch)
            return cubin
        return self._compile(arch)

    def _compile(self, arch):
        if self.maxnreg is not None:         # the user's register budget replaces the occupancy tuning
            from ..emit_cuda import MAXNREG_MACRO
            cubin, occupancy = compiler.compile_cubin(self.source, self.name, arch,
                                                      (f"-D{MAXNREG_MACRO}={self.maxnreg}",)), None
        else:
            cubin, occupancy = compiler.compile_tuned(self.source, self.name, arch, self.shared_bytes)
        if occupancy is not None:
            self.occupancy[arch] = occupancy
        if self.disk_key:
            cache.store_cubin(self.disk_key, arch, toolchain.cubin_fingerprint(arch), cubin)
        return cubin

    def resident_programs(self, device):
        """Programs of this variant all SMs of `device` hold at once (one wave), from the cubin's registers and
        its blocks' warps; None when the architecture's limits or the register count are unknown."""
        num_warps = self.num_warps
        from .occupancy import blocks_per_sm, cubin_resources, limits_for
        arch = compiler.device_arch(device)
        limits, report = limits_for(arch), cubin_resources(self.cubin(arch))
        if limits is None or report is None:
            return None
        per_sm = blocks_per_sm(report.registers, 32 * num_warps, self.shared_bytes, limits)
        return max(1, per_sm) * compiler.device_attribute(MULTIPROCESSOR_COUNT, device)

    def function(self, device):
        """`(module, function, context)` of this variant loaded on `device` (loaded once per device). Its
        launcher opts the function in to `shared_bytes` above 48 KiB."""
        return self._functions.get(device, lambda: self._load(device))

    def _load(self, device):
        compiler.check_shared_memory(self.name, device, self.shared_bytes)   # before any NVRTC run
        arch = compiler.device_arch(device)
        try:
            return compiler.load_function(self.cubin(arch), self.name, device)
        except Exception as e:
            if arch not in self._from_disk or getattr(e, "status", None) in STICKY_ERRORS:
                raise
            # A cubin from disk that the driver refuses (made by another NVRTC, or damaged): make it again.
            self._from_disk.discard(arch)
            self._cubins.values[arch] = cubin = self._compile(arch)
            return compiler.load_function(cubin, self.name, device)


def requirement_to_json(need, fn):
    """An ArchRequirement for the disk cache. Entries are shared by every copy of a kernel's source, wherever
    it is: a location in the kernel's own file is kept relative to its first line (None for the file)."""
    if need is None:
        return None
    loc = need.loc
    if loc is None:
        return [need.capability, need.what]
    code = fn.__code__
    if loc.file == code.co_filename:
        return [need.capability, need.what, None, loc.line - code.co_firstlineno, loc.col, loc.function]
    return [need.capability, need.what, loc.file, loc.line, loc.col, loc.function]


def requirement_from_json(data, fn):
    if not data:
        return None
    from ..analysis.arch_requirements import ArchRequirement
    loc = None
    if len(data) >= 6:
        file, line, col, function = data[2:6]
        if file is None:
            file, line = fn.__code__.co_filename, line + fn.__code__.co_firstlineno
        loc = SourceLocation(file, line, col, function)
    return ArchRequirement(data[0], data[1], loc)
