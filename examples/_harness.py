"""Plumbing shared by the examples (and `bench/kernels.py`): array libraries, checks, GPU timing.

The examples' host wrappers accept NumPy arrays (run by the CPU interpreter, `kernel.interpret`), CuPy arrays
or torch tensors (run on the GPU), and allocate their outputs with the library of their input. Everything
here that touches an array dispatches on that library, so the kernels' files only hold what is theirs: the
kernel, its launch, its float64 reference and its cases.

Nothing here imports `transpiler` at module level: `bench/twins.py` loads the examples a second time with
`transpiler` standing for Triton, and this module must not capture either one.
"""
from __future__ import annotations

import statistics
import sys

import numpy as np

# (rtol, atol) for results stored in each dtype. fp32 results of short fp32 computations; fp16 and bf16 are
# dominated by the final rounding of the stored value (half an ulp: 2^-11 and 2^-8 relative).
TOLERANCE = {
    "float32": (1e-5, 1e-6),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "int64": 8, "bool": 1}


class Mismatch(AssertionError):
    """A result differs from its reference by more than the tolerance."""


# ---- which machine ------------------------------------------------------------------------------------------


def gpu_available() -> bool:
    """True when a CUDA GPU can run kernels (the runtime's answer; imported here, not at module level)."""
    from transpiler.runtime import gpu_available as runtime_gpu_available
    return runtime_gpu_available()


def torch_cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def pick_library(dtype: str, on_gpu: bool) -> str | None:
    """The array library for inputs of `dtype`: CuPy on the GPU, NumPy on the CPU interpreter; bf16 only
    exists in torch (None when torch with CUDA is absent, or on the CPU, where NumPy has no bfloat16)."""
    if dtype == "bfloat16":
        return "torch" if on_gpu and torch_cuda_available() else None
    return "cupy" if on_gpu else "numpy"


# ---- arrays of any library ----------------------------------------------------------------------------------


def library(a) -> str:
    """'numpy', 'cupy' or 'torch': the library `a` belongs to."""
    module = type(a).__module__.split(".")[0]
    if module not in ("numpy", "cupy", "torch"):
        raise TypeError(f"expected a NumPy, CuPy or torch array, got {type(a).__name__}")
    return module


def launcher(kernel, a):
    """`kernel` itself for GPU arrays; its CPU interpreter for NumPy arrays."""
    return kernel.interpret if library(a) == "numpy" else kernel


def dtype_name(a) -> str:
    return str(a.dtype).replace("torch.", "")


def numel(a) -> int:
    return a.numel() if library(a) == "torch" else a.size


def row_stride(a) -> int:
    """Elements between consecutive rows of a 2-D array (CuPy and NumPy count strides in bytes)."""
    return a.stride(0) if library(a) == "torch" else a.strides[0] // a.itemsize


def strides(a) -> tuple:
    """Strides of `a` in elements, one per dimension (torch, CuPy and NumPy alike)."""
    if library(a) == "torch":
        return tuple(a.stride())
    return tuple(s // a.itemsize for s in a.strides)


def has_unit_column_stride(a) -> bool:
    return (a.stride(1) if library(a) == "torch" else a.strides[1] // a.itemsize) == 1


def is_contiguous(a) -> bool:
    return a.is_contiguous() if library(a) == "torch" else a.flags.c_contiguous


def empty(like, shape, dtype: str | None = None):
    """An uninitialised array of `shape` in the library (and device) of `like`; `dtype` defaults to its."""
    dtype = dtype or dtype_name(like)
    lib = library(like)
    if lib == "torch":
        import torch
        return torch.empty(tuple(shape), dtype=getattr(torch, dtype), device=like.device)
    if lib == "cupy":
        import cupy
        return cupy.empty(tuple(shape), dtype=dtype)
    return np.empty(tuple(shape), dtype=dtype)


def poison(a):
    """Fill `a` with a value a correct kernel overwrites: NaN for floats, True for bools, -1 for integers."""
    name = dtype_name(a)
    value = True if name == "bool" else (float("nan") if name.startswith(("float", "bfloat")) else -1)
    if library(a) == "torch":
        a.fill_(value)
    else:
        a.fill(value)
    return a


def to_library(host: np.ndarray, lib: str, dtype: str):
    """Copy host data into a new array of library `lib` and element type `dtype` (rounded once, here)."""
    if lib == "numpy":
        return np.ascontiguousarray(host, dtype=dtype)
    if lib == "cupy":
        import cupy
        return cupy.asarray(np.ascontiguousarray(host, dtype=dtype))
    import torch
    # torch.from_numpy has no bf16 source type: go through fp32 and round on the device.
    staging = np.ascontiguousarray(host, dtype="float32" if dtype == "bfloat16" else dtype)
    return torch.from_numpy(staging).to(device="cuda", dtype=getattr(torch, dtype))


def to_float64(a) -> np.ndarray:
    """A float64 NumPy copy of `a`, for references and comparisons (bf16 goes through fp32 exactly)."""
    lib = library(a)
    if lib == "torch":
        return a.detach().float().cpu().numpy().astype(np.float64)
    if lib == "cupy":
        import cupy
        return cupy.asnumpy(a).astype(np.float64)
    return np.asarray(a, dtype=np.float64)


# ---- checking ------------------------------------------------------------------------------------------------


def check_close(what: str, actual, expected: np.ndarray, dtype: str) -> float:
    """Compare `actual` (any library) with a float64 reference under `dtype`'s tolerance.

    Returns the largest absolute error; raises `Mismatch` naming the worst element otherwise. NaN anywhere
    fails: the outputs were poisoned with NaN, so a NaN is an element the kernel never wrote.
    """
    rtol, atol = TOLERANCE[dtype]
    got = to_float64(actual)
    if got.shape != expected.shape:
        raise Mismatch(f"{what}: shape {got.shape}, expected {expected.shape}")
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    error = np.abs(got - expected)
    if bad.any():
        worst = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(error, nan=np.inf), -1)), got.shape)
        raise Mismatch(f"{what}: {int(bad.sum())} of {bad.size} elements differ (rtol={rtol}, atol={atol}); "
                       f"at {tuple(int(i) for i in worst)}: got {got[worst]:.7g}, expected {expected[worst]:.7g}")
    return float(error.max()) if error.size else 0.0


