"""From `.cu` text to something that runs: NVRTC to a cubin, then the cubin loaded on a device.

`compile_cubin` runs NVRTC for one architecture (`sm_90a` on Hopper, so Hopper-only instructions are
available) with the options and include folders CuPy's `RawModule` would use; it needs no GPU, so the cubin
can be made, cached on disk (`cache.py`) and checked anywhere; `compile_tuned` adds the register feedback of
`occupancy.py` (a second compile for one more program per SM when the first cubin's registers say it is
within reach). `load_function` loads a cubin in a device's
primary context and hands back the module, the function and that context, which is all a launch needs: a new
process that finds the cubin on disk never starts NVRTC. `check_shared_memory` refuses a variant whose dynamic
shared memory the device cannot give. `compile_offline` is the same compile with ptxas' resource report and the
PTX (as text), for tests and reports on machines without a GPU.
"""
from __future__ import annotations

import functools
import glob
import os
import re
from dataclasses import dataclass

from ..errors import InternalCompilerError, OutOfResources
from . import build_events


def arch_for_capability(major: int, minor: int) -> str:
    # Hopper's wgmma/TMA/setmaxnreg exist only under the arch-specific target.
    cc = major * 10 + minor
    return "sm_90a" if cc == 90 else f"sm_{cc}"


@functools.lru_cache(maxsize=None)
def device_arch(device_id: int) -> str:
    return arch_for_capability(device_attribute(_ATTR_CC_MAJOR, device_id), device_attribute(_ATTR_CC_MINOR, device_id))


_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76   # cudaDevAttrComputeCapabilityMajor / Minor


def _internal_error(kernel_name, source, log, dump_path=None):
    first = next((ln for ln in log.splitlines() if "error" in ln), log.strip().splitlines()[0] if log.strip() else "")
    if dump_path is None:
        dump_path = _save_failed_source(kernel_name, source)
    return InternalCompilerError(
        f"the generated CUDA for '{kernel_name}' did not compile (a bug in transpiler, not in your kernel).\n"
        f"  source: {dump_path}\n  first message: {first}", kernel=kernel_name,
        hint="please report it with the dumped .cu file")


def _save_failed_source(kernel_name, source):
    """Where the source that did not compile was saved: `TRANSPILER_DUMP_DIR`, else the cache folder's
    `failed/` (so it follows TRANSPILER_CACHE_DIR); a folder that cannot be written is said, not raised."""
    from . import cache
    folder = os.environ.get("TRANSPILER_DUMP_DIR") or str(cache.cache_dir() / "failed")
    path = os.path.join(folder, f"{kernel_name}.cu")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, "w") as f:
            f.write(source)
    except OSError as e:
        return f"(not saved: {folder} cannot be written: {e.strerror or e}; kernel.cuda_source(...) gives it)"
    return path


@functools.lru_cache(maxsize=None)
def nvrtc_options(arch: str, extra: tuple = ()) -> tuple:
    """NVRTC options for `arch`: CuPy's own set when this CuPy exposes it (its include folders; fp32 subnormals
    kept, unlike CuPy's default), else the same flags with the CUDA headers found on this machine."""
    # 186 is "pointless comparison of unsigned integer with zero": a user's `x_uint >= 0` is valid Triton (always
    # true), and the warning would blame the generated code for the kernel's own comparison.
    # -ftz=false: Triton's fp32 arithmetic keeps subnormals (LLVM's fadd/fmul carry no flush; only libdevice is
    # linked flushing), so `x * 2**-130` is a subnormal there, where CuPy's usual -ftz=true gave 0.
    opts = (f"-arch={arch}", "--std=c++17", "-ftz=false", "--device-as-default-execution-space",
            "--diag-suppress=186") + tuple(extra)
    try:
        from cupy._core.core import assemble_cupy_compiler_options
        return tuple(assemble_cupy_compiler_options(opts))
    except Exception:
        return opts + tuple(f"-I{d}" for d in cuda_include_dirs()[:1])


