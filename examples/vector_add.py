"""Vector addition `z = x + y`: the first Triton tutorial, one block of BLOCK elements per program.

Run: `python examples/vector_add.py`. With a CUDA GPU it checks fp32 sizes that are not multiples of the
block against NumPy and prints time and GB/s (3 arrays moved); without one it runs small sizes on the CPU
interpreter (`add_kernel.interpret`).
"""
import sys

import numpy as np

import transpiler
import transpiler.language as tl

try:
    from . import _harness as H
except ImportError:  # run as a script, or loaded by bench/twins.py: the examples folder is on sys.path
    import _harness as H

BLOCK = 1024


@transpiler.transpile
def add_kernel(X, Y, Z, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n  # the last program runs past the end when n is not a multiple of BLOCK
    x = tl.load(X + offsets, mask=mask)
    y = tl.load(Y + offsets, mask=mask)
    tl.store(Z + offsets, x + y, mask=mask)


def add(x, y, out=None):
    """`x + y` for 1-D arrays of one dtype (NumPy: CPU interpreter; CuPy or torch: GPU); `out` is optional."""
    assert x.shape == y.shape and len(x.shape) == 1, "x and y must be 1-D arrays of the same length"
    n = H.numel(x)
    out = H.empty(x, (n,)) if out is None else out
    grid = (transpiler.cdiv(n, BLOCK),)
    H.launcher(add_kernel, x)[grid](x, y, out, n, BLOCK=BLOCK, num_warps=4)
    return out


def reference(x, y) -> np.ndarray:
    return H.to_float64(x) + H.to_float64(y)


def run_case(lib, dtype="float32", n=1000, timed=False) -> str:
    """Add two random vectors of length `n` in array library `lib`, check, and optionally time."""
    rng = np.random.default_rng(n)
    x = H.to_library(rng.standard_normal(n), lib, dtype)
    y = H.to_library(rng.standard_normal(n), lib, dtype)
    z = H.poison(H.empty(x, (n,)))
    add(x, y, out=z)
    error = H.check_close("z", z, reference(x, y), dtype)
    line = f"vector_add {dtype:8} n={n:<11} max abs error {error:.1e}"
    if timed:
        line += H.throughput(3 * n * H.ITEMSIZE[dtype], H.gpu_time_ms(lambda: add(x, y, out=z)))
    return line


GPU_CASES = [dict(dtype="float32", n=1_000_003), dict(dtype="float32", n=50_000_017)]
CPU_CASES = [dict(dtype="float32", n=1000), dict(dtype="float32", n=5003)]


def demo_cases():
    return [(f"vector_add {c['dtype']} n={c['n']}", H.demo(run_case, c)) for c in CPU_CASES]


def main() -> int:
    return H.run_main("vector_add", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
