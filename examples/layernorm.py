"""Layer normalisation, forward: `Y = (X - mean) * rstd * W + B` over each row, with fp32 statistics.

X is fp16 (or bf16) [M, N], W and B [N], Y like X. One program per row holds the whole row (BLOCK =
next_power_of_2(N)) and computes in fp32: the mean, the biased variance, rstd = 1 / sqrt(var + eps). It also
stores Mean and Rstd (fp32 [M]), which a backward pass needs.

Run: `python examples/layernorm.py` (GPU: checked and timed; no GPU: the CPU interpreter on small shapes).
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
def layernorm_kernel(X, Y, W, B, Mean, Rstd, x_stride, y_stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < N
    x = tl.load(X + row * x_stride + cols, mask=valid, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    # Lanes past the end must not add (0 - mean)^2 to the variance.
    centered = tl.where(valid, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=valid).to(tl.float32)
    b = tl.load(B + cols, mask=valid).to(tl.float32)
    # The store converts to Y's element type (fp16 or bf16), as Triton's does.
    tl.store(Y + row * y_stride + cols, centered * rstd * w + b, mask=valid)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)


def layer_norm(x, weight, bias, eps=1e-5, out=None):
    """Normalise the rows of 2-D `x`; returns `(y, mean, rstd)`, or fills `out` given as that triple."""
    assert len(x.shape) == 2 and H.has_unit_column_stride(x), "x must be 2-D with contiguous rows"
    n_rows, n_cols = x.shape
    assert tuple(weight.shape) == tuple(bias.shape) == (n_cols,)
    y, mean, rstd = out or (H.empty(x, x.shape), H.empty(x, (n_rows,), "float32"), H.empty(x, (n_rows,), "float32"))
    block = transpiler.next_power_of_2(n_cols)
    num_warps = min(max(block // 256, 1), 8)  # Triton's layernorm tutorial
    H.launcher(layernorm_kernel, x)[(n_rows,)](x, y, weight, bias, mean, rstd, H.row_stride(x), H.row_stride(y),
                                               n_cols, eps, BLOCK=block, num_warps=num_warps)
    return y, mean, rstd


def layer_norm_backward(x, weight, bias, dy, eps=1e-5):
    """(dx, dw, db): the gradients of sum(dy * y) by the derived backward `layernorm_kernel.backward` (mean and
    rstd recomputed, not read back; dw and db summed in registers by one wave of programs running the rows,
    then their partial rows by a tile kernel)."""
    n_rows, n_cols = x.shape
    dx = H.empty(x, x.shape)
    dw, db = H.empty(x, (n_cols,), "float32"), H.empty(x, (n_cols,), "float32")
    y, mean, rstd = H.empty(x, x.shape), H.empty(x, (n_rows,), "float32"), H.empty(x, (n_rows,), "float32")
    block = transpiler.next_power_of_2(n_cols)
    num_warps = min(max(block // 256, 1), 8)
    H.launcher(layernorm_kernel.backward, x)[(n_rows,)](x, y, weight, bias, mean, rstd, H.row_stride(x),
                                                        H.row_stride(y), n_cols, eps, BLOCK=block,
                                                        num_warps=num_warps, accumulate=False,
                                                        grads={"X": dx, "W": dw, "B": db, "Y": dy})
    return dx, dw, db


def reference_backward(x, weight, bias, dy, eps=1e-5):
    """(dx, dw, db) in float64 by the textbook formulas."""
    x, w, dy = H.to_float64(x), H.to_float64(weight), H.to_float64(dy)
    _, mean, rstd = reference(x, weight, bias, eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    dx = rstd[:, None] * (wdy - wdy.mean(axis=1, keepdims=True) - xhat * (wdy * xhat).mean(axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def reference(x, weight, bias, eps=1e-5):
    """(y, mean, rstd) in float64."""
    x, w, b = H.to_float64(x), H.to_float64(weight), H.to_float64(bias)
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def run_case(lib, dtype="float16", shape=(13, 100), timed=False) -> str:
    n_rows, n_cols = shape
    rng = np.random.default_rng(n_rows * n_cols)
    x = H.to_library(0.5 + 2 * rng.standard_normal(shape), lib, dtype)
    w = H.to_library(1 + 0.5 * rng.standard_normal(n_cols), lib, dtype)
    b = H.to_library(0.5 * rng.standard_normal(n_cols), lib, dtype)
    out = (H.poison(H.empty(x, shape)), H.poison(H.empty(x, (n_rows,), "float32")),
           H.poison(H.empty(x, (n_rows,), "float32")))
    layer_norm(x, w, b, out=out)
    want = reference(x, w, b)
    error = H.check_close("y", out[0], want[0], dtype)
    H.check_close("mean", out[1], want[1], "float32")
    H.check_close("rstd", out[2], want[2], "float32")
    line = f"layernorm {dtype:8} {n_rows}x{n_cols:<8} max abs error of y {error:.1e}"
    if timed:
        item = H.ITEMSIZE[dtype]
        nbytes = 2 * n_rows * n_cols * item + 2 * n_cols * item + 2 * n_rows * 4
        line += H.throughput(nbytes, H.gpu_time_ms(lambda: layer_norm(x, w, b, out=out)))
    # The derived backward against the float64 formulas.
    dy = H.to_library(rng.standard_normal(shape), lib, dtype)
    got = layer_norm_backward(x, w, b, dy)
    worst = 0.0
    for name, g, r in zip(("dx", "dw", "db"), got, reference_backward(x, w, b, dy)):
        err = float(np.abs(H.to_float64(g) - r).max()) / max(float(np.abs(r).max()), 1e-30)
        if not err < {"float16": 1e-2, "bfloat16": 2e-2}.get(dtype, 1e-4):
            raise H.Mismatch(f"layernorm backward {name}: relative error {err:.1e}")
        worst = max(worst, err)
    line += f" | backward rel error {worst:.1e}"
    if timed:
        item = H.ITEMSIZE[dtype]
        line += H.throughput(3 * n_rows * n_cols * item, H.gpu_time_ms(lambda: layer_norm_backward(x, w, b, dy)))
    return line


GPU_CASES = [
    dict(dtype="float16", shape=(2049, 4000)),
    dict(dtype="float16", shape=(8192, 1000)),
    dict(dtype="bfloat16", shape=(4096, 3000)),
]
CPU_CASES = [dict(dtype="float16", shape=(13, 100)), dict(dtype="float16", shape=(8, 777))]


def demo_cases():
    return [(f"layernorm {c['dtype']} {c['shape']}", H.demo(run_case, c)) for c in CPU_CASES]


def main() -> int:
    return H.run_main("layernorm", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
