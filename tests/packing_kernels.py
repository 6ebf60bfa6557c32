"""Row kernels of short rows, the shape program packing (analysis/program_packing.py) takes: several programs of
one warp per block. Triton dialect only, so `bench/twins.py` can load this file as Triton's for a second
reference. Each `*_case` gives a kernel, its NumPy arguments (outputs poisoned), the grid, constexprs, num_warps,
and `expect(args) -> {output index: (reference in float64, rtol, atol)}`.

Used by tests/test_program_packing.py (decisions, sources, PTX) and tests/test_gpu_program_packing.py (results).
"""
import numpy as np

import transpiler
import transpiler.language as tl
from gpu_sizes import rows


@transpiler.jit
def short_softmax(OUT, IN, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(IN + row * in_stride + cols, mask=valid, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(OUT + row * out_stride + cols, (e / tl.sum(e, axis=0)).to(OUT.dtype.element_ty), mask=valid)


@transpiler.jit
def short_layernorm(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < N
    x = tl.load(X + row * stride + cols, mask=valid, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    c = tl.where(valid, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=0) / N + eps)
    w = tl.load(W + cols, mask=valid, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=valid, other=0.0).to(tl.float32)
    tl.store(Y + row * stride + cols, (c * rstd * w + b).to(Y.dtype.element_ty), mask=valid)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)


@transpiler.jit
def short_cumsum(X, Y, n_cols, stride, BLOCK: tl.constexpr):
    """A scan along the row: at one warp, lanes only."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=valid, other=0.0)
    tl.store(Y + row * stride + cols, tl.cumsum(x, axis=0), mask=valid)


@transpiler.jit
def blocks_of_rows(X, OUT, FACTS, n_cols, BLOCK: tl.constexpr):
    """A 2-D grid: program_id(0) the row, program_id(1) a column block; what each program sees of the grid."""
    row = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(OUT + row * tl.num_programs(1) + part, tl.argmax(x, axis=0) + part * BLOCK)
    f = FACTS + (row * tl.num_programs(1) + part) * 2
    tl.store(f, tl.num_programs(0))
    tl.store(f + 1, row)


@transpiler.jit
def rows_until(X, OUT, n_cols, n_valid, BLOCK: tl.constexpr):
    """Programs past `n_valid` return at once: each packed program on its own, not its block."""
    row = tl.program_id(0)
    if row >= n_valid:
        return
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(OUT + row, tl.sum(x * x, axis=0))


@transpiler.jit
def mixed_widths(X, W, OUT, n_cols, BLOCK: tl.constexpr):
    """fp16 and fp32 rows of one shape: their loads anchor 8 and 4 elements a thread, two layouts."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=cols < n_cols, other=0.0)
    tl.store(OUT + row, tl.sum(x * w, axis=0))


@transpiler.jit
def rows_with_barrier(X, OUT, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.debug_barrier()
    tl.store(OUT + row, tl.sum(x, axis=0))


@transpiler.jit
def tile_row_sums(X, OUT, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    """Several rows per program already, stored from the reduction's slice layout: two layouts."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(X + rows[:, None] * n_cols + cols[None, :], mask=m, other=0.0)
    tl.store(OUT + rows, tl.sum(x, axis=1), mask=rows < n_rows)


def next_power_of_2(n):
    return 1 << (n - 1).bit_length()


def _tol(dtype):
    return (2e-3, 2e-3) if np.dtype(dtype) == np.float16 else (1e-5, 1e-6)


def _rows(rng, n_rows, n_cols, stride, dtype, scale=3.0):
    base = (scale * rng.standard_normal((n_rows, stride))).astype(dtype)
    return base


def _poisoned(shape, dtype):
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -7, dtype)


def softmax_case(rng, n_rows, n_cols, stride, dtype=np.float32, num_warps=4):
    x = _rows(rng, n_rows, n_cols, stride, dtype)
    y = _poisoned((n_rows, stride), dtype)

    def expect(args):
        v = args[1][:, :n_cols].astype(np.float64)
        e = np.exp(v - v.max(axis=1, keepdims=True))
        ref = np.full((n_rows, stride), np.nan)
        ref[:, :n_cols] = e / e.sum(axis=1, keepdims=True)
        return {0: (ref, *_tol(dtype))}
    return dict(kernel=short_softmax, args=[y, x, stride, stride, n_cols], grid=(n_rows,),
                constexprs=dict(BLOCK=next_power_of_2(n_cols)), num_warps=num_warps, expect=expect)


def layernorm_case(rng, n_rows, n_cols, stride, dtype=np.float16, num_warps=4, eps=1e-5):
    x = _rows(rng, n_rows, n_cols, stride, dtype, 1.0)
    w = (1 + 0.5 * rng.standard_normal(n_cols)).astype(dtype)
    b = (0.5 * rng.standard_normal(n_cols)).astype(dtype)
    y = _poisoned((n_rows, stride), dtype)
    mean, rstd = _poisoned(n_rows, np.float32), _poisoned(n_rows, np.float32)

    def expect(args):
        v = args[0][:, :n_cols].astype(np.float64)
        mu = v.mean(axis=1)
        r = 1 / np.sqrt(((v - mu[:, None]) ** 2).mean(axis=1) + eps)
        ref = np.full((n_rows, stride), np.nan)
        ref[:, :n_cols] = (v - mu[:, None]) * r[:, None] * w.astype(np.float64) + b.astype(np.float64)
        rtol, atol = _tol(dtype)
        return {1: (ref, rtol, 4 * atol), 4: (mu, 1e-5, 1e-5), 5: (r, 1e-4, 1e-5)}
    return dict(kernel=short_layernorm, args=[x, y, w, b, mean, rstd, stride, n_cols, eps], grid=(n_rows,),
                constexprs=dict(BLOCK=next_power_of_2(n_cols)), num_warps=num_warps, expect=expect)


def cumsum_case(rng, n_rows, n_cols, stride, num_warps=4):
    x = _rows(rng, n_rows, n_cols, stride, np.float32, 1.0)
    y = _poisoned((n_rows, stride), np.float32)

    def expect(args):
        ref = np.full((n_rows, stride), np.nan)
        ref[:, :n_cols] = np.cumsum(args[0][:, :n_cols].astype(np.float64), axis=1)
        return {1: (ref, 1e-5, 1e-4)}
    return dict(kernel=short_cumsum, args=[x, y, n_cols, stride], grid=(n_rows,),
                constexprs=dict(BLOCK=next_power_of_2(n_cols)), num_warps=num_warps, expect=expect)


def blocks_of_rows_case(rng, n_rows, n_cols, block=128, num_warps=4):
    x = rng.permuted(np.tile(np.arange(n_cols, dtype=np.float32), (n_rows, 1)), axis=1)
    parts = -(-n_cols // block)
    out, facts = _poisoned((n_rows, parts), np.int32), _poisoned((n_rows, parts, 2), np.int32)

    def expect(args):
        v = np.full((n_rows, parts * block), -np.inf)
        v[:, :n_cols] = args[0]
        ref = v.reshape(n_rows, parts, block).argmax(axis=2) + np.arange(parts) * block
        want = np.zeros((n_rows, parts, 2))
        want[..., 0] = n_rows
        want[..., 1] = np.arange(n_rows)[:, None]
        return {1: (ref.astype(np.float64), 0, 0), 2: (want, 0, 0)}
    return dict(kernel=blocks_of_rows, args=[x, out, facts, n_cols], grid=(n_rows, parts),
                constexprs=dict(BLOCK=block), num_warps=num_warps, expect=expect)


def rows_until_case(rng, n_rows, n_cols, n_valid, num_warps=4):
    x = _rows(rng, n_rows, n_cols, n_cols, np.float32, 1.0)
    out = _poisoned(n_rows, np.float32)

    def expect(args):
        ref = np.full(n_rows, np.nan)
        ref[:n_valid] = (args[0][:n_valid].astype(np.float64) ** 2).sum(axis=1)
        return {1: (ref, 1e-5, 1e-5)}
    return dict(kernel=rows_until, args=[x, out, n_cols, n_valid], grid=(n_rows,),
                constexprs=dict(BLOCK=next_power_of_2(n_cols)), num_warps=num_warps, expect=expect)


def packed_cases(rng):
    """(name, case) of every GPU check: ragged rows, odd and 4k strides, row counts not a multiple of 4 (fewer
    under TRANSPILER_TEST_SIZES=small: `gpu_sizes.rows`)."""
    return [
        ("softmax_fp32_ragged_odd_stride", softmax_case(rng, rows(4097), 500, 503)),
        ("softmax_fp16_many_rows", softmax_case(rng, rows(50001), 1000, 1024, np.float16)),
        ("softmax_fp16_short_8_warps", softmax_case(rng, rows(3003), 130, 136, np.float16, num_warps=8)),
        ("softmax_fp32_one_row", softmax_case(rng, 1, 77, 77)),
        ("softmax_fp32_stride_4k", softmax_case(rng, rows(1029), 509, 4092)),
        ("layernorm_fp16_ragged", layernorm_case(rng, rows(4099), 250, 256)),
        ("layernorm_fp32_stride_104", layernorm_case(rng, rows(3001), 100, 104, np.float32)),
        ("cumsum_fp32_ragged", cumsum_case(rng, rows(2005), 250, 257)),
        ("blocks_of_rows_2d_grid", blocks_of_rows_case(rng, rows(1001), 300)),
        ("rows_until_some", rows_until_case(rng, rows(1003), 200, 701)),
    ]


def check(case, outputs):
    for index, (ref, rtol, atol) in case["expect"](case["args"]).items():
        got = np.asarray(outputs[index]).astype(np.float64)
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"output {index} of {case['kernel'].__name__}")
