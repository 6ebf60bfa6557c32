"""Batched (3-D) `tl.dot` kernels and their cases, shared by the CPU tests (tests/test_dot3d.py) and the GPU
tests (tests/test_gpu_dot3d.py).

`bmm_kernel` is a batched matmul the way users write one: [B, M, K] @ [B, K, N] blocks of strided tensors,
masks on every dimension (sizes not multiples of the blocks), a K loop carrying the accumulator, an optional
initial accumulator loaded from memory, `input_precision` and `out_dtype` as constexprs. A case is its shapes,
blocks, dtypes and `num_warps`; `reference` is the float64 product of the same inputs (fp32 inputs rounded to
tf32 first where the dot computes in tf32, as the tensor cores do).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import transpiler
import transpiler.language as tl


@transpiler.jit
def bmm_kernel(A, B, C, ACC, n_batch, M, N, K, s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn,
               BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               ACC_DTYPE: tl.constexpr, OUT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, HAS_ACC: tl.constexpr):
    ob = tl.program_id(2) * BLOCK_B + tl.arange(0, BLOCK_B)
    om = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    on = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (ob[:, None, None] < n_batch) & (om[None, :, None] < M) & (on[None, None, :] < N)
    c_offsets = ob[:, None, None] * s_cb + om[None, :, None] * s_cm + on[None, None, :] * s_cn
    if HAS_ACC:
        acc = tl.load(ACC + c_offsets, mask=c_mask, other=0).to(ACC_DTYPE)
    else:
        acc = tl.zeros((BLOCK_B, BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k0 in range(0, K, BLOCK_K):
        ok = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + ob[:, None, None] * s_ab + om[None, :, None] * s_am + ok[None, None, :] * s_ak,
                    mask=(ob[:, None, None] < n_batch) & (om[None, :, None] < M) & (ok[None, None, :] < K), other=0)
        b = tl.load(B + ob[:, None, None] * s_bb + ok[None, :, None] * s_bk + on[None, None, :] * s_bn,
                    mask=(ob[:, None, None] < n_batch) & (ok[None, :, None] < K) & (on[None, None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    tl.store(C + c_offsets, acc, mask=c_mask)


@transpiler.jit
def bmm_epilogue_kernel(A, B, C, n_batch, M, N, K, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """A whole-K batched product used on: scaled, a row maximum over N subtracted, reduced over the batch into
    an [M, N] block (the product's layout meets reductions and broadcasts)."""
    ob = tl.arange(0, BLOCK_B)
    om = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    on = tl.arange(0, BLOCK_N)
    ok = tl.arange(0, BLOCK_K)
    a = tl.load(A + ob[:, None, None] * M * K + om[None, :, None] * K + ok[None, None, :],
                mask=(ob[:, None, None] < n_batch) & (om[None, :, None] < M) & (ok[None, None, :] < K), other=0.0)
    b = tl.load(B + ob[:, None, None] * K * N + ok[None, :, None] * N + on[None, None, :],
                mask=(ob[:, None, None] < n_batch) & (ok[None, :, None] < K) & (on[None, None, :] < N), other=0.0)
    s = tl.dot(a, b) * 0.5
    s = s - tl.max(s, axis=2, keep_dims=True)
    total = tl.sum(s, axis=0)
    tl.store(C + om[:, None] * N + on[None, :], total, mask=(om[:, None] < M) & (on[None, :] < N))


@transpiler.jit
def bmm_transposed_kernel(Q, KT, W, O, n_batch, M, N, D, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """Batched attention scores the way kernels write them: K stored [B, N, D] and used through
    `tl.trans(k, 0, 2, 1)`, then the scores times one weight matrix shared by every batch (broadcast)."""
    ob = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    om = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    on = tl.arange(0, BLOCK_N)
    od = tl.arange(0, BLOCK_D)
    q = tl.load(Q + ob[:, None, None] * M * D + om[None, :, None] * D + od[None, None, :],
                mask=(ob[:, None, None] < n_batch) & (om[None, :, None] < M) & (od[None, None, :] < D), other=0.0)
    k = tl.load(KT + ob[:, None, None] * N * D + on[None, :, None] * D + od[None, None, :],
                mask=(ob[:, None, None] < n_batch) & (on[None, :, None] < N) & (od[None, None, :] < D), other=0.0)
    s = tl.dot(q, tl.trans(k, 0, 2, 1))
    w = tl.load(W + on[:, None] * BLOCK_D + od[None, :], mask=on[:, None] < N, other=0.0)
    o = tl.dot(s.to(tl.float16), tl.broadcast_to(w[None, :, :], (BLOCK_B, BLOCK_N, BLOCK_D)))
    tl.store(O + ob[:, None, None] * M * BLOCK_D + om[None, :, None] * BLOCK_D + od[None, None, :], o,
             mask=(ob[:, None, None] < n_batch) & (om[None, :, None] < M))


def transposed_case(rng, n_batch=3, m=40, n=20, d=24, blocks=(2, 32, 32, 32)):
    """Inputs, the launch's (grid, args, constexprs) and the float64 reference of bmm_transposed_kernel."""
    bb, bm, bn, bd = blocks
    q = rng.standard_normal((n_batch, m, d)).astype(np.float16)
    kt = rng.standard_normal((n_batch, n, d)).astype(np.float16)
    w = (rng.standard_normal((n, bd)) * 0.25).astype(np.float16)
    o = poisoned((n_batch, m, bd), np.float32)
    s = np.matmul(q.astype(np.float64), kt.astype(np.float64).transpose(0, 2, 1))
    ref = np.matmul(s.astype(np.float16).astype(np.float64), w.astype(np.float64))
    grid = (-(-m // bm), -(-n_batch // bb))
    return grid, [q, kt, w, o, n_batch, m, n, d], dict(BLOCK_B=bb, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=bd), ref


_NP = {"float16": np.float16, "bfloat16": None, "float32": np.float32, "float64": np.float64, "int8": np.int8,
       "int32": np.int32}
_TL = {"float16": tl.float16, "float32": tl.float32, "float64": tl.float64, "int32": tl.int32}


@dataclass(frozen=True)
class Case:
    id: str
    shape: tuple                 # (batch, M, N, K)
    blocks: tuple                # (BLOCK_B, BLOCK_M, BLOCK_N, BLOCK_K)
    dtype: str = "float16"
    out_dtype: str = "float32"   # the dot's out_dtype (and the accumulator's dtype)
    precision: str = "tf32"
    num_warps: int = 4
    has_acc: bool = False
    expected: str = "mma"        # the instruction the tensor-core pass should choose: "mma" or "fma"

    @property
    def acc_dtype(self):
        if self.dtype == "int8":
            return "int32"
        if self.dtype == "float64":
            return "float64"
        return self.out_dtype

    @property
    def tf32(self):
        return self.dtype == "float32" and self.precision == "tf32"


CASES = [
    Case("f16_b5_ragged_kloop", (5, 40, 24, 70), (2, 32, 32, 32)),
    Case("f16_b3_acc_in", (3, 33, 47, 50), (4, 16, 32, 16), has_acc=True, num_warps=2),
    Case("f16_out_f16", (4, 64, 64, 64), (4, 32, 32, 64), out_dtype="float16", num_warps=8),
    Case("f16_b8_one_warp", (8, 20, 30, 40), (8, 16, 16, 16), num_warps=1),
    Case("f16_b1_16_warps", (1, 64, 64, 64), (1, 64, 64, 64), num_warps=16),
    Case("f16_b2_large_tiles", (2, 130, 100, 90), (2, 64, 64, 32)),
    Case("f32_tf32", (6, 50, 40, 36), (2, 32, 32, 16), dtype="float32"),
    Case("f32_ieee_fma", (3, 40, 36, 20), (4, 16, 32, 16), dtype="float32", precision="ieee", expected="fma"),
    Case("i8_k32", (4, 30, 40, 100), (2, 32, 32, 32), dtype="int8", out_dtype="int32"),
    Case("i8_k16_fma", (3, 20, 20, 20), (2, 16, 16, 16), dtype="int8", out_dtype="int32", expected="fma"),
    Case("f64_fma", (2, 20, 18, 30), (2, 16, 16, 16), dtype="float64", out_dtype="float64", expected="fma"),
    Case("f16_b16_acc_in", (16, 16, 16, 16), (16, 16, 16, 16), has_acc=True, num_warps=4),
    # M or N below 16 (Triton's CUDA front end takes them; test_dot3d's small blocks): FMA, tf32 rounded first
    Case("f16_m1", (3, 5, 40, 32), (2, 1, 32, 32), expected="fma"),
    Case("f32_tf32_n2", (2, 40, 3, 32), (2, 32, 2, 32), dtype="float32", num_warps=2, expected="fma"),
    Case("f16_8x8_out_f16", (8, 20, 20, 50), (8, 8, 8, 32), out_dtype="float16", num_warps=1, expected="fma"),
]

BY_ID = {c.id: c for c in CASES}


def make_inputs(case, rng):
    """A [B, M, K], B [B, K, N] (B stored transposed in memory, N the slow axis, for the odd cases) and an
    initial accumulator, in the case's dtypes."""
    batch, m, n, k = case.shape
    if case.dtype == "int8":
        a = rng.integers(-100, 100, (batch, m, k)).astype(np.int8)
        b = rng.integers(-100, 100, (batch, k, n)).astype(np.int8)
        acc = rng.integers(-1000, 1000, (batch, m, n)).astype(np.int32)
    else:
        dt = _NP[case.dtype]
        a = rng.standard_normal((batch, m, k)).astype(dt)
        b = rng.standard_normal((batch, k, n)).astype(dt)
        acc = rng.standard_normal((batch, m, n)).astype(_NP[case.acc_dtype])
    return a, b, acc


def _tf32(x):
    """Round fp32 to tf32 (10 mantissa bits), to nearest with ties away from zero (cvt.rna.tf32.f32)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
    return np.where(np.isfinite(x), rounded.view(np.float32), x).astype(np.float64)


def reference(case, a, b, acc):
    """The float64 product (plus the initial accumulator where the case has one)."""
    if case.dtype == "int8":
        out = np.matmul(a.astype(np.int64), b.astype(np.int64))
        return out + (acc.astype(np.int64) if case.has_acc else 0)
    a64, b64 = (_tf32(a), _tf32(b)) if case.tf32 else (a.astype(np.float64), b.astype(np.float64))
    out = np.matmul(a64, b64)
    return out + (acc.astype(np.float64) if case.has_acc else 0)


def tolerance(case, k, tf32_truncated=False):
    """(rtol, atol) for the case's dtypes over a K-long sum of unit-variance products; `tf32_truncated`: for a
    product whose tf32 operands may be the fp32 bits cut short rather than rounded (Triton's tensor cores read
    them so; measured on the H200: up to 0.015 off the rounded reference at K = 36), not for ours."""
    if case.dtype == "int8":
        return 0, 0
    if case.acc_dtype == "float16":
        return 1e-2, 2e-2 * np.sqrt(k)
    if case.tf32:
        return (1e-2, 1e-2 * np.sqrt(k)) if tf32_truncated else (2e-3, 2e-3 * np.sqrt(k))
    if case.dtype == "float16":
        return 1e-3, 1e-4 * np.sqrt(k)
    return 1e-6, 1e-6 * np.sqrt(k)


def grid(case):
    batch, m, n, _ = case.shape
    bb, bm, bn, _ = case.blocks
    return (-(-m // bm), -(-n // bn), -(-batch // bb))


def launch_args(case, a, b, c, acc):
    """(positional args, constexprs and options) of bmm_kernel for arrays with NumPy-like strides (elements)."""
    batch, m, n, k = case.shape
    bb, bm, bn, bk = case.blocks

    def strides(x):
        return tuple(s // x.itemsize for s in x.strides)
    args = [a, b, c, acc, batch, m, n, k, *strides(a), *strides(b), *strides(c)]
    constexprs = dict(BLOCK_B=bb, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, ACC_DTYPE=_TL[case.acc_dtype],
                      OUT_DTYPE=_TL[case.acc_dtype],     # Triton asks an acc of out_dtype's type
                      PRECISION=case.precision, HAS_ACC=case.has_acc, num_warps=case.num_warps)
    return args, constexprs


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    out.fill(np.nan if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min + 7)
    return out


def output_dtype(case):
    return _NP[case.acc_dtype]
