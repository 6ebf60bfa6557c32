"""Fused row softmax: one program per row, the whole row held in registers (Triton's second tutorial).

Each program loads its row once (BLOCK = next_power_of_2(n_cols) lanes, the ones past the end masked and
read as -inf so they vanish from both the max and the sum), subtracts the row maximum, exponentiates and
divides by the sum, and stores once: 2 * M * N elements of traffic, the least possible. Row strides are
arguments, so rows may be views into a wider buffer. fp16 and bf16 inputs are computed in fp32.

Run: `python examples/softmax.py` (GPU: checked and timed; no GPU: the CPU interpreter on small shapes).
"""
import sys

import numpy as np

import transpiler
import transpiler.language as tl

try:
    from . import _harness as H
except ImportError:  # run as a script, or loaded by bench/twins.py: the examples folder is on sys.path
    import _harness as H


@transpiler.transpile
def softmax_kernel(OUT, IN, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(IN + row * in_stride + cols, mask=valid, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(OUT + row * out_stride + cols, e / tl.sum(e, axis=0), mask=valid)


def num_warps_for(block: int) -> int:
    """Triton tutorial's rule: more warps for longer rows, so each thread keeps about 16 values or fewer."""
    if block >= 4096:
        return 16
    if block >= 2048:
        return 8
    return 4


def softmax(x, out=None):
    """Softmax over the last axis of a 2-D array whose rows may be strided (columns must be contiguous)."""
    assert len(x.shape) == 2 and H.has_unit_column_stride(x), "x must be 2-D with contiguous rows"
    n_rows, n_cols = x.shape
    out = H.empty(x, x.shape) if out is None else out
    block = transpiler.next_power_of_2(n_cols)
    H.launcher(softmax_kernel, x)[(n_rows,)](out, x, H.row_stride(x), H.row_stride(out), n_cols,
                                             BLOCK=block, num_warps=num_warps_for(block))
    return out


def softmax_backward(x, dy, dx):
    """d sum(dy * softmax(x)) / dx, written into `dx` (laid out like `x`: the gradient is written at the
    offsets the forward reads), by the derived backward `softmax_kernel.backward`: the forward's max and sum
    recomputed, the gradient routed back through both reductions."""
    n_rows, n_cols = x.shape
    block = transpiler.next_power_of_2(n_cols)
    y_like = H.empty(x, x.shape)
    H.launcher(softmax_kernel.backward, x)[(n_rows,)](y_like, x, H.row_stride(x), H.row_stride(y_like), n_cols,
                                                      BLOCK=block, num_warps=num_warps_for(block),
                                                      grads={"OUT": dy, "IN": dx}, accumulate=False)
    return dx


def reference_backward(x, dy) -> np.ndarray:
    y, dy = reference(x), H.to_float64(dy)
    return y * (dy - (dy * y).sum(axis=1, keepdims=True))


def reference(x) -> np.ndarray:
    x = H.to_float64(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run_case(lib, dtype="float32", shape=(37, 100), pitch=None, timed=False) -> str:
    """Softmax of a random `shape` array in `lib`; with `pitch`, rows are a view into `pitch`-wide rows."""
    n_rows, n_cols = shape
    rng = np.random.default_rng(n_rows * n_cols)
    wide = H.to_library(3 * rng.standard_normal((n_rows, pitch or n_cols)), lib, dtype)
    x = wide[:, :n_cols]
    y = H.poison(H.empty(x, shape))
    softmax(x, out=y)
    error = H.check_close("softmax", y, reference(x), dtype)
    shape_text = f"{n_rows}x{n_cols}" + (f" (row stride {pitch})" if pitch else "")
    line = f"softmax {dtype:8} {shape_text:28} max abs error {error:.1e}"
    if timed:
        line += H.throughput(2 * n_rows * n_cols * H.ITEMSIZE[dtype], H.gpu_time_ms(lambda: softmax(x, out=y)))
    # The derived backward, into a gradient laid out like x (a view of a pitch-wide array when x is one).
    dy = H.to_library(rng.standard_normal(shape), lib, "float32")
    dx = H.poison(H.empty(wide, tuple(wide.shape)))[:, :n_cols]
    softmax_backward(x, dy, dx)
    want = reference_backward(x, dy)
    worst = float(np.abs(H.to_float64(dx) - want).max()) / max(float(np.abs(want).max()), 1e-30)
    if not worst < {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}[dtype]:
        raise H.Mismatch(f"softmax backward: relative error {worst:.1e}")
    line += f" | backward rel error {worst:.1e}"
    if timed:
        ms = H.gpu_time_ms(lambda: softmax_backward(x, dy, dx))
        line += H.throughput(3 * n_rows * n_cols * H.ITEMSIZE[dtype], ms)
    return line


GPU_CASES = [
    dict(dtype="float32", shape=(1823, 781)),
    dict(dtype="float32", shape=(8192, 4000)),
    dict(dtype="float32", shape=(8192, 4093), pitch=4096),
    dict(dtype="float16", shape=(4096, 3000)),
    dict(dtype="bfloat16", shape=(4096, 3000)),
]
CPU_CASES = [
    dict(dtype="float32", shape=(37, 100)),
    dict(dtype="float32", shape=(9, 50), pitch=64),
    dict(dtype="float16", shape=(16, 300)),
]


def demo_cases():
    return [(f"softmax {c['dtype']} {c['shape']}", H.demo(run_case, c)) for c in CPU_CASES]


def main() -> int:
    return H.run_main("softmax", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
