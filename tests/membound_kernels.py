"""Kernels of the memory-bound mechanisms (row loop, divisibility keys), with NumPy float64 references.

Each case: a kernel, its arguments (NumPy; outputs poisoned with NaN or -7), grid, constexprs, num_warps, and
`expect(args) -> {output index: (reference, rtol, atol)}`. Used by tests/test_row_loop.py (decisions, sources,
NVRTC) and tests/test_gpu_membound.py (results on a GPU).
"""
import numpy as np

import transpiler
import transpiler.language as tl
from example_specs import example_module
from gpu_sizes import rows

row_softmax = example_module("softmax").softmax_kernel      # examples/softmax.py: one row per program


@transpiler.jit
def row_norm(X, Y, W, Mean, x_stride, y_stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < N
    x = tl.load(X + row * x_stride + cols, mask=valid, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    c = tl.where(valid, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=0) / N + eps)
    w = tl.load(W + cols, mask=valid).to(tl.float32)
    tl.store(Y + row * y_stride + cols, c * rstd * w, mask=valid)
    tl.store(Mean + row, mean)


@transpiler.jit
def row_argmax(X, OUT, n_cols, x_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * x_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(OUT + row, tl.argmax(x, axis=0))


@transpiler.jit
def grid_facts(X, OUT, FACTS, n_cols, BLOCK: tl.constexpr):
    """Row sums on a 2-D grid, recording what each program sees of the grid (the fold must keep it)."""
    row = tl.program_id(0)
    col_block = tl.program_id(1)
    cols = col_block * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(OUT + row * tl.num_programs(1) + col_block, tl.sum(x, axis=0))
    f = FACTS + (row * tl.num_programs(1) + col_block) * 3
    tl.store(f, tl.num_programs(0))
    tl.store(f + 1, row)
    tl.store(f + 2, col_block)


@transpiler.jit
def early_return_rows(X, OUT, n_cols, BLOCK: tl.constexpr):
    """Every third row returns before storing: in a row loop that must skip to the next row, not end it."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    if row % 3 == 0:
        return
    tl.store(OUT + row, tl.max(x, axis=0))


@transpiler.jit
def histogram_rows(X, HIST, n_cols, BLOCK: tl.constexpr):
    """Atomics: programs depend on each other's updates, so the compiler must not fold them."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0)
    tl.atomic_add(HIST + row % 4, tl.sum(x, axis=0))


@transpiler.jit
def plain_copy(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


@transpiler.jit
def scaled_row_sums(X, S, OUT, n_cols, BLOCK: tl.constexpr):
    """A scalar load per row (no mask) beside the row's block: both run a row ahead."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    scale = tl.load(S + row)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(OUT + row, tl.sum(x, axis=0) * scale)


@transpiler.jit
def chunked_row_max(X, OUT, n_cols, BLOCK: tl.constexpr):
    """A program with its own loop over the row: left one row per program."""
    row = tl.program_id(0)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.max(tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")), 0))
    tl.store(OUT + row, m)


@transpiler.jit
def store_then_load(X, Y, n_cols, BLOCK: tl.constexpr):
    """The second load reads what this program stored: only the first may run a row ahead."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(X + row * n_cols + cols, mask=m, other=0.0)
    tl.store(Y + row * n_cols + cols, x * 2.0, mask=m)
    y = tl.load(Y + row * n_cols + cols, mask=m, other=0.0)
    tl.store(Y + row * n_cols + cols, y + tl.sum(x, axis=0), mask=m)


def _rows(rng, n_rows, n_cols, stride, dtype):
    """A [n_rows, n_cols] view with row stride `stride` (elements) over random data."""
    base = rng.standard_normal((n_rows, stride)).astype(dtype)
    return base, base[:, :n_cols]


def _poisoned(shape, dtype):
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -7, dtype)


def _tol(dtype):
    return {np.float32: (2e-5, 1e-6), np.float16: (1e-2, 1e-3)}[dtype]


def softmax_case(rng, n_rows, n_cols, stride, dtype=np.float32, num_warps=4):
    block = transpiler.next_power_of_2(n_cols)
    base, x = _rows(rng, n_rows, n_cols, stride, dtype)
    out = _poisoned((n_rows, stride), dtype)

    def expect(args):
        v = x.astype(np.float64)
        e = np.exp(v - v.max(axis=1, keepdims=True))
        ref = out.copy().astype(np.float64)
        ref[:, :n_cols] = e / e.sum(axis=1, keepdims=True)
        return {0: (ref, *_tol(dtype))}
    return dict(kernel=row_softmax, args=[out, base, stride, stride, n_cols], grid=(n_rows,),
                constexprs=dict(BLOCK=block), num_warps=num_warps, expect=expect)


def norm_case(rng, n_rows, n_cols, stride, dtype=np.float32, num_warps=4):
    block = transpiler.next_power_of_2(n_cols)
    base, x = _rows(rng, n_rows, n_cols, stride, dtype)
    w = rng.standard_normal(n_cols).astype(dtype)
    y, mean = _poisoned((n_rows, stride), dtype), _poisoned(n_rows, np.float32)

    def expect(args):
        v = x.astype(np.float64)
        mu = v.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt(((v - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
        ref = y.copy().astype(np.float64)
        ref[:, :n_cols] = (v - mu) * rstd * w.astype(np.float64)
        return {1: (ref, *_tol(dtype)), 3: (mu[:, 0], 1e-4, 1e-5)}
    return dict(kernel=row_norm, args=[base, y, w, mean, stride, stride, n_cols, 1e-5], grid=(n_rows,),
                constexprs=dict(BLOCK=block), num_warps=num_warps, expect=expect)


def argmax_case(rng, n_rows, n_cols, stride, dtype=np.float32, num_warps=4):
    block = transpiler.next_power_of_2(n_cols)
    base, x = _rows(rng, n_rows, n_cols, stride, dtype)
    out = _poisoned(n_rows, np.int32)

    def expect(args):
        return {1: (np.argmax(x, axis=1).astype(np.int32), 0, 0)}
    return dict(kernel=row_argmax, args=[base, out, n_cols, stride], grid=(n_rows,), constexprs=dict(BLOCK=block),
                num_warps=num_warps, expect=expect)


def grid_facts_case(rng, n_rows, n_cols, block=128):
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    n_blocks = -(-n_cols // block)
    out, facts = _poisoned((n_rows, n_blocks), np.float32), _poisoned((n_rows, n_blocks, 3), np.int32)

    def expect(args):
        pad = np.zeros((n_rows, n_blocks * block))
        pad[:, :n_cols] = x
        sums = pad.reshape(n_rows, n_blocks, block).sum(axis=2)
        rows, blocks = np.meshgrid(np.arange(n_rows), np.arange(n_blocks), indexing="ij")
        ref = np.stack([np.full_like(rows, n_rows), rows, blocks], axis=2).astype(np.int32)
        return {1: (sums, 1e-5, 1e-4), 2: (ref, 0, 0)}
    return dict(kernel=grid_facts, args=[x, out, facts, n_cols], grid=(n_rows, n_blocks),
                constexprs=dict(BLOCK=block), num_warps=4, expect=expect)


def early_return_case(rng, n_rows, n_cols):
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    out = _poisoned(n_rows, np.float32)

    def expect(args):
        ref = x.max(axis=1).astype(np.float64)
        ref[::3] = np.nan                     # untouched: still the poison
        return {1: (ref, 0, 0)}
    return dict(kernel=early_return_rows, args=[x, out, n_cols], grid=(n_rows,),
                constexprs=dict(BLOCK=transpiler.next_power_of_2(n_cols)), num_warps=4, expect=expect)


def scaled_sums_case(rng, n_rows, n_cols):
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    scale = rng.standard_normal(n_rows).astype(np.float32)
    out = _poisoned(n_rows, np.float32)

    def expect(args):
        return {2: (x.astype(np.float64).sum(axis=1) * scale, 1e-5, 1e-4)}
    return dict(kernel=scaled_row_sums, args=[x, scale, out, n_cols], grid=(n_rows,),
                constexprs=dict(BLOCK=transpiler.next_power_of_2(n_cols)), num_warps=4, expect=expect)


def store_then_load_case(rng, n_rows, n_cols):
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    y = _poisoned((n_rows, n_cols), np.float32)

    def expect(args):
        v = x.astype(np.float64)
        return {1: (2 * v + v.sum(axis=1, keepdims=True), 1e-5, 1e-4)}
    return dict(kernel=store_then_load, args=[x, y, n_cols], grid=(n_rows,),
                constexprs=dict(BLOCK=transpiler.next_power_of_2(n_cols)), num_warps=4, expect=expect)


def all_cases(rng):
    """(name, case) of every GPU check: ragged columns, odd and 4k strides, row counts over several waves (fewer
    under TRANSPILER_TEST_SIZES=small: `gpu_sizes.rows`)."""
    return [
        ("softmax_fp32_ragged_odd_stride", softmax_case(rng, rows(3001), 1000, 1003)),
        ("softmax_fp32_stride_4k", softmax_case(rng, rows(5000), 4090, 4092, num_warps=8)),
        ("softmax_fp16_many_rows", softmax_case(rng, rows(40000), 509, 516, np.float16)),
        ("softmax_fp16_long_rows", softmax_case(rng, rows(1500), 8190, 8192, np.float16, num_warps=16)),
        ("softmax_one_row", softmax_case(rng, 1, 300, 301)),
        ("norm_fp32_ragged", norm_case(rng, rows(4099), 777, 781)),
        ("norm_fp16_stride_8k", norm_case(rng, rows(9000), 1000, 1000, np.float16)),
        ("argmax_fp32_many_rows", argmax_case(rng, rows(33333), 257, 260)),
        ("argmax_fp16_odd_stride", argmax_case(rng, rows(7001), 1023, 1029, np.float16)),
        ("grid_facts_2d_grid", grid_facts_case(rng, rows(3000), 300)),
        ("early_return_every_third_row", early_return_case(rng, rows(5003), 200)),
        ("store_then_load_same_row", store_then_load_case(rng, rows(4001), 333)),
        ("scalar_and_block_loads_ahead", scaled_sums_case(rng, rows(6007), 300)),
        # 16 bytes a thread as launched: run on half the warps (analysis/program_warps.py)
        ("softmax_fp16_4k_on_fewer_warps", softmax_case(rng, rows(1201), 4093, 4104, np.float16, num_warps=16)),
        ("norm_fp16_2k_on_fewer_warps", norm_case(rng, rows(2049), 2000, 2008, np.float16, num_warps=8)),
        ("argmax_fp16_4k_on_fewer_warps", argmax_case(rng, rows(1999), 4000, 4003, np.float16, num_warps=16)),
    ]


def check(case, outputs):
    for index, (ref, rtol, atol) in case["expect"](case["args"]).items():
        got = np.asarray(outputs[index]).astype(np.float64)
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"output {index} of {case['kernel'].__name__}")


def fresh(case):
    """The case with a new Kernel object for its function: launchers are kept per specialization, not per
    compile option, so a test that changes a switch needs a kernel that has not launched yet."""
    return dict(case, kernel=transpiler.jit(case["kernel"].fn))


def run_on_gpu(case):
    """Launch the case on the GPU (CuPy arrays made from its NumPy arguments); its arguments, back on the host."""
    import cupy
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"][case["grid"]](*dev, num_warps=case["num_warps"], **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    return [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in dev]


@transpiler.jit
def tile_norm(X, Y, W, B, n_rows, N, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Layernorm of ROWS rows a program as one 2-D tile: masks made of broadcast 1-D compares (the bias's, written
    in another order, first made in the tail), the weights a row broadcast over the tile, rstd a column: a tail
    in a 2-D layout reading values made in 1-D ones."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    w = tl.load(W + cols, mask=cols < N).to(tl.float32)
    valid = (rows[:, None] < n_rows) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(X + offs, mask=valid, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / N
    c = tl.where(valid, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=1) / N + 1e-5)
    b = tl.load(B + offs, mask=(cols[None, :] < N) & (rows[:, None] < n_rows)).to(tl.float32)
    tl.store(Y + offs, c * rstd[:, None] * w[None, :] + b, mask=valid)


def tile_norm_case(rng, n_rows, n_cols, rows_per_program=4, dtype=np.float16, num_warps=8):
    block = transpiler.next_power_of_2(n_cols)
    x = (0.5 + 2 * rng.standard_normal((n_rows, n_cols))).astype(dtype)
    w = (1 + 0.5 * rng.standard_normal(n_cols)).astype(dtype)
    b = (0.5 * rng.standard_normal((n_rows, n_cols))).astype(dtype)
    y = _poisoned((n_rows, n_cols), dtype)

    def expect(args):
        v = x.astype(np.float64)
        mu = v.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt(((v - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
        return {1: ((v - mu) * rstd * w.astype(np.float64) + b.astype(np.float64), *_tol(dtype))}
    return dict(kernel=tile_norm, args=[x, y, w, b, n_rows, n_cols], grid=(-(-n_rows // rows_per_program),),
                constexprs=dict(ROWS=rows_per_program, BLOCK=block), num_warps=num_warps, expect=expect)
