"""Scan kernels (cumsum, cumprod, associative_scan) with NumPy float64 references and case builders.

Shared by the CPU tests (NVRTC compile, the interpreter against NumPy) and the GPU tests. A case has the
fields of `feature_kernels` cases. Every kernel reads rows whose length is not a multiple of the block
(masked loads with other=0, or 1 for products), so the padding must not leak into the valid elements.
Float tolerances grow with the scanned length: the compiled scan adds in a parallel order, the reference
sequentially in float64.
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
def cumsum_rows_kernel(X, Y, N, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    """One program per row: Y[row] = cumsum(X[row]) over the first N elements."""
    offs = tl.arange(0, BLOCK)
    row = tl.program_id(0) * N
    x = tl.load(X + row + offs, mask=offs < N, other=0)
    y = tl.cumsum(x, axis=0, reverse=REVERSE)
    tl.store(Y + row + offs, y, mask=offs < N)


@transpiler.jit
def cumsum_2d_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=mask, other=0)
    tl.store(Y + rows[:, None] * N + cols[None, :], tl.cumsum(x, axis=AXIS, reverse=REVERSE), mask=mask)


@transpiler.jit
def cumprod_rows_kernel(X, Y, N, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    row = tl.program_id(0) * N
    x = tl.load(X + row + offs, mask=offs < N, other=1)
    tl.store(Y + row + offs, x.cumprod(0, reverse=REVERSE), mask=offs < N)


@transpiler.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@transpiler.jit
def running_max_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=mask, other=float("-inf"))
    tl.store(Y + rows[:, None] * N + cols[None, :], tl.associative_scan(x, AXIS, _maximum), mask=mask)


@transpiler.jit
def _first_order(a_left, b_left, a_right, b_right):
    """(a, b) pairs of h -> a * h + b, composed: the left map first, then the right one."""
    return a_left * a_right, b_left * a_right + b_right


@transpiler.jit
def linear_recurrence_kernel(A, B, H, M, N, BM: tl.constexpr, BN: tl.constexpr, REVERSE: tl.constexpr):
    """h[t] = a[t] * h[t-1] + b[t] along each row (h[-1] = 0), as a Mamba-style selective scan computes it."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    a = tl.load(A + offs, mask=mask, other=1.0)
    b = tl.load(B + offs, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=1, combine_fn=_first_order, reverse=REVERSE)
    tl.store(H + offs, h, mask=mask)


@transpiler.jit
def _argmax_so_far(v_left, i_left, v_right, i_right):
    right_wins = v_right > v_left
    return tl.where(right_wins, v_right, v_left), tl.where(right_wins, i_right, i_left)


@transpiler.jit
def running_argmax_kernel(X, V, I, N, BLOCK: tl.constexpr):
    """(value, index) pairs of two types: the running maximum of a row and where it first occurred."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=float("-inf"))
    v, i = tl.associative_scan((x, offs), 0, _argmax_so_far)
    tl.store(V + offs, v, mask=offs < N)
    tl.store(I + offs, i, mask=offs < N)


@transpiler.jit
def chunked_cumsum_kernel(X, Y, N, BLOCK: tl.constexpr):
    """A row longer than the block: each chunk's cumsum plus the running total (a scan inside a loop)."""
    carry = 0.0
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < N, other=0.0)
        tl.store(Y + offs, tl.cumsum(x, 0) + carry, mask=offs < N)
        carry += tl.sum(x, axis=0)


