"""A fused MLP layer, forward and its derived backward: `Y = gelu(X @ W + b)` (the tanh form of GELU).

X is [M, K], W [K, N], b [N], Y [M, N], fp16 or fp32 (fp32 accumulation). One program per [BM, BN] tile of
Y runs the K loop of `tl.dot`s, adds the bias and applies GELU before its one store: the pre-activation never
goes to memory. Its backward is not written by hand: `mlp_kernel.backward` is derived from this forward
(transpiler/autodiff, docs/autodiff.md). It recomputes the tile's pre-activation, multiplies the incoming
gradient by GELU's derivative, and runs the K loop again in reverse: `dX += dZ @ W^T` and `dW += X^T @ dZ` per
tile by `tl.dot`, added atomically (the tiles of a row of programs share X's rows, those of a column W's
columns), and db through atomic adds (every row of tiles reads it).

Run: `python examples/fused_mlp.py` (GPU: checked and timed; no GPU: the CPU interpreter on small shapes).
"""
import math
import sys

import numpy as np

import transpiler
import transpiler.language as tl
from transpiler.language.extra import libdevice

try:
    from . import _harness as H
except ImportError:  # run as a script, or loaded by bench/twins.py: the examples folder is on sys.path
    import _harness as H

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@transpiler.transpile
def mlp_kernel(X, W, Bias, Y, M, N, K, x_stride, w_stride, y_stride,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(X + rm[:, None] * x_stride + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(W + rk[:, None] * w_stride + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    z = acc + tl.load(Bias + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    y = 0.5 * z * (1.0 + libdevice.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))
    tl.store(Y + rm[:, None] * y_stride + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))


TILES = dict(BM=64, BN=64, BK=32)


def _grid(m, n, tiles):
    return (transpiler.cdiv(m, tiles["BM"]), transpiler.cdiv(n, tiles["BN"]))


def mlp(x, w, bias, out=None, tiles=TILES):
    m, k = x.shape
    n = w.shape[1]
    y = out if out is not None else H.empty(x, (m, n))
    H.launcher(mlp_kernel, x)[_grid(m, n, tiles)](x, w, bias, y, m, n, k, H.row_stride(x), H.row_stride(w),
                                                  H.row_stride(y), num_warps=4, **tiles)
    return y


def mlp_backward(x, w, bias, dy, tiles=TILES):
    """(dx, dw, db) in fp32: the gradients of sum(dy * y) by the derived backward `mlp_kernel.backward`."""
    m, k = x.shape
    n = w.shape[1]
    dx, dw, db = H.empty(x, (m, k), "float32"), H.empty(x, (k, n), "float32"), H.empty(x, (n,), "float32")
    y = H.empty(x, (m, n))
    H.launcher(mlp_kernel.backward, x)[_grid(m, n, tiles)](x, w, bias, y, m, n, k, H.row_stride(x),
                                                           H.row_stride(w), H.row_stride(y), num_warps=4,
                                                           accumulate=False, grads={"X": dx, "W": dw,
                                                                                    "Bias": db, "Y": dy},
                                                           **tiles)
    return dx, dw, db


def _gelu_and_slope(z):
    inner = SQRT_2_OVER_PI * (z + 0.044715 * z ** 3)
    t = np.tanh(inner)
    return 0.5 * z * (1 + t), 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * 0.044715 * z * z)


def reference(x, w, bias):
    x, w, bias = H.to_float64(x), H.to_float64(w), H.to_float64(bias)
    return _gelu_and_slope(x @ w + bias)[0]


def reference_backward(x, w, bias, dy):
    """(dx, dw, db) in float64."""
    x, w, bias, dy = H.to_float64(x), H.to_float64(w), H.to_float64(bias), H.to_float64(dy)
    dz = dy * _gelu_and_slope(x @ w + bias)[1]
    return dz @ w.T, x.T @ dz, dz.sum(axis=0)


# fp16 operands: dZ is rounded to fp16 before its dots (the forward's input precision); fp32 runs tf32 dots; bf16's
# spacing is 8x fp16's (8 mantissa bits, not 11).
_BACKWARD_RTOL = {"float16": 2e-2, "bfloat16": 1e-1, "float32": 1e-2}


def run_case(lib, dtype="float16", shape=(40, 50, 70), timed=False) -> str:
    m, n, k = shape
    rng = np.random.default_rng(m * n * k)
    x = H.to_library(rng.standard_normal((m, k)), lib, dtype)
    w = H.to_library(rng.standard_normal((k, n)) / math.sqrt(k), lib, dtype)
    bias = H.to_library(0.5 * rng.standard_normal(n), lib, dtype)
    y = mlp(x, w, bias, out=H.poison(H.empty(x, (m, n))))
    # fp32 operands run tf32 dots (10-bit mantissas, as Triton's default): fp16's tolerance
    error = H.check_close("y", y, reference(x, w, bias), "float16")
    line = f"fused_mlp {dtype:8} {m}x{n}x{k:<6} max abs error of y {error:.1e}"
    if timed:
        line += f" | {2 * m * n * k / H.gpu_time_ms(lambda: mlp(x, w, bias, out=y)) / 1e9:7.1f} TFLOP/s"
    dy = H.to_library(rng.standard_normal((m, n)), lib, dtype)
    worst = 0.0
    for name, g, r in zip(("dx", "dw", "db"), mlp_backward(x, w, bias, dy), reference_backward(x, w, bias, dy)):
        err = float(np.abs(H.to_float64(g) - r).max()) / max(float(np.abs(r).max()), 1e-30)
        if not err < _BACKWARD_RTOL[dtype]:
            raise H.Mismatch(f"fused_mlp backward {name}: relative error {err:.1e}")
        worst = max(worst, err)
    line += f" | backward rel error {worst:.1e}"
    if timed:
        line += f" | backward {H.gpu_time_ms(lambda: mlp_backward(x, w, bias, dy)) * 1e3:.1f} us"
    return line


GPU_CASES = [
    dict(dtype="float16", shape=(1000, 1000, 1000)),
    dict(dtype="float16", shape=(4096, 1024, 1024)),
    dict(dtype="float32", shape=(777, 500, 333)),
]
CPU_CASES = [dict(dtype="float16", shape=(40, 50, 70)), dict(dtype="float32", shape=(70, 65, 33))]


def demo_cases():
    return [(f"fused_mlp {c['dtype']} {c['shape']}", H.demo(run_case, c)) for c in CPU_CASES]


def main() -> int:
    return H.run_main("fused_mlp", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
