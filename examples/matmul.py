"""Matrix multiplication on tensor cores (Triton's matmul tutorial, written for this compiler).

Each program computes one BLOCK_M x BLOCK_N tile of C = A @ B, walking K in BLOCK_K steps. Programs are
ordered in groups of GROUP_M tile-rows so the tiles running at the same time share rows of A and columns of
B in L2. The compiler turns the loop's two loads into a `num_stages`-deep cp.async pipeline into swizzled
shared memory and `tl.dot` into ldmatrix + mma.sync; an optional leaky ReLU is fused into the epilogue.
Rows and columns past the edge of A and B wrap around (`% M`, `% N`, so those loads need no mask); the K
tail is masked with zeros, and the store is masked.

Run: `python examples/matmul.py` (GPU: checked and timed against torch; no GPU: the CPU interpreter).
"""
import sys

import numpy as np

import transpiler
import transpiler.language as tl

try:
    from . import _harness as H
except ImportError:  # run as a script, or loaded by bench/twins.py: the examples folder is on sys.path
    import _harness as H


@transpiler.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@transpiler.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def config_for(m, n, k):
    """One tile configuration per shape class (no autotuning here)."""
    if m <= 64:   # skinny: few rows of C, so tile wide along N and deep along K
        return dict(BLOCK_M=max(16, transpiler.next_power_of_2(m)), BLOCK_N=128, BLOCK_K=64, GROUP_M=1,
                    num_warps=4, num_stages=4)
    # Measured on the H200 (bench/matmul_configs.py): 128x128 tiles, 4 warps of 64x64 each, 4 stages of
    # BLOCK_K=32 were fastest at 4096^3 (two programs per SM fit in registers and shared memory).
    return dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4)


def matmul(a, b, out=None, activation="", config=None):
    """`a @ b` (2-D, any strides), fp32 accumulation, the result in a's dtype; optional fused leaky ReLU."""
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    out = H.empty(a, (m, n)) if out is None else out
    config = dict(config or config_for(m, n, k))
    grid = lambda meta: (transpiler.cdiv(m, meta["BLOCK_M"]) * transpiler.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    H.launcher(matmul_kernel, a)[grid](a, b, out, m, n, k, *H.strides(a), *H.strides(b), *H.strides(out),
                                      ACTIVATION=activation, **config)
    return out


def reference(a, b, activation="") -> np.ndarray:
    c = H.to_float64(a) @ H.to_float64(b)
    if activation == "leaky_relu":
        c = np.where(c >= 0, c, 0.01 * c)
    return c


# Relative Frobenius error allowed: the product is exact up to fp32 accumulation; the result is rounded once
# to the output dtype (fp16: 2^-11 relative, bf16: 2^-8).
REL_ERROR = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-3}


def check_matmul(what, got, expected, dtype):
    got = H.to_float64(got)
    if np.isnan(got).any():
        raise H.Mismatch(f"{what}: {int(np.isnan(got).sum())} elements never written (NaN)")
    rel = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
    if rel > REL_ERROR[dtype]:
        worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
        raise H.Mismatch(f"{what}: relative error {rel:.2e} > {REL_ERROR[dtype]:.0e}; at {worst}: "
                         f"got {got[worst]:.5g}, expected {expected[worst]:.5g}")
    return rel


def run_case(lib, dtype="float16", shape=(300, 200, 100), activation="", timed=False, config=None) -> str:
    m, n, k = shape
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = H.to_library(rng.standard_normal((m, k)), lib, dtype)
    b = H.to_library(rng.standard_normal((k, n)), lib, dtype)
    c = H.poison(H.empty(a, (m, n)))
    matmul(a, b, out=c, activation=activation, config=config)
    rel = check_matmul("matmul", c, reference(a, b, activation), dtype)
    line = f"matmul {dtype:8} {m}x{n}x{k:<6} {activation or 'no activation':13} relative error {rel:.1e}"
    if timed:
        ms = H.gpu_time_ms(lambda: matmul(a, b, out=c, activation=activation, config=config))
        line += f" {ms * 1e3:9.1f} us {2 * m * n * k / (ms * 1e-3) / 1e12:7.1f} TFLOP/s"
    return line


SMALL = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=4, num_warps=4, num_stages=3)
GPU_CASES = [
    dict(dtype="float16", shape=(1000, 1100, 333)),
    dict(dtype="float16", shape=(1000, 1100, 333), activation="leaky_relu"),
    dict(dtype="bfloat16", shape=(777, 555, 1000), activation="leaky_relu"),
    dict(dtype="float16", shape=(4096, 4096, 4096)),
    dict(dtype="bfloat16", shape=(4096, 4096, 4096)),
    dict(dtype="float16", shape=(16, 8192, 8192)),
]
CPU_CASES = [
    dict(dtype="float16", shape=(70, 50, 40), config=SMALL),
    dict(dtype="float16", shape=(70, 50, 40), activation="leaky_relu", config=SMALL),
]


def demo_cases():
    return [(f"matmul {c['dtype']} {c['shape']} {c.get('activation', '')}".rstrip(), H.demo(run_case, c))
            for c in CPU_CASES]


def main() -> int:
    return H.run_main("matmul", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
