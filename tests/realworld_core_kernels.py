"""Small kernels, written as Triton users write them, that reduce defects found by running public real-world
Triton kernels (issue 13's core-language part) through both paths. Each case uses the format of
`tests/feature_kernels.py` (`kernel`, `grid`, `args`, `constexprs`, `outputs`, `reference`, `rtol`, `atol`);
`tests/test_realworld_core.py` interprets and compiles them, `tests/test_gpu_realworld_core.py` runs them on the
GPU against NumPy and against Triton on this same source.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl
import transpiler.language.core as core
from feature_kernels import _poison


def _cdiv(a, b):
    return (a + b - 1) // b


# ---- a combine function that branches on its scalar arguments, reached through `tl.core` -----------------

@transpiler.jit
def _smaller(a, b):
    if a <= b:
        return a
    else:
        return b


@transpiler.jit
@core._add_scan_docstr("running_min")
def running_min(x, axis=0):
    x = core._promote_reduction_input(x)
    return core.associative_scan(x, axis, _smaller)


@transpiler.jit
def _larger_then_index(v1, i1, v2, i2):
    if v1 > v2:
        return v1, i1
    elif v1 == v2:
        return v1, tl.minimum(i1, i2)
    return v2, i2


@transpiler.jit
def running_min_3d_kernel(X, Y, ROWMAX, ROWARG, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    offsets = rows[:, None, None] * N * K + cols[None, :, None] * K + pid_k
    mask = rows[:, None, None] < M and cols[None, :, None] < N          # `and` of blocks is elementwise
    x = tl.load(X + offsets, mask=mask, other=float("inf")).to(tl.float32)
    tl.store(Y + offsets, running_min(x, axis=1), mask=mask)
    # a tuple tl.reduce whose combine_fn returns from several branches
    index = tl.broadcast_to(cols[None, :, None], (BLOCK_M, BLOCK_N, 1))
    big, arg = tl.reduce((tl.where(mask, x, -float("inf")), index), 1, _larger_then_index)
    out = rows[:, None] * K + pid_k
    outside = rows[:, None] >= M or pid_k >= K          # `or` and `not` of blocks too
    keep = not outside
    tl.store(ROWMAX + out, big, mask=keep)
    tl.store(ROWARG + out, arg, mask=keep)


def case_running_min_3d(rng, m=5, n=37, k=3, block_m=4, dtype=np.float16):
    x = rng.standard_normal((m, n, k)).astype(dtype)
    x[1, 7, :] = x[1, 20, :]                 # ties: the first index wins
    x[1, 20, :] = np.float16(9.0)
    x[2, 3, :] = x[2, 30, :] = np.float16(9.0)

    def reference(x, y, rowmax, rowarg, *_):
        xf = x.astype(np.float32)
        return [np.minimum.accumulate(xf, axis=1), xf.max(axis=1), xf.argmax(axis=1).astype(np.int32)]
    return dict(kernel=running_min_3d_kernel, grid=(_cdiv(m, block_m), k),
                args=[x, _poison((m, n, k), np.float32), _poison((m, k), np.float32), _poison((m, k), np.int32),
                      m, n, k],
                constexprs=dict(BLOCK_M=block_m, BLOCK_N=64), outputs=[1, 2, 3], reference=reference,
                rtol=0, atol=0)


# ---- `.value` of a helper's compile-time arguments (Triton wraps them in tl.constexpr) ----------------------

@transpiler.jit
def _lowest(dtype):
    dtype_ = dtype.value
    if dtype_.is_floating():
        value: tl.constexpr = float("-inf")
        return value
    if dtype_.is_int_signed():
        width: tl.constexpr = dtype_.int_bitwidth
        value: tl.constexpr = -1 * 2 ** (width - 1)
        return value
    value: tl.constexpr = 0
    return value


@transpiler.jit
def _scaled_block(x, scale):
    return x * scale.value


@transpiler.jit
def block_max_kernel(X, OUT_MAX, OUT_ARG, N, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=_lowest(X.type.element_ty))
    big, arg = tl.max(x, axis=0, return_indices=True)
    tl.store(OUT_MAX + pid, _scaled_block(big, SCALE))
    tl.store(OUT_ARG + pid, arg + pid * BLOCK)


def case_block_max(rng, dtype, n=1000, block=128):
    if np.dtype(dtype).kind == "f":
        x = (-np.abs(rng.standard_normal(n)) - 1).astype(dtype)     # all below zero: `other` must be -inf
    else:
        x = rng.integers(np.iinfo(dtype).min, 0, n).astype(dtype)
    programs = _cdiv(n, block)

    def reference(x, *_):
        padded = np.full(programs * block, x.min(), x.dtype)
        padded[:n] = x
        rows = padded.reshape(programs, block)
        return [rows.max(1) * 3, (rows.argmax(1) + np.arange(programs) * block).astype(np.int32)]
    return dict(kernel=block_max_kernel, grid=(programs,),
                args=[x, _poison(programs, dtype), _poison(programs, np.int32), n],
                constexprs=dict(SCALE=3, BLOCK=block), outputs=[1, 2], reference=reference, rtol=0, atol=0)


def all_cases(rng):
    """Every case with an id."""
    return [("running_min_3d", case_running_min_3d(rng)), ("block_max_f32", case_block_max(rng, np.float32)),
            ("block_max_i16", case_block_max(rng, np.int16))]