@transpiler.jit
def cumsum_transposed_flat_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """cumsum over the column-major order of a block: its layout (transposed, flattened) interleaves lanes,
    warps and registers along the axis, so the scan runs in the default layout after a conversion."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    y = tl.cumsum(tl.reshape(tl.trans(x), BM * BN), 0)
    flat = tl.arange(0, BM * BN)
    tl.store(Y + flat, y)


# ---------------------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------------------


def _scan_ref(x, axis, reverse, fn):
    x = np.moveaxis(np.asarray(x), axis, 0)
    if reverse:
        x = x[::-1]
    out = fn(x)
    if reverse:
        out = out[::-1]
    return np.moveaxis(out, 0, axis)


def _recurrence_ref(a, b, reverse):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if reverse:
        a, b = a[:, ::-1], b[:, ::-1]
    h = np.zeros_like(b)
    prev = np.zeros(b.shape[0])
    for t in range(b.shape[1]):
        prev = a[:, t] * prev + b[:, t]
        h[:, t] = prev
    return h[:, ::-1] if reverse else h


def _float_tol(np_dtype, length):
    if np.dtype(np_dtype) == np.float16:
        return dict(rtol=2e-3, atol=2e-3)
    return dict(rtol=1e-5, atol=2e-6 * length)


# ---------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------

_OUT_TYPE = {np.int8: np.int32, np.int16: np.int32, np.uint8: np.uint32, np.bool_: np.uint32}


def _values(rng, shape, np_dtype):
    if np.dtype(np_dtype).kind == "f":
        return rng.standard_normal(shape).astype(np_dtype)
    if np_dtype is np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-100 if np.dtype(np_dtype).kind == "i" else 0, 100, shape).astype(np_dtype)


def case_cumsum_rows(rng, np_dtype=np.float32, rows=3, n=1000, block=1024, reverse=False, num_warps=4):
    x = _values(rng, (rows, n), np_dtype)
    out_type = _OUT_TYPE.get(np_dtype, np_dtype)
    y = _poison((rows, n), out_type)
    acc = np.float64 if np.dtype(np_dtype).kind == "f" else np.int64
    tol = _float_tol(np_dtype, n) if np.dtype(np_dtype).kind == "f" else dict(rtol=0, atol=0)
    return dict(kernel=cumsum_rows_kernel, grid=(rows,), args=[x, y, n],
                constexprs=dict(BLOCK=block, REVERSE=reverse), outputs=[1], num_warps=num_warps,
                reference=lambda x, y, n: [_scan_ref(x.astype(acc), 1, reverse, lambda d: np.cumsum(d, 0))], **tol)


def case_cumsum_2d(rng, axis, reverse=False, m=45, n=27, bm=64, bn=32, num_warps=4, np_dtype=np.float32):
    x = _values(rng, (m, n), np_dtype)
    y = _poison((m, n), np_dtype)
    tol = _float_tol(np_dtype, (m, n)[axis]) if np.dtype(np_dtype).kind == "f" else dict(rtol=0, atol=0)
    return dict(kernel=cumsum_2d_kernel, grid=(1,), args=[x, y, m, n],
                constexprs=dict(BM=bm, BN=bn, AXIS=axis, REVERSE=reverse), outputs=[1], num_warps=num_warps,
                reference=lambda x, *r: [_scan_ref(x.astype(np.float64), axis, reverse,
                                                   lambda d: np.cumsum(d, 0))], **tol)


def case_cumprod_rows(rng, np_dtype=np.float32, rows=2, n=200, block=256, reverse=False, num_warps=4):
    if np_dtype == np.int32:
        x = rng.choice(np.array([-1, 1, 1, 1, 2], np.int32), (rows, n))
        ref = lambda x, *r: [_scan_ref(x, 1, reverse, lambda d: np.cumprod(d, 0, dtype=np.int32))]  # noqa: E731
        tol = dict(rtol=0, atol=0)
    else:
        x = (1 + 0.02 * rng.standard_normal((rows, n))).astype(np_dtype)
        ref = lambda x, *r: [_scan_ref(x.astype(np.float64), 1, reverse, lambda d: np.cumprod(d, 0))]  # noqa: E731
        tol = dict(rtol=2e-5, atol=1e-6) if np_dtype == np.float32 else dict(rtol=3e-3, atol=1e-3)
    y = _poison((rows, n), np_dtype)
    return dict(kernel=cumprod_rows_kernel, grid=(rows,), args=[x, y, n],
                constexprs=dict(BLOCK=block, REVERSE=reverse), outputs=[1], num_warps=num_warps, reference=ref,
                **tol)


def case_running_max(rng, axis, m=20, n=100, bm=32, bn=128, num_warps=4):
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = _poison((m, n), np.float32)
    return dict(kernel=running_max_kernel, grid=(1,), args=[x, y, m, n], constexprs=dict(BM=bm, BN=bn, AXIS=axis),
                outputs=[1], num_warps=num_warps, rtol=0, atol=0,
                reference=lambda x, *r: [_scan_ref(x, axis, False, lambda d: np.maximum.accumulate(d, 0))])


def case_linear_recurrence(rng, reverse=False, m=6, n=300, bm=8, bn=512, num_warps=4):
    a = rng.uniform(0.5, 1.0, (m, n)).astype(np.float32)
    b = rng.standard_normal((m, n)).astype(np.float32)
    h = _poison((m, n), np.float32)
    return dict(kernel=linear_recurrence_kernel, grid=(1,), args=[a, b, h, m, n],
                constexprs=dict(BM=bm, BN=bn, REVERSE=reverse), outputs=[2], num_warps=num_warps,
                reference=lambda a, b, *r: [_recurrence_ref(a, b, reverse)], rtol=1e-4, atol=1e-4)


def case_running_argmax(rng, n=700, block=1024, num_warps=4):
    x = rng.standard_normal(n).astype(np.float32)
    v, i = _poison(n, np.float32), _poison(n, np.int32)

    def ref(x, *r):
        best = np.maximum.accumulate(x)
        first = np.array([int(np.argmax(x[:t + 1])) for t in range(n)])
        return [best, first]
    return dict(kernel=running_argmax_kernel, grid=(1,), args=[x, v, i, n], constexprs=dict(BLOCK=block),
                outputs=[1, 2], num_warps=num_warps, reference=ref, rtol=0, atol=0)


def case_chunked_cumsum(rng, n=2500, block=512, num_warps=4):
    x = rng.standard_normal(n).astype(np.float32)
    y = _poison(n, np.float32)
    return dict(kernel=chunked_cumsum_kernel, grid=(1,), args=[x, y, n], constexprs=dict(BLOCK=block),
                outputs=[1], num_warps=num_warps, reference=lambda x, *r: [np.cumsum(x.astype(np.float64))],
                rtol=1e-5, atol=2e-6 * n)


def case_cumsum_transposed_flat(rng, m=3, n=50, bm=4, bn=64, num_warps=4):
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = _poison(bm * bn, np.float32)

    def ref(x, *r):
        padded = np.zeros((bm, bn))
        padded[:m, :n] = x
        return [np.cumsum(padded.T.reshape(-1))]
    return dict(kernel=cumsum_transposed_flat_kernel, grid=(1,), args=[x, y, m, n], constexprs=dict(BM=bm, BN=bn),
                outputs=[1], num_warps=num_warps, reference=ref, rtol=1e-5, atol=2e-6 * bm * bn)


def all_cases(rng):
    """Every scan case, with an id."""
    return [
        ("cumsum_1warp", case_cumsum_rows(rng, n=29, block=32, num_warps=1)),
        # rows of a multiple of 16 elements allow contiguous registers (scanned in order in the thread);
        # other lengths give one register per run (chunks carried from lane to lane or warp to warp)
        ("cumsum_1warp_2regs_in_order", case_cumsum_rows(rng, n=48, block=64, num_warps=1)),
        ("cumsum_1warp_2chunks", case_cumsum_rows(rng, n=50, block=64, num_warps=1)),
        ("cumsum_4warps", case_cumsum_rows(rng, n=100, block=128)),
        ("cumsum_4warps_many_regs", case_cumsum_rows(rng, n=1000, block=1024)),
        ("cumsum_4warps_regs_in_order_and_chunks", case_cumsum_rows(rng, n=992, block=1024)),
        ("cumsum_reverse_regs_in_order", case_cumsum_rows(rng, n=992, block=1024, reverse=True)),
        ("cumsum_8warps_chunks", case_cumsum_rows(rng, n=4000, block=4096, num_warps=8)),
        ("cumsum_replicated_lanes", case_cumsum_rows(rng, n=13, block=16, num_warps=2)),
        ("cumsum_reverse", case_cumsum_rows(rng, n=1000, block=1024, reverse=True)),
        ("cumsum_reverse_1warp", case_cumsum_rows(rng, n=60, block=64, reverse=True, num_warps=1)),
        ("cumsum_int32", case_cumsum_rows(rng, np.int32, n=700, block=1024)),
        ("cumsum_int8_widens", case_cumsum_rows(rng, np.int8, n=300, block=512)),
        ("cumsum_bool_counts", case_cumsum_rows(rng, np.bool_, n=300, block=512)),
        ("cumsum_fp16", case_cumsum_rows(rng, np.float16, n=200, block=256)),
        ("cumsum_2d_axis0", case_cumsum_2d(rng, 0)),
        ("cumsum_2d_axis1", case_cumsum_2d(rng, 1, m=30, n=60, bm=32, bn=64)),
        ("cumsum_2d_axis0_reverse", case_cumsum_2d(rng, 0, reverse=True)),
        ("cumsum_2d_axis1_reverse_8warps", case_cumsum_2d(rng, 1, reverse=True, m=10, n=200, bm=16, bn=256,
                                                          num_warps=8)),
        ("cumsum_2d_axis1_replicated_warps", case_cumsum_2d(rng, 1, m=2, n=50, bm=2, bn=64, num_warps=8)),
        ("cumsum_2d_axis0_int32", case_cumsum_2d(rng, 0, np_dtype=np.int32, m=60, n=7, bm=64, bn=8)),
        ("cumprod_fp32", case_cumprod_rows(rng)),
        ("cumprod_fp32_reverse", case_cumprod_rows(rng, reverse=True)),
        ("cumprod_int32", case_cumprod_rows(rng, np.int32, n=30, block=32, num_warps=1)),
        ("running_max_axis0", case_running_max(rng, 0)),
        ("running_max_axis1", case_running_max(rng, 1)),
        ("running_argmax_two_types", case_running_argmax(rng)),
        ("linear_recurrence", case_linear_recurrence(rng)),
        ("linear_recurrence_reverse", case_linear_recurrence(rng, reverse=True)),
        ("chunked_cumsum_in_loop", case_chunked_cumsum(rng)),
        ("cumsum_transposed_flat", case_cumsum_transposed_flat(rng)),
    ]