def check_equal(what: str, actual, expected: np.ndarray) -> None:
    got = to_float64(actual)
    bad = got != expected
    if got.shape != expected.shape or bad.any():
        raise Mismatch(f"{what}: {int(np.sum(bad))} of {expected.size} elements differ")


# ---- timing -------------------------------------------------------------------------------------------------


def gpu_time_ms(fn, warmup: int = 10, reps: int = 100) -> float:
    """Median GPU time of `fn()` in milliseconds, from CUDA events around each call.

    The calls are queued back to back and synchronised once at the end, so the host's launch cost hides
    behind the previous call's GPU time instead of inflating every sample. Events go on CuPy's current
    stream, which is the legacy default stream that torch also uses unless told otherwise.
    """
    import cupy
    for _ in range(warmup):
        fn()
    starts = [cupy.cuda.Event() for _ in range(reps)]
    ends = [cupy.cuda.Event() for _ in range(reps)]
    for start, end in zip(starts, ends):
        start.record()
        fn()
        end.record()
    ends[-1].synchronize()
    return statistics.median(cupy.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends))


def throughput(nbytes: int, ms: float) -> str:
    return f"{ms * 1e3:9.1f} us {nbytes / (ms * 1e-3) / 1e9:8.1f} GB/s"


# ---- running an example -------------------------------------------------------------------------------------


def run_main(title: str, run_case, gpu_cases: list[dict], cpu_cases: list[dict]) -> int:
    """Run an example's cases on the GPU (checked and timed) or, without one, on the CPU interpreter.

    `run_case(lib, timed=..., **case)` builds inputs in array library `lib`, runs, checks against the
    reference and returns a one-line report; it raises `Mismatch` on a wrong result. Returns the exit status.
    """
    on_gpu = gpu_available()
    where = "GPU" if on_gpu else "CPU interpreter (no CUDA GPU found; small inputs, not timed)"
    print(f"{title}: running on the {where}")
    status = 0
    for case in gpu_cases if on_gpu else cpu_cases:
        lib = pick_library(case["dtype"], on_gpu)
        if lib is None:
            print(f"  skip {case}: bf16 needs torch with CUDA (CuPy and NumPy have no bfloat16)")
            continue
        try:
            print("  " + run_case(lib, timed=on_gpu, **case))
        except Mismatch as mismatch:
            print(f"  FAIL {case}: {mismatch}")
            status = 1
    print(f"{title}: {'all cases passed' if status == 0 else 'MISMATCH'}"
          + ("" if on_gpu else " (ran on the CPU interpreter)"))
    sys.stdout.flush()
    return status


def demo(run_case, case: dict):
    """A zero-argument callable running `case` on the GPU when there is one, else on the CPU interpreter."""

    def run():
        lib = pick_library(case["dtype"], gpu_available())
        if lib is None:
            return f"skipped {case}: bf16 needs torch with CUDA"
        return run_case(lib, timed=False, **case)

    return run
