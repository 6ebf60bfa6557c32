"""Block-pointer kernels (`tl.make_block_ptr`, `tl.advance`, `boundary_check`, `padding_option`), each with a
NumPy float64 reference and a case builder, in the form of `feature_kernels.py`.

Shared by the CPU tests (emitted source and PTX pins, NVRTC compiles, the interpreter against NumPy) and the
GPU tests. Matrix sizes are not multiples of the blocks, so every boundary check matters; outputs are
poisoned before the launch.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

from feature_kernels import _poison

# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def bp_copy_kernel(X, Y, M, N, stride_xm, stride_xn, stride_ym, stride_yn, BM: tl.constexpr, BN: tl.constexpr):
    """Y = X through two block pointers, both dimensions checked on the load and the store."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(X, shape=(M, N), strides=(stride_xm, stride_xn), offsets=(pid_m * BM, pid_n * BN),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(Y, (M, N), (stride_ym, stride_yn), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1), padding_option="zero"), boundary_check=(0, 1))


@transpiler.jit
def bp_pad_kernel(X, OUT, M, N, stride_xm, stride_om, PAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """OUT (the grid's whole area, so no checks on the store) = X padded with `PAD` past its edges."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(X, (M, N), (stride_xm, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    block = tl.load(src, boundary_check=(1, 0), padding_option=PAD)
    dst = tl.make_block_ptr(OUT, (BM * tl.num_programs(0), BN * tl.num_programs(1)), (stride_om, 1),
                            (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(dst, block)


@transpiler.jit
def bp_transpose_kernel(X, Y, M, N, stride_xm, stride_ym, BM: tl.constexpr, BN: tl.constexpr):
    """Y (N x M) = X.T: the source pointer views X as its transpose (shape (N, M), strides (1, stride_xm),
    order (0, 1): dimension 0 is the contiguous one); the destination is row-major, order (1, 0)."""
    pid_n, pid_m = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(X, (N, M), (1, stride_xm), (pid_n * BN, pid_m * BM), (BN, BM), (0, 1))
    dst = tl.make_block_ptr(Y, (N, M), (stride_ym, 1), (pid_n * BN, pid_m * BM), (BN, BM), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1)), boundary_check=(0, 1))


@transpiler.jit
def bp_row_sums_kernel(X, SUMS, M, N, stride_xm, BM: tl.constexpr, BN: tl.constexpr):
    """Row sums: a [BM, BN] block pointer walks the columns with tl.advance in a runtime loop; the sums go out
    through a 1-D block pointer."""
    pid = tl.program_id(0)
    block = tl.make_block_ptr(X, (M, N), (stride_xm, 1), (pid * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for _ in range(0, N, BN):
        acc += tl.sum(tl.load(block, boundary_check=(0, 1), padding_option="zero"), axis=1)
        block = tl.advance(block, (0, BN))
    out = tl.make_block_ptr(SUMS, (M,), (1,), (pid * BM,), (BM,), (0,))
    tl.store(out, acc, boundary_check=(0,))


@transpiler.jit
def _tile_sum(block):
    return tl.sum(tl.load(block, boundary_check=(0, 1), padding_option="zero"))


@transpiler.jit
def bp_nested_kernel(X, OUT, M, N, stride_xm, BM: tl.constexpr, BN: tl.constexpr):
    """OUT[0] = the sum of X, one program walking it tile by tile: the inner loop advances along the columns,
    the outer one moves down a block of rows and back to column 0 (a negative advance). A @jit helper loads."""
    block = tl.make_block_ptr(X, (M, N), (stride_xm, 1), (0, 0), (BM, BN), (1, 0))
    total = 0.0
    for _ in range(0, M, BM):
        columns = 0
        for _ in range(0, N, BN):
            total += _tile_sum(block)
            block = block.advance((0, BN))
            columns += BN
        block = tl.advance(block, (BM, -columns))
    tl.store(OUT, total)


@transpiler.jit
def bp_shift_kernel(X, Y, N, shift, BLOCK: tl.constexpr):
    """Y[i] = X[i + shift] (zero past either end): the pointer is advanced in a runtime branch, by a runtime
    amount that may be negative, so the offset leaves the if as a merged value and both bounds are checked."""
    pid = tl.program_id(0)
    src = tl.make_block_ptr(X, (N,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    if shift != 0:
        src = src.advance((shift,))
    dst = tl.make_block_ptr(Y, (N,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    tl.store(dst, tl.load(src, boundary_check=(0,), padding_option="zero"), boundary_check=(0,))


@transpiler.jit
def bp_matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_ORDER: tl.constexpr):
    """C = A @ B with block pointers (Triton's block-pointer matmul tutorial): fp32 accumulation, C in A's
    dtype. B may be stored K x N (B_ORDER (1, 0)) or N x K (B_ORDER (0, 1), stride_bk == 1)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_block = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, stride_ak), offsets=(pid_m * BLOCK_M, 0),
                                block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_block = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, pid_n * BLOCK_N),
                                block_shape=(BLOCK_K, BLOCK_N), order=B_ORDER)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(C, (M, N), (stride_cm, stride_cn), (pid_m * BLOCK_M, pid_n * BLOCK_N),
                                (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(c_block, acc.to(C.dtype.element_ty), boundary_check=(0, 1))


# ---------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------

def case_copy(rng, dtype=np.float32, m=70, n=100, bm=32, bn=64):
    x = (rng.standard_normal((m, n)) * 10).astype(dtype)
    y = _poison((m, n), dtype)
    grid = (transpiler.cdiv(m, bm), transpiler.cdiv(n, bn))
    return dict(kernel=bp_copy_kernel, grid=grid, args=[x, y, m, n, n, 1, n, 1], constexprs=dict(BM=bm, BN=bn),
                outputs=[1], reference=lambda x, *rest: [x], rtol=0, atol=0)


def case_pad(rng, pad="zero", dtype=np.float32, m=37, n=50, bm=16, bn=32):
    x = rng.standard_normal((m, n)).astype(dtype)
    gm, gn = transpiler.cdiv(m, bm), transpiler.cdiv(n, bn)
    # With padding "nan" the poison must not be NaN itself, or an unwritten element would pass.
    out = np.full((gm * bm, gn * bn), -7777.0, dtype) if pad == "nan" else _poison((gm * bm, gn * bn), dtype)

    def ref(x, out, *rest):
        expected = np.full(out.shape, np.nan if pad == "nan" else 0.0)
        expected[:m, :n] = x
        return [expected]
    return dict(kernel=bp_pad_kernel, grid=(gm, gn), args=[x, out, m, n, n, gn * bn],
                constexprs=dict(PAD=pad, BM=bm, BN=bn), outputs=[1], reference=ref, rtol=0, atol=0)


def case_transpose(rng, dtype=np.float32, m=45, n=70, bm=32, bn=32):
    x = rng.standard_normal((m, n)).astype(dtype)
    y = _poison((n, m), dtype)
    grid = (transpiler.cdiv(n, bn), transpiler.cdiv(m, bm))
    return dict(kernel=bp_transpose_kernel, grid=grid, args=[x, y, m, n, n, m], constexprs=dict(BM=bm, BN=bn),
                outputs=[1], reference=lambda x, *rest: [x.T], rtol=0, atol=0)


def case_row_sums(rng, m=37, n=300, bm=16, bn=64):
    x = rng.standard_normal((m, n)).astype(np.float32)
    sums = _poison(m, np.float32)
    return dict(kernel=bp_row_sums_kernel, grid=(transpiler.cdiv(m, bm),), args=[x, sums, m, n, n],
                constexprs=dict(BM=bm, BN=bn), outputs=[1],
                reference=lambda x, *rest: [x.astype(np.float64).sum(1)], rtol=1e-5, atol=1e-5)


def case_nested(rng, m=100, n=150, bm=32, bn=64):
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = _poison(1, np.float32)
    return dict(kernel=bp_nested_kernel, grid=(1,), args=[x, out, m, n, n], constexprs=dict(BM=bm, BN=bn),
                outputs=[1], reference=lambda x, *rest: [x.astype(np.float64).sum()], rtol=1e-5, atol=1e-4)


def case_shift(rng, shift=-5, n=1000, block=128):
    x = rng.standard_normal(n).astype(np.float32)
    y = _poison(n, np.float32)

    def ref(x, *rest):
        src = np.arange(n) + shift
        return [np.where((src >= 0) & (src < n), x[np.clip(src, 0, n - 1)], 0.0)]
    return dict(kernel=bp_shift_kernel, grid=(transpiler.cdiv(n, block),), args=[x, y, n, shift],
                constexprs=dict(BLOCK=block), outputs=[1], reference=ref, rtol=0, atol=0)


def case_matmul(rng, dtype=np.float16, m=100, n=72, k=200, block=(64, 64, 32), num_warps=4, b_stored_nk=False):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = _poison((m, n), dtype)
    # B stored N x K: the kernel sees its transpose through the strides (1, k)
    b_arg, b_strides, b_order = (b.T.copy(), (1, k), (0, 1)) if b_stored_nk else (b, (n, 1), (1, 0))
    bm, bn, bk = block
    # fp16: exact products, fp32 sums, one rounding to fp16 at the end. fp32: tf32 products (each input rounded
    # to 10 mantissa bits), whose errors add up like a random walk over k.
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == np.float16 else dict(rtol=1e-3, atol=5e-3 * np.sqrt(k))
    return dict(kernel=bp_matmul_kernel, grid=(transpiler.cdiv(m, bm), transpiler.cdiv(n, bn)),
                args=[a, b_arg, c, m, n, k, k, 1, *b_strides, n, 1],
                constexprs=dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, B_ORDER=b_order), outputs=[2],
                reference=lambda *rest: [a.astype(np.float64) @ b.astype(np.float64)],
                num_warps=num_warps, **tol)


def all_cases(rng):
    """Every block-pointer case, with an id."""
    return [("copy_fp32", case_copy(rng)), ("copy_fp16", case_copy(rng, np.float16)),
            ("copy_int32", case_copy(rng, np.int32)), ("pad_zero", case_pad(rng, "zero")),
            ("pad_nan", case_pad(rng, "nan")), ("pad_nan_fp16", case_pad(rng, "nan", np.float16)),
            ("transpose", case_transpose(rng)), ("row_sums", case_row_sums(rng)), ("nested", case_nested(rng)),
            ("shift_back", case_shift(rng, -5)), ("shift_forward", case_shift(rng, 77)),
            ("shift_none", case_shift(rng, 0)), ("matmul_fp16", case_matmul(rng)),
            ("matmul_fp32", case_matmul(rng, np.float32, block=(32, 32, 32))),
            ("matmul_fp16_128x128", case_matmul(rng, m=300, n=260, k=136, block=(128, 128, 32))),
            ("matmul_fp16_b_stored_nk", case_matmul(rng, m=130, n=96, k=264, b_stored_nk=True))]
