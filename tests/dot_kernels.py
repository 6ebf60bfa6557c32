"""`tl.dot` kernels and the cases the compile (CPU) and GPU tests run them over.

One kernel covers the axes that change the generated code: input dtype and precision, block shape,
`num_warps`, `num_stages`, B given transposed (`tl.trans` of an [N, K] block), the accumulator form
(`acc += tl.dot(a, b)` or `tl.dot(a, b, acc)`), and whether the loads can be staged by cp.async (16-byte
aligned rows) or must go through registers (odd strides). M, N and K are not multiples of the blocks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import transpiler
import transpiler.language as tl


@transpiler.jit
def dot_kernel(A, B, C, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, B_TRANSPOSED: tl.constexpr,
               ACC_IN_DOT: tl.constexpr, PRECISION: tl.constexpr, ACC_TYPE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC_TYPE)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * s_am + (k + rk)[None, :] * s_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0)
        if B_TRANSPOSED:
            bt = tl.load(B + rn[:, None] * s_bn + (k + rk)[None, :] * s_bk,
                         mask=(rn[:, None] < N) & ((k + rk)[None, :] < K), other=0)
            b = tl.trans(bt)
        else:
            b = tl.load(B + (k + rk)[:, None] * s_bk + rn[None, :] * s_bn,
                        mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        if ACC_IN_DOT:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        else:
            acc += tl.dot(a, b, input_precision=PRECISION)
    tl.store(C + rm[:, None] * s_cm + rn[None, :] * s_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@transpiler.jit
def dot_out_dtype_kernel(A, B, C, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, B_TRANSPOSED: tl.constexpr,
                         ACC_IN_DOT: tl.constexpr, PRECISION: tl.constexpr, ACC_TYPE: tl.constexpr):
    """dot_kernel as Triton requires it for int8 and fp8 inputs: a float `other` (Triton casts no int to fp8)
    and `out_dtype` equal to the accumulator's type (Triton's default, fp32, refuses an int32 accumulator)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC_TYPE)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * s_am + (k + rk)[None, :] * s_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        if B_TRANSPOSED:
            bt = tl.load(B + rn[:, None] * s_bn + (k + rk)[None, :] * s_bk,
                         mask=(rn[:, None] < N) & ((k + rk)[None, :] < K), other=0.0)
            b = tl.trans(bt)
        else:
            b = tl.load(B + (k + rk)[:, None] * s_bk + rn[None, :] * s_bn,
                        mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC_TYPE)
    tl.store(C + rm[:, None] * s_cm + rn[None, :] * s_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@transpiler.jit
def dot_at_kernel(AT, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B with A given as A^T ([K, M], M contiguous): `tl.trans` of the staged tile makes A M-major
    (wgmma reads it with the transpose bit)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        at = tl.load(AT + (k + rk)[:, None] * M + rm[None, :], mask=((k + rk)[:, None] < K) & (rm[None, :] < M),
                     other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(tl.trans(at), b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# (BM, BN, BK, num_warps, num_stages, (M, N, K)) of dot_at_kernel: one 128-byte slab of M, two, two warpgroups.
# M and N multiples of 16 (rows provably 16-byte aligned, so the loads are staged) but not of the blocks.
AT_CASES = [(64, 64, 32, 4, 3, (208, 144, 264)), (128, 128, 64, 4, 3, (304, 272, 296)),
            (128, 64, 32, 8, 3, (272, 208, 328))]


@transpiler.jit
def dot_epilogue_kernel(A, B, Bias, Out, RowMax, M, N, K,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One dot over the whole K (no loop), then bias, ReLU, a row max and an fp16 store: the product feeds
    elementwise ops, a reduction and a cast."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    c = tl.dot(a, b) + tl.load(Bias + rn, mask=rn < N, other=0.0)[None, :]
    c = tl.maximum(c, 0.0)
    tl.store(RowMax + rm, tl.max(tl.where(rn[None, :] < N, c, 0.0), axis=1), mask=rm < M)
    tl.store(Out + rm[:, None] * N + rn[None, :], c.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@dataclass(frozen=True)
class DotCase:
    dtype: str                   # input dtype: float16, bfloat16, float32, int8, float64
    block: tuple                 # (BM, BN, BK)
    num_warps: int = 4
    num_stages: int = 3
    shape: tuple = (100, 72, 200)
    b_transposed: bool = False
    acc_in_dot: bool = True
    precision: str = "tf32"

    @property
    def id(self):
        bm, bn, bk = self.block
        m, n, k = self.shape
        return (f"{self.dtype}-{self.precision if self.dtype == 'float32' else 'native'}-{bm}x{bn}x{bk}-w{self.num_warps}"
                f"-s{self.num_stages}-{m}x{n}x{k}{'-bT' if self.b_transposed else ''}"
                f"{'-accplus' if not self.acc_in_dot else ''}")

    @property
    def acc_dtype(self):
        return {"int8": "int32", "float64": "float64"}.get(self.dtype, "float32")


CASES = [
    # fp16 across warps, stages and blocks; K = 200 keeps rows 16-byte aligned (cp.async pipeline)
    DotCase("float16", (16, 16, 16), num_warps=1, num_stages=2),
    DotCase("float16", (32, 32, 32), num_warps=2, num_stages=3),
    DotCase("float16", (64, 64, 32), num_warps=4, num_stages=4),
    DotCase("float16", (128, 64, 32), num_warps=4, num_stages=3, shape=(300, 200, 296)),
    DotCase("float16", (64, 128, 64), num_warps=8, num_stages=3, shape=(300, 200, 296)),
    DotCase("float16", (128, 128, 32), num_warps=8, num_stages=2, shape=(260, 257, 192)),
    DotCase("float16", (16, 64, 64), num_warps=4, num_stages=3, shape=(5, 130, 520)),
    DotCase("float16", (64, 64, 32), num_warps=4, num_stages=1),
    # odd K: rows not 16-byte aligned, loads go through registers
    DotCase("float16", (64, 64, 32), num_warps=4, shape=(77, 45, 333)),
    DotCase("float16", (32, 64, 16), num_warps=2, shape=(77, 45, 333), b_transposed=True),
    # B transposed ([N, K] in memory, tl.trans in the kernel) and `acc += tl.dot(...)`
    DotCase("float16", (64, 64, 32), num_warps=4, b_transposed=True),
    DotCase("float16", (64, 64, 64), num_warps=4, acc_in_dot=False),
    DotCase("bfloat16", (64, 64, 32), num_warps=4),
    DotCase("bfloat16", (128, 64, 64), num_warps=8, num_stages=4, shape=(300, 200, 296), b_transposed=True),
    DotCase("bfloat16", (32, 32, 16), num_warps=1, shape=(77, 45, 333)),
    # fp32: tf32 tensor cores by default, exact FMA with "ieee"
    DotCase("float32", (64, 64, 32), num_warps=4, precision="tf32"),
    DotCase("float32", (32, 64, 16), num_warps=4, precision="tf32", b_transposed=True),
    DotCase("float32", (32, 32, 16), num_warps=4, precision="ieee"),
    DotCase("float32", (64, 32, 32), num_warps=2, precision="ieee", shape=(77, 45, 333)),
    # int8 -> int32, and fp64 (FMA)
    DotCase("int8", (64, 64, 32), num_warps=4),
    # (K = 256: with K = 200 the int8 rows are 8-byte aligned, which the specialization does not see (it
    # records multiples of 16 only), so every byte is its own load and sm_80's ptxas spills 24 bytes.)
    DotCase("int8", (32, 32, 64), num_warps=2, b_transposed=True, shape=(100, 72, 256)),
    DotCase("int8", (32, 32, 16), num_warps=4),
    DotCase("float64", (32, 32, 16), num_warps=4),
    # M or N below 16 (Triton's CUDA front end takes any M and N): FMA, fp32 operands rounded to tf32 first,
    # operands through registers (not staged), B transposed too
    DotCase("float16", (1, 32, 32), num_warps=4, shape=(5, 45, 100)),
    DotCase("float16", (8, 8, 32), num_warps=1, shape=(20, 21, 70), b_transposed=True),
    DotCase("float32", (32, 2, 16), num_warps=2, precision="tf32", shape=(40, 5, 50)),
    DotCase("bfloat16", (16, 8, 16), num_warps=4, shape=(33, 17, 40), acc_in_dot=False),
    # warpgroup MMA on sm_90a (both tiles through descriptors): the example's 128x128x64 block (two m64
    # instructions per warpgroup), one m64n128 per warpgroup, two warpgroups along M and along N, K-major B
    # with 256-byte rows (128-byte slabs of K), bf16
    DotCase("float16", (128, 128, 64), num_warps=4, num_stages=3, shape=(300, 260, 296)),
    DotCase("float16", (64, 128, 64), num_warps=4, num_stages=3, shape=(130, 300, 200)),
    DotCase("float16", (128, 128, 128), num_warps=8, num_stages=2, shape=(260, 257, 392), b_transposed=True),
    DotCase("float16", (64, 256, 32), num_warps=8, num_stages=4, shape=(200, 520, 264)),
    DotCase("bfloat16", (128, 256, 64), num_warps=8, num_stages=3, shape=(300, 520, 264)),
    DotCase("bfloat16", (128, 128, 64), num_warps=4, num_stages=3, shape=(300, 260, 296), b_transposed=True),
]

# Relative Frobenius error allowed against a float64 product of the (rounded) inputs.
REL_ERROR = {"float16": 1e-5, "bfloat16": 1e-5, "float32/tf32": 3e-3, "float32/ieee": 1e-6, "float64": 1e-12}


def make_inputs(case: DotCase, rng):
    m, n, k = case.shape
    if case.dtype == "int8":
        a = rng.integers(-128, 128, size=(m, k)).astype(np.int8)
        b = rng.integers(-128, 128, size=(k, n)).astype(np.int8)
    else:
        a = rng.standard_normal((m, k))
        b = rng.standard_normal((k, n))
    return a, b


def reference(case: DotCase, a64, b64):
    if case.dtype == "int8":
        return a64.astype(np.int64) @ b64.astype(np.int64)
    return a64 @ b64


def launch_args(case: DotCase, a, b, c, strides_a, strides_b, strides_c):
    """Positional arguments and options of `dot_kernel` for one case (B strides given for B as [K, N])."""
    m, n, k = case.shape
    bm, bn, bk = case.block
    args = (a, b, c, m, n, k, *strides_a, *strides_b, *strides_c)
    import transpiler.language as tlang
    options = dict(BM=bm, BN=bn, BK=bk, B_TRANSPOSED=case.b_transposed, ACC_IN_DOT=case.acc_in_dot,
                   PRECISION=case.precision, ACC_TYPE=getattr(tlang, case.acc_dtype),
                   num_warps=case.num_warps, num_stages=case.num_stages)
    grid = (transpiler.cdiv(m, bm), transpiler.cdiv(n, bn))
    return grid, args, options


def host_stand_ins(case: DotCase):
    """Arguments standing in for the device arrays (compile-only tests), B laid out as the case says."""
    m, n, k = case.shape
    if case.dtype == "bfloat16":
        a = b = transpiler.StandIn(tl.bfloat16)
        strides_a, strides_b = (k, 1), ((1, k) if case.b_transposed else (n, 1))
    else:
        np_dtype = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "float64": np.float64}[case.dtype]
        a = np.ones((m, k), np_dtype)
        b = np.ones((n, k) if case.b_transposed else (k, n), np_dtype)
        strides_a, strides_b = element_strides(a), b_strides(case, b)
    c = np.ones((m, n), {"int32": np.int32, "float32": np.float32, "float64": np.float64}[case.acc_dtype])
    return a, b, c, strides_a, strides_b, element_strides(c)


def element_strides(arr):
    return tuple(s // arr.itemsize for s in arr.strides)


def b_strides(case: DotCase, b):
    """(stride along K, stride along N) of B in elements, whichever way it is stored."""
    s = element_strides(b) if hasattr(b, "strides") and not hasattr(b, "stride") else tuple(b.stride())
    return (s[1], s[0]) if case.b_transposed else s
