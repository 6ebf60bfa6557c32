"""From `.cu` text to something that runs: CuPy's NVRTC `RawModule` on a GPU, bare NVRTC without one.

`load_module` compiles for the device's architecture (`sm_90a` on Hopper, so Hopper-only instructions are
available) through `cupy.RawModule`, which also keeps cubins in CuPy's own disk cache. `compile_offline`
runs NVRTC with no GPU and no driver (CI): it returns the cubin, the PTX and ptxas' resource report, so tests
can check instructions, registers and spills on a CPU machine.
"""
from __future__ import annotations

import functools
import glob
import os
import re
from dataclasses import dataclass

from ..errors import InternalCompilerError


def arch_for_capability(major: int, minor: int) -> str:
    # Hopper's wgmma/TMA/setmaxnreg exist only under the arch-specific target.
    cc = major * 10 + minor
    return "sm_90a" if cc == 90 else f"sm_{cc}"


@functools.lru_cache(maxsize=None)
def device_arch(device_id: int) -> str:
    import cupy
    cc = cupy.cuda.Device(device_id).compute_capability
    return arch_for_capability(int(cc[:-1]), int(cc[-1]))


def _internal_error(kernel_name, source, log, dump_path=None):
    first = next((ln for ln in log.splitlines() if "error" in ln), log.strip().splitlines()[0] if log.strip() else "")
    if dump_path is None:
        dump_dir = os.environ.get("TRANSPILER_DUMP_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                            "transpiler", "failed")
        os.makedirs(dump_dir, exist_ok=True)
        dump_path = os.path.join(dump_dir, f"{kernel_name}.cu")
        with open(dump_path, "w") as f:
            f.write(source)
    return InternalCompilerError(
        f"the generated CUDA for '{kernel_name}' did not compile (a bug in transpiler, not in your kernel).\n"
        f"  source: {dump_path}\n  first message: {first}", kernel=kernel_name,
        hint="please report it with the dumped .cu file")


def load_module(source: str, kernel_name: str, device_id: int, shared_bytes: int = 0, options=()):
    """Compile with CuPy's NVRTC for the device and return the kernel function, allowed `shared_bytes` of
    dynamic shared memory (above 48 KiB a kernel must opt in)."""
    import cupy
    arch = device_arch(device_id)
    with cupy.cuda.Device(device_id):
        try:
            module = cupy.RawModule(code=source, options=(f"-arch={arch}", "--std=c++17") + tuple(options))
            fn = module.get_function(kernel_name)
        except cupy.cuda.compiler.CompileException as e:
            raise _internal_error(kernel_name, source, str(e)) from None
        if shared_bytes > 48 * 1024:
            rt = cupy.cuda.runtime
            limit = rt.deviceGetAttribute(getattr(rt, "cudaDevAttrMaxSharedMemoryPerBlockOptin", 97), device_id)
            if shared_bytes > limit:
                from ..errors import LaunchError
                raise LaunchError(f"{kernel_name} needs {shared_bytes} bytes of shared memory per program; "
                                  f"device {device_id} allows {limit}", kernel=kernel_name,
                                  hint="lower num_stages or the block sizes of the tl.dot operands")
            fn.max_dynamic_shared_size_bytes = shared_bytes
        return fn


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


def compile_offline(source: str, arch: str = "sm_90a", name: str = "kernel.cu") -> OfflineResult:
    """NVRTC to cubin with ptxas' report, as CuPy would compile it (-ftz=true, C++17)."""
    from cupy.cuda import nvrtc
    opts = [f"-arch={arch}", "--std=c++17", "-ftz=true", "--ptxas-options=-v"]
    opts += [f"-I{d}" for d in cuda_include_dirs()[:1]]
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception:
            raise _internal_error(name.rsplit(".", 1)[0], source, nvrtc.getProgramLog(prog)) from None
        log = nvrtc.getProgramLog(prog)
        return OfflineResult(nvrtc.getCUBIN(prog), nvrtc.getPTX(prog) if arch.startswith("compute") else
                             _ptx_of(source, arch, opts), log)
    finally:
        nvrtc.destroyProgram(prog)


def _ptx_of(source, arch, opts):
    from cupy.cuda import nvrtc
    prog = nvrtc.createProgram(source, "kernel.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [o for o in opts if not o.startswith(("-arch", "--ptxas"))]
                             + [f"-arch=compute_{arch[3:]}"])
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)