def compile_cubin(source: str, kernel_name: str, arch: str, extra_options: tuple = ()) -> bytes:
    """NVRTC: `.cu` text to a cubin for `arch` (InternalCompilerError with the log when it does not compile)."""
    from cupy.cuda import nvrtc
    prog = nvrtc.createProgram(source, f"{kernel_name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(nvrtc_options(arch, tuple(extra_options))))
        except Exception:
            raise _internal_error(kernel_name, source, nvrtc.getProgramLog(prog)) from None
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    build_events.send("nvrtc", name=kernel_name, source=source, arch=arch, options=tuple(extra_options))
    return cubin


def compile_tuned(source: str, kernel_name: str, arch: str, shared_bytes: int = 0):
    """`(cubin, Occupancy | None)`: the cubin for `arch`, compiled a second time for one more program per SM
    when the first one's registers say that step is within reach (`occupancy.py`)."""
    from .occupancy import compile_for_occupancy
    return compile_for_occupancy(lambda options: compile_cubin(source, kernel_name, arch, options),
                                 source, shared_bytes, arch)


_primary_contexts: dict = {}


def primary_context(device_id: int) -> int:
    """The device's primary context (the one CuPy and torch use), retained once per process."""
    ctx = _primary_contexts.get(device_id)
    if ctx is None:
        from .driver import driver
        ctx = _primary_contexts.setdefault(device_id, driver.primaryContext(device_id))
    return ctx


def device_attribute(attribute: int, device_id: int) -> int:
    """cuDeviceGetAttribute (driver API numbering, which matches the runtime's for the attributes used here)."""
    from .driver import driver
    return driver.deviceGetAttribute(attribute, device_id)


def load_function(cubin: bytes, kernel_name: str, device_id: int):
    """Load `cubin` in `device_id`'s primary context: `(module handle, function handle, context handle)`. The
    caller's current context is left as it was. Only the driver API is used (ctypes, `driver.py`),
    so a process that only uses torch never pays for `import cupy`."""
    from .driver import driver
    context = primary_context(device_id)
    previous = driver.ctxGetCurrent()
    if previous != context:
        driver.ctxSetCurrent(context)
    try:
        # Kept loaded for the life of the process, not unloaded with its Kernel object: a captured CUDA graph or
        # a launch still queued on a stream may use the function, and cuModuleUnload cannot wait for those.
        module = driver.moduleLoadData(cubin)
        return module, driver.moduleGetFunction(module, kernel_name), context
    finally:
        if previous != context:
            driver.ctxSetCurrent(previous)


# Dynamic shared memory: up to 48 KiB needs nothing; more needs the function's opt-in (the launcher does it,
# `Launcher.__init__`), and past the device's opt-in limit nothing runs.
DEFAULT_SHARED_BYTES = 48 * 1024
_ATTR_SHARED_OPTIN = 97   # cudaDevAttrMaxSharedMemoryPerBlockOptin


@functools.lru_cache(maxsize=None)
def shared_memory_limit(device_id: int) -> int:
    """The most dynamic shared memory one program may opt in to on this device."""
    return device_attribute(_ATTR_SHARED_OPTIN, device_id)


def check_shared_memory(kernel_name: str, device_id: int, shared_bytes: int):
    """OutOfResources (a LaunchError) when a variant needs more shared memory per program than `device_id` can give."""
    if shared_bytes <= DEFAULT_SHARED_BYTES:
        return
    limit = shared_memory_limit(device_id)
    if shared_bytes > limit:
        raise OutOfResources(shared_bytes, limit, "shared memory", kernel=kernel_name,
                             detail=f"{kernel_name} needs {shared_bytes} bytes of shared memory per program; "
                                    f"device {device_id} allows {limit}",
                             hint="lower num_stages or the block sizes of the tl.dot operands")


# ---------------------------------------------------------------------------------------------------------
# NVRTC without a GPU
# ---------------------------------------------------------------------------------------------------------

@dataclass
class OfflineResult:
    cubin: bytes
    ptx: str
    log: str

    @property
    def spill_bytes(self) -> int:
        return sum(int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads",
                                                            self.log))

    @property
    def registers(self) -> int:
        m = re.findall(r"Used (\d+) registers", self.log)
        return max(map(int, m)) if m else 0

    @property
    def warnings(self):
        return [ln for ln in self.log.splitlines() if "warning" in ln.lower()]


@functools.lru_cache(maxsize=1)
def cuda_include_dirs():
    dirs = []
    try:
        import nvidia
        for base in nvidia.__path__:
            dirs += glob.glob(os.path.join(base, "cu1*", "include")) + glob.glob(os.path.join(base, "cuda_runtime",
                                                                                               "include"))
    except ImportError:
        pass
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            dirs.append(os.path.join(os.environ[env], "include"))
    dirs.append("/usr/local/cuda/include")
    return [d for d in dirs if os.path.exists(os.path.join(d, "cuda_fp16.h"))]


def nvrtc_available() -> bool:
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception:
        return False
    return bool(cuda_include_dirs())


def compile_offline(source: str, arch: str = "sm_90a", name: str = "kernel.cu", extra_options: tuple = ()
                    ) -> OfflineResult:
    """NVRTC to cubin with ptxas' report, with the options the runtime compiles with (`nvrtc_options`)."""
    from cupy.cuda import nvrtc
    opts = list(nvrtc_options(arch, tuple(extra_options) + ("--ptxas-options=-v",)))
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception:
            raise _internal_error(name.rsplit(".", 1)[0], source, nvrtc.getProgramLog(prog)) from None
        log = nvrtc.getProgramLog(prog)
        return OfflineResult(nvrtc.getCUBIN(prog), _text(nvrtc.getPTX(prog)) if arch.startswith("compute") else
                             _ptx_of(source, arch, opts), log)
    finally:
        nvrtc.destroyProgram(prog)


def _ptx_of(source, arch, opts):
    from cupy.cuda import nvrtc
    prog = nvrtc.createProgram(source, "kernel.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [o for o in opts if not o.startswith(("-arch", "--ptxas"))]
                             + [f"-arch=compute_{arch[3:]}"])
        return _text(nvrtc.getPTX(prog))
    finally:
        nvrtc.destroyProgram(prog)


def _text(ptx) -> str:
    return ptx.decode() if isinstance(ptx, bytes) else ptx
