"""Kernels written the way Triton users write them (not shaped around this compiler), with NumPy references.

Each is a small, commonly seen kernel: normalisations, activations, rotary embeddings, a vocabulary-looping
cross-entropy, row-wise int8 quantization, 2-D grids, unrolled loops, the math and integer operators users
reach for, shape idioms, `while` loops, early returns and helpers returning tuples. Cases use the format of
`tests/feature_kernels.py` (`kernel`, `grid`, `args`, `constexprs`, `outputs`, `reference`, `rtol`, `atol`),
so the compile, interpreter and GPU tests share them.
"""
from __future__ import annotations

import math

import numpy as np

import transpiler
import transpiler.language as tl
from transpiler.language.extra import libdevice
from feature_kernels import _poison
from feature_kernels import check as check_values
from realworld_kernels import realworld_cases

# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def rmsnorm_fwd_kernel(X, W, Y, RSTD, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / N
    rstd = tl.math.rsqrt(var + eps)
    tl.store(RSTD + row, rstd)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    y = x * rstd * w
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


@transpiler.jit
def _tanh(x):
    return 2 * tl.sigmoid(2 * x) - 1


@transpiler.jit
def gelu_kernel(X, Y, N, APPROX: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask).to(tl.float32)
    if APPROX == "tanh":
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (1.0 + libdevice.tanh(inner))
    elif APPROX == "sigmoid_tanh":
        y = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    else:
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


@transpiler.jit
def swiglu_kernel(A, B, C, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    A += row * stride
    B += row * stride
    C += row * stride
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        a = tl.load(A + cols, mask=m, other=0).to(tl.float32)
        b = tl.load(B + cols, mask=m, other=0)
        silu = a * tl.sigmoid(a)
        c = silu.to(b.dtype) * b
        tl.store(C + cols, c, mask=m)


@transpiler.jit
def rope_kernel(X, COS, SIN, OUT, seq_len, stride_xt, stride_xh, stride_ct, HEAD_DIM: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    HALF: tl.constexpr = HEAD_DIM // 2
    d = tl.arange(0, HALF)
    base = X + t * stride_xt + h * stride_xh
    x1 = tl.load(base + d)
    x2 = tl.load(base + HALF + d)
    cos = tl.load(COS + t * stride_ct + d)
    sin = tl.load(SIN + t * stride_ct + d)
    out = OUT + t * stride_xt + h * stride_xh
    tl.store(out + d, x1 * cos - x2 * sin)
    tl.store(out + HALF + d, x2 * cos + x1 * sin)


@transpiler.jit
def cross_entropy_fwd_kernel(LOGITS, TARGETS, LOSS, stride, n_vocab, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    LOGITS += row * stride
    target = tl.load(TARGETS + row)
    if target == ignore_index:
        tl.store(LOSS + row, 0.0)
        return
    m = float("-inf")
    s = 0.0
    for start in range(0, n_vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(LOGITS + cols, mask=cols < n_vocab, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    x_t = tl.load(LOGITS + target).to(tl.float32)
    tl.store(LOSS + row, tl.log(s) + m - x_t)


@transpiler.jit
def add_layernorm_kernel(X, RES, W, B, Y, RES_OUT, MEAN, RSTD, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    offs = row * stride + cols
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    x += tl.load(RES + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(RES_OUT + offs, x, mask=mask)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + offs, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


@transpiler.jit
def quantize_int8_rowwise_kernel(X, Q, SCALE, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x)), 1e-8)
    scale = absmax / 127.0
    q = libdevice.rint(x / scale)
    q = tl.clamp(q, -127.0, 127.0)
    tl.store(Q + row * N + cols, q.to(tl.int8), mask=mask)
    tl.store(SCALE + row, scale)


@transpiler.jit
def grid2d_scale_kernel(X, Y, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    num_n = tl.num_programs(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm.to(tl.int64)[:, None] * stride_m + rn[None, :]
    x = tl.load(X + offs, mask=mask)
    y = x * (pid_n + 1) + num_n * tl.num_programs(0)
    tl.store(Y + offs, y, mask=mask)


@transpiler.jit
def persistent_copy_kernel(X, Y, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK)
    for tile in range(pid, n_tiles, tl.num_programs(0)):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        m = offs < N
        tl.store(Y + offs, tl.load(X + offs, mask=m) * 2.0, mask=m)


@transpiler.jit
def poly_unrolled_kernel(X, Y, N, DEGREE: tl.constexpr, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in tl.static_range(DEGREE, -1, -1):
        acc = acc * x + (k + 1) * 0.25
    if ACT == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACT == "leaky":
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    tl.store(Y + offs, acc, mask=m)


@transpiler.jit
def float_math_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1.0)
    ax = tl.abs(x) + 0.5
    base = OUT + offs * 12
    tl.store(base + 0, tl.exp2(x) * tl.log2(ax), mask=m)
    tl.store(base + 1, tl.math.rsqrt(ax) + tl.math.exp(x * 0.5), mask=m)
    tl.store(base + 2, tl.fma(x, x, -1.0), mask=m)
    tl.store(base + 3, tl.clamp(x, -1.0, 1.0) + tl.sigmoid(x), mask=m)
    tl.store(base + 4, tl.erf(x) + tl.math.floor(x) - tl.math.ceil(x), mask=m)
    tl.store(base + 5, libdevice.pow(ax, 1.5) + libdevice.log1p(ax) + libdevice.expm1(x * 0.25), mask=m)
    tl.store(base + 6, libdevice.tanh(x) + libdevice.atan2(x, ax) + libdevice.sinh(x * 0.5), mask=m)
    tl.store(base + 7, tl.where(x > 0, 1.0, -1.0) * tl.where(x > 1.5, x, 0), mask=m)
    tl.store(base + 8, libdevice.trunc(x * 3.0) + libdevice.round(x * 3.0), mask=m)
    tl.store(base + 9, tl.maximum(x, 0.25) - tl.minimum(x, -0.25), mask=m)
    tl.store(base + 10, x / ax + tl.math.div_rn(x, ax), mask=m)
    tl.store(base + 11, libdevice.fast_expf(x) + libdevice.rsqrt(ax) + libdevice.exp(x), mask=m)


@transpiler.jit
def nan_minmax_kernel(X, Y, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m)
    base = OUT + offs * 4
    tl.store(base + 0, tl.minimum(x, y), mask=m)
    tl.store(base + 1, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=m)
    tl.store(base + 2, tl.where(x != x, -1.0, x), mask=m)
    tl.store(base + 3, tl.clamp(x, -0.5, y, propagate_nan=tl.PropagateNan.ALL), mask=m)


@transpiler.jit
def int_semantics_kernel(A, B, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=1)
    b = tl.load(B + offs, mask=m, other=1)
    base = OUT + offs * 12
    tl.store(base + 0, a // b, mask=m)                    # truncates toward zero, as in C
    tl.store(base + 1, a % b, mask=m)                     # sign of the dividend, as in C
    tl.store(base + 2, a // 4 + a % 4, mask=m)
    tl.store(base + 3, tl.abs(a) + (a >> 3) + (a.to(tl.uint32) >> 29).to(tl.int32), mask=m)
    tl.store(base + 4, (a << 4) ^ (~b) | (a & 0xF0), mask=m)
    tl.store(base + 5, ((a > 0) & (b > 0)).to(tl.int32) + ((a < -5) | (a == b)).to(tl.int32) * 2, mask=m)
    tl.store(base + 6, tl.where(a < 0, 0, a) + tl.cdiv(a, 7), mask=m)
    tl.store(base + 7, a.to(tl.int8).to(tl.int32), mask=m)  # wraps (keeps the low byte)
    tl.store(base + 8, tl.minimum(a, b) * tl.maximum(a, b), mask=m)
    tl.store(base + 9, (a.to(tl.float32) * 0.37).to(tl.int32), mask=m)  # float -> int truncates
    tl.store(base + 10, (a.to(tl.int64) * 3000000).to(tl.int32), mask=m)
    tl.store(base + 11, -a % 5 + (-a) // 5, mask=m)


@transpiler.jit
def shapes_kernel(X, OUT_T, OUT_OUTER, OUT_FLAT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    tl.store(OUT_T + rn[:, None] * M + rm[None, :], x.T, mask=(rn[:, None] < N) & (rm[None, :] < M))
    col_sum = tl.sum(x, axis=0)
    row_sum = tl.sum(x, axis=1)
    outer = row_sum[:, None] * col_sum[None, :]
    tl.store(OUT_OUTER + rm[:, None] * BN + rn[None, :], outer)
    flat = tl.ravel(tl.reshape(x, (BM * BN // 2, 2)))
    tl.store(OUT_FLAT + tl.arange(0, BM * BN), flat)


@transpiler.jit
def doubling_while_kernel(X, STEPS, N, limit):
    pid = tl.program_id(0)
    if pid < N:
        v = tl.load(X + pid)
        steps = 0
        while v < limit:
            v = v * 2.0
            steps += 1
        tl.store(STEPS + pid, steps)


@transpiler.jit
def _stats(x, N: tl.constexpr):
    mean = tl.sum(x, axis=0) / N
    d = x - mean
    return mean, tl.sum(d * d, axis=0) / N


@transpiler.jit
def _affine(x, scale=1.0, shift=0.0):
    return x * scale + shift


@transpiler.jit
def helpers_kernel(X, OUT, STATS, MODE, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(X + row * BLOCK + tl.arange(0, BLOCK))
    mean, var = _stats(x, BLOCK)
    if MODE > 0:
        if var > 1.0:
            y = _affine(x, shift=-mean)
        else:
            y = _affine(x, scale=2.0)
    else:
        y = _affine(shift=1.0, x=x)
    tl.store(OUT + row * BLOCK + tl.arange(0, BLOCK), y)
    tl.store(STATS + row * 2, mean)
    tl.store(STATS + row * 2 + 1, var)


@transpiler.jit
def swizzle_copy_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    pid_m, pid_n = tl.swizzle2d(pid // grid_n, pid % grid_n, grid_m, grid_n, GROUP)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    tl.store(Y + offs, tl.load(X + offs, mask=mask) + pid, mask=mask)


@transpiler.jit
def softmax_kernel(X, SOFT, SOFT_T, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * BLOCK + cols)
    tl.store(SOFT + row * BLOCK + cols, tl.softmax(x))
    rows = tl.arange(0, 4)
    tile = tl.load(X + rows[:, None] * BLOCK + cols[None, :])
    tl.store(SOFT_T + rows[:, None] * BLOCK + cols[None, :], tile.softmax(dim=1, keep_dims=True))


@transpiler.jit
def join_split_kernel(X, Y, JOINED, FIRST, SECOND, INTERLEAVED, CAT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    joined = tl.join(x, y)
    tl.store(JOINED + offs[:, None] * 2 + tl.arange(0, 2)[None, :], joined)
    a, b = tl.split(tl.join(y, x))
    tl.store(FIRST + offs, a)
    tl.store(SECOND + offs, b)
    tl.store(INTERLEAVED + tl.arange(0, 2 * BLOCK), tl.interleave(x, y))
    tl.store(CAT + tl.arange(0, 2 * BLOCK), tl.cat(x, y, can_reorder=True))


@transpiler.jit
def flip_kernel(X, FLIP_ROWS, FLIP_COLS, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    offs = rm[:, None] * BN + rn[None, :]
    x = tl.load(X + offs)
    tl.store(FLIP_ROWS + offs, tl.flip(x, 0))
    tl.store(FLIP_COLS + offs, x.flip())


@transpiler.jit
def _inner(x):
    return x * 2, x + 1


@transpiler.jit
def _outer(x):
    a, b = _inner(x)
    return a - b


@transpiler.jit
def early_exit_kernel(X, Y, N, BLOCK: tl.constexpr = 64):
    pid = tl.program_id(0)
    if pid * BLOCK >= N:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.assume(N > 0)
    tl.device_assert(offs >= 0, "offsets are non-negative")
    x = tl.load(pointer=X + offs, mask=offs < N, other=0.0)
    tl.store(Y + offs, _outer(x), offs < N)


@transpiler.jit
def returns_kernel(X, N, GUARD: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if GUARD:
        if pid >= N: return                              # noqa: E701  (one-line early exit)
        tl.store(X + offs, tl.load(X + offs) * 10)
    if pid == 0:
        tl.store(X + offs, -1.0)
        return
    elif pid == 1:
        return
    else:
        x = tl.load(X + offs)
    tl.store(X + offs, x + 1)


@transpiler.jit
def optional_affine_kernel(X, W, B, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    y = tl.load(X + row * N + cols, mask=mask, other=0.0)
    if W is not None:
        y = y * tl.load(W + cols, mask=mask)
    if B is not None:
        y = y + tl.load(B + cols, mask=mask)
    tl.store(Y + row * N + cols, y, mask=mask)


@transpiler.jit
def store_casts_kernel(X, Y16, POSITIVE, RTZ16, RTZ_BF16_BITS, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(Y16 + offs, x, mask=m)                    # fp32 stored through an fp16 pointer: rounds to nearest
    tl.store(POSITIVE + offs, x > 0, mask=m)           # int1 stored through an int8 pointer
    tl.store(RTZ16 + offs, x.to(tl.float16, fp_downcast_rounding="rtz"), mask=m)
    bf = x.to(tl.bfloat16, fp_downcast_rounding="rtz")
    tl.store(RTZ_BF16_BITS + offs, bf.to(tl.int16, bitcast=True), mask=m)


@transpiler.jit
def grid3d_kernel(X, Y, BLOCK: tl.constexpr):
    b = tl.program_id(2)
    h = tl.program_id(1)
    i = tl.program_id(0)
    base = ((b * tl.num_programs(1) + h) * tl.num_programs(0) + i) * BLOCK
    offs = base + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs) + b * 100 + h * 10 + i)


@transpiler.jit
def hash_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    h = tl.load(X + offs, mask=m).to(tl.uint32)
    h = h * 0x9E3779B1
    h ^= h >> 16
    h = tl.umulhi(h, 0x85EBCA6B) + (h << 3)
    tl.store(Y + offs, h, mask=m)


@transpiler.jit
def tile_reduce_kernel(X, OUT, BM: tl.constexpr, BN: tl.constexpr):
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    rm = tl.arange(0, BM).to(tl.int64)
    rn = tl.arange(0, BN)
    for k in tl.range(1, 4, num_stages=2):
        acc += tl.load(X + rm[:, None] * BN + rn[None, :]) * k
    mx, idx = tl.max(acc, axis=1, return_indices=True)
    s = tl.sum(acc, axis=1, dtype=tl.float32, keep_dims=True)
    tl.store(OUT + rm, mx + idx.to(tl.float32) + tl.reshape(s, (BM,)))


@transpiler.jit
def libdevice_kernel(X, Y, Z, OUT, N, FN: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.5)
    if ARITY == 1:
        r = FN(x)
    elif ARITY == 2:
        r = FN(x, tl.load(Y + offs, mask=m, other=0.5))
    else:
        r = FN(x, tl.load(Y + offs, mask=m, other=0.5), tl.load(Z + offs, mask=m, other=0.5))
    tl.store(OUT + offs, r, mask=m)


@transpiler.jit
def print_kernel(X, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    tl.device_print("x", x)
    tl.device_print("pid ", tl.program_id(0))


# ---------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------

_TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-5), np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2)}


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def case_rmsnorm(rng, dtype=np.float16, m=37, n=1000):
    x = rng.standard_normal((m, n)).astype(dtype)
    w = (rng.standard_normal(n) * 0.5 + 1).astype(dtype)
    y, rstd = _poison((m, n), dtype), _poison(m, np.float32)
    eps = 1e-6

    def ref(x, w, y, rstd, *rest):
        r = 1 / np.sqrt((_f64(x) ** 2).mean(1) + eps)
        return [_f64(x) * r[:, None] * _f64(w), r]
    return dict(kernel=rmsnorm_fwd_kernel, grid=(m,), args=[x, w, y, rstd, n, n, n, eps],
                constexprs=dict(BLOCK_N=1024), outputs=[2, 3], reference=ref, **_TOL[np.dtype(dtype)])


def case_gelu(rng, approx, dtype=np.float32, n=3001):
    x = (rng.standard_normal(n) * 3).astype(dtype)
    y = _poison(n, dtype)

    def ref(x, *rest):
        x = _f64(x)
        if approx == "erf":
            return [0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))]
        return [0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))]
    return dict(kernel=gelu_kernel, grid=(transpiler.cdiv(n, 512),), args=[x, y, n],
                constexprs=dict(APPROX=approx, BLOCK=512), outputs=[1], reference=ref, **_TOL[np.dtype(dtype)])


def case_swiglu(rng, m=9, n=1500):
    a = rng.standard_normal((m, n)).astype(np.float16)
    b = rng.standard_normal((m, n)).astype(np.float16)
    c = _poison((m, n), np.float16)
    ref = lambda a, b, *rest: [_f64(a) / (1 + np.exp(-_f64(a))) * _f64(b)]  # noqa: E731
    return dict(kernel=swiglu_kernel, grid=(m,), args=[a, b, c, n, n], constexprs=dict(BLOCK=256), outputs=[2],
                reference=ref, rtol=1e-2, atol=1e-2)


def case_rope(rng, t=17, h=3, d=64):
    x = rng.standard_normal((t, h, d)).astype(np.float32)
    ang = np.arange(t)[:, None] * (10000.0 ** (-np.arange(d // 2) * 2 / d))[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    out = _poison((t, h, d), np.float32)

    def ref(x, cos, sin, *rest):
        x1, x2 = _f64(x[..., :d // 2]), _f64(x[..., d // 2:])
        c, s = _f64(cos)[:, None, :], _f64(sin)[:, None, :]
        return [np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)]
    return dict(kernel=rope_kernel, grid=(t, h), args=[x, cos, sin, out, t, h * d, d, d // 2],
                constexprs=dict(HEAD_DIM=d), outputs=[3], reference=ref, rtol=1e-5, atol=1e-5)


def case_cross_entropy(rng, rows=11, vocab=3000):
    logits = (rng.standard_normal((rows, vocab)) * 4).astype(np.float32)
    targets = rng.integers(0, vocab, rows).astype(np.int64)
    targets[3] = -100
    loss = _poison(rows, np.float32)

    def ref(logits, targets, *rest):
        x = _f64(logits)
        mx = x.max(1)
        lse = np.log(np.exp(x - mx[:, None]).sum(1)) + mx
        out = lse - x[np.arange(rows), np.clip(targets, 0, None)]
        return [np.where(targets == -100, 0.0, out)]
    return dict(kernel=cross_entropy_fwd_kernel, grid=(rows,), args=[logits, targets, loss, vocab, vocab, -100],
                constexprs=dict(BLOCK=1024), outputs=[2], reference=ref, rtol=1e-5, atol=1e-4)


def case_add_layernorm(rng, m=23, n=700):
    x = rng.standard_normal((m, n)).astype(np.float16)
    res = rng.standard_normal((m, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    y, res_out = _poison((m, n), np.float16), _poison((m, n), np.float32)
    mean, rstd = _poison(m, np.float32), _poison(m, np.float32)
    eps = 1e-5

    def ref(x, res, w, b, *rest):
        s = _f64(x) + _f64(res)
        mu = s.mean(1)
        r = 1 / np.sqrt(((s - mu[:, None]) ** 2).mean(1) + eps)
        return [(s - mu[:, None]) * r[:, None] * w + b, s, mu, r]
    return dict(kernel=add_layernorm_kernel, grid=(m,), args=[x, res, w, b, y, res_out, mean, rstd, n, n, eps],
                constexprs=dict(BLOCK_N=1024), outputs=[4, 5, 6, 7], reference=ref, rtol=1e-2, atol=1e-2)


def case_quantize_int8(rng, m=13, n=300):
    x = (rng.standard_normal((m, n)) * rng.uniform(0.1, 10, (m, 1))).astype(np.float32)
    q, scale = _poison((m, n), np.int8), _poison(m, np.float32)

    def ref(x, *rest):
        s = np.abs(x).max(1) / np.float32(127)
        qq = np.clip(np.rint(x / s[:, None]), -127, 127)
        return [qq, s]
    return dict(kernel=quantize_int8_rowwise_kernel, grid=(m,), args=[x, q, scale, n],
                constexprs=dict(BLOCK=512), outputs=[1, 2], reference=ref, rtol=1e-6, atol=1.0)


def case_grid2d(rng, m=70, n=45, bm=32, bn=16):
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = _poison((m, n), np.float32)
    gm, gn = transpiler.cdiv(m, bm), transpiler.cdiv(n, bn)

    def ref(x, *rest):
        mult = (np.arange(n) // bn + 1)[None, :]
        return [_f64(x) * mult + gm * gn]
    return dict(kernel=grid2d_scale_kernel, grid=(gm, gn), args=[x, y, m, n, n], constexprs=dict(BM=bm, BN=bn),
                outputs=[1], reference=ref, rtol=1e-6, atol=1e-6)


def case_persistent(rng, n=10000, block=256, programs=7):
    x = rng.standard_normal(n).astype(np.float32)
    y = _poison(n, np.float32)
    return dict(kernel=persistent_copy_kernel, grid=(programs,), args=[x, y, n], constexprs=dict(BLOCK=block),
                outputs=[1], reference=lambda x, *r: [2 * _f64(x)], rtol=0, atol=0)


def case_poly(rng, act, n=1000, degree=4):
    x = rng.standard_normal(n).astype(np.float32)
    y = _poison(n, np.float32)

    def ref(x, *rest):
        acc = np.zeros(n)
        for k in range(degree, -1, -1):
            acc = acc * _f64(x) + (k + 1) * 0.25
        if act == "relu":
            acc = np.maximum(acc, 0)
        elif act == "leaky":
            acc = np.where(acc >= 0, acc, 0.01 * acc)
        return [acc]
    return dict(kernel=poly_unrolled_kernel, grid=(transpiler.cdiv(n, 256),), args=[x, y, n],
                constexprs=dict(DEGREE=degree, ACT=act, BLOCK=256), outputs=[1], reference=ref, rtol=1e-5, atol=1e-5)


def case_float_math(rng, n=1000):
    x = (rng.standard_normal(n) * 1.5).astype(np.float32)
    out = _poison(n * 12, np.float32)

    def ref(x, *rest):
        x = _f64(x)
        ax = np.abs(x) + 0.5
        erf = np.vectorize(math.erf)
        cols = [np.exp2(x) * np.log2(ax), 1 / np.sqrt(ax) + np.exp(x * 0.5), x * x - 1,
                np.clip(x, -1, 1) + 1 / (1 + np.exp(-x)), erf(x) + np.floor(x) - np.ceil(x),
                ax ** 1.5 + np.log1p(ax) + np.expm1(x * 0.25), np.tanh(x) + np.arctan2(x, ax) + np.sinh(x * 0.5),
                np.where(x > 0, 1.0, -1.0) * np.where(x > 1.5, x, 0), np.trunc(x * 3) + _round_half_away(x * 3),
                np.maximum(x, 0.25) - np.minimum(x, -0.25), 2 * x / ax, 2 * np.exp(x) + 1 / np.sqrt(ax)]
        return [np.stack(cols, axis=1).reshape(-1)]
    return dict(kernel=float_math_kernel, grid=(transpiler.cdiv(n, 128),), args=[x, out, n],
                constexprs=dict(BLOCK=128), outputs=[1], reference=ref, rtol=1e-5, atol=1e-5)


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def case_nan_minmax(rng, n=500):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x[::7] = np.nan
    y[::5] = np.nan
    out = np.full(n * 4, 12345.0, np.float32)

    def ref(x, y, *rest):
        cols = [np.fmin(x, y), np.maximum(x, y), np.where(np.isnan(x), -1.0, x), np.minimum(np.maximum(x, -0.5), y)]
        return [np.stack(cols, axis=1).reshape(-1)]
    return dict(kernel=nan_minmax_kernel, grid=(transpiler.cdiv(n, 128),), args=[x, y, out, n],
                constexprs=dict(BLOCK=128), outputs=[2], reference=ref, rtol=0, atol=0)


def case_int_semantics(rng, n=1000):
    a = rng.integers(-100000, 100000, n).astype(np.int32)
    b = (rng.integers(1, 60, n) * rng.choice([-1, 1], n)).astype(np.int32)
    out = _poison(n * 12, np.int32)

    def ref(a, b, *rest):
        a, b = a.astype(np.int64), b.astype(np.int64)

        def cdiv(x, y):            # C division truncates toward zero; % takes the dividend's sign
            return np.trunc(x / y).astype(np.int64)

        def cmod(x, y):
            return x - cdiv(x, y) * y
        a32 = a.astype(np.int32)
        cols = [cdiv(a, b), cmod(a, b), cdiv(a, 4) + cmod(a, 4),
                np.abs(a) + (a >> 3) + (a32.view(np.uint32) >> 29).astype(np.int64),
                ((a << 4) ^ ~b) | (a & 0xF0),
                ((a > 0) & (b > 0)).astype(np.int64) + ((a < -5) | (a == b)).astype(np.int64) * 2,
                np.where(a < 0, 0, a) + cdiv(a + 6, 7), a32.astype(np.int8).astype(np.int64),
                np.minimum(a, b) * np.maximum(a, b), np.trunc(a32.astype(np.float32) * np.float32(0.37)),
                (a * 3000000).astype(np.int32), cmod(-a, 5) + cdiv(-a, 5)]
        return [np.stack([np.asarray(c, np.int64).astype(np.int32) for c in cols], axis=1).reshape(-1)]
    return dict(kernel=int_semantics_kernel, grid=(transpiler.cdiv(n, 256),), args=[a, b, out, n],
                constexprs=dict(BLOCK=256), outputs=[2], reference=ref, rtol=0, atol=0)


def case_shapes(rng, m=13, n=27, bm=16, bn=32):
    x = rng.standard_normal((m, n)).astype(np.float32)
    out_t, outer, flat = _poison((n, m), np.float32), _poison((bm, bn), np.float32), _poison(bm * bn, np.float32)

    def ref(x, *rest):
        xp = np.zeros((bm, bn))
        xp[:m, :n] = x
        return [_f64(x).T, xp.sum(1)[:, None] * xp.sum(0)[None, :], xp.reshape(-1)]
    return dict(kernel=shapes_kernel, grid=(1,), args=[x, out_t, outer, flat, m, n], constexprs=dict(BM=bm, BN=bn),
                outputs=[1, 2, 3], reference=ref, rtol=1e-5, atol=1e-5)


def case_while(rng, n=300):
    x = rng.uniform(0.01, 5, n).astype(np.float32)
    steps = _poison(n, np.int32)
    limit = 100.0

    def ref(x, *rest):
        return [np.ceil(np.log2(limit / _f64(x))).clip(0)]
    return dict(kernel=doubling_while_kernel, grid=(n + 3,), args=[x, steps, n, limit], constexprs={},
                outputs=[1], reference=ref, rtol=0, atol=0)


def case_helpers(rng, mode, rows=6, block=128):
    x = (rng.standard_normal((rows, block)) * np.array([0.5, 2.0] * (rows // 2))[:, None]).astype(np.float32)
    out, stats = _poison((rows, block), np.float32), _poison((rows, 2), np.float32)

    def ref(x, *rest):
        x = _f64(x)
        mean, var = x.mean(1), x.var(1)
        if mode > 0:
            y = np.where((var > 1)[:, None], x - mean[:, None], 2 * x)
        else:
            y = x + 1
        return [y, np.stack([mean, var], 1)]
    return dict(kernel=helpers_kernel, grid=(rows,), args=[x, out, stats, mode], constexprs=dict(BLOCK=block),
                outputs=[1, 2], reference=ref, rtol=1e-5, atol=1e-5)


def _swizzle2d_ref(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = min(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


def case_swizzle(rng, m=100, n=70, bm=16, bn=16, group=3):
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = _poison((m, n), np.float32)
    gm, gn = transpiler.cdiv(m, bm), transpiler.cdiv(n, bn)

    def ref(x, *rest):
        out = _f64(x).copy()
        for pid in range(gm * gn):
            pm, pn = _swizzle2d_ref(pid // gn, pid % gn, gm, gn, group)
            out[pm * bm:(pm + 1) * bm, pn * bn:(pn + 1) * bn] += pid
        return [out.astype(np.float32)]
    return dict(kernel=swizzle_copy_kernel, grid=(gm * gn,), args=[x, y, m, n],
                constexprs=dict(BM=bm, BN=bn, GROUP=group), outputs=[1], reference=ref, rtol=0, atol=0)


def _softmax_rows(x):
    e = np.exp(_f64(x) - _f64(x).max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def case_softmax(rng, rows=5, block=256):
    x = (rng.standard_normal((rows, block)) * 3).astype(np.float32)
    soft, soft_t = _poison((rows, block), np.float32), _poison((4, block), np.float32)
    return dict(kernel=softmax_kernel, grid=(rows,), args=[x, soft, soft_t], constexprs=dict(BLOCK=block),
                outputs=[1, 2], reference=lambda x, *rest: [_softmax_rows(x), _softmax_rows(x[:4])],
                rtol=1e-5, atol=1e-6)


def _special_values(x):
    """Values a select or a sum could get wrong: NaN, -0.0, infinities."""
    if x.dtype.kind == "f":
        x.reshape(-1)[:4] = [np.nan, -0.0, np.inf, -np.inf]
    return x


def case_join_split(rng, dtype=np.float32, block=128):
    if np.dtype(dtype).kind == "f":
        x, y = (_special_values(rng.standard_normal(block).astype(dtype)) for _ in range(2))
    else:
        x, y = (rng.integers(-100, 100, block).astype(dtype) for _ in range(2))
    outs = [_poison((block, 2), dtype), _poison(block, dtype), _poison(block, dtype), _poison(2 * block, dtype),
            _poison(2 * block, dtype)]

    def ref(x, y, *rest):
        return [np.stack([x, y], 1), y, x, np.stack([x, y], 1).reshape(-1), np.concatenate([x, y])]
    return dict(kernel=join_split_kernel, grid=(1,), args=[x, y, *outs], constexprs=dict(BLOCK=block),
                outputs=[2, 3, 4, 5, 6], reference=ref, rtol=0, atol=0, bitwise=True)


def case_flip(rng, dtype=np.float32, bm=8, bn=64):
    x = _special_values(rng.standard_normal((bm, bn)).astype(dtype)) if np.dtype(dtype).kind == "f" \
        else rng.integers(-100, 100, (bm, bn)).astype(dtype)
    return dict(kernel=flip_kernel, grid=(1,), args=[x, _poison((bm, bn), dtype), _poison((bm, bn), dtype)],
                constexprs=dict(BM=bm, BN=bn), outputs=[1, 2], reference=lambda x, *rest: [x[::-1], x[:, ::-1]],
                rtol=0, atol=0, bitwise=True)


def case_early_exit(rng, n=150, block=64, programs=5):
    x = rng.standard_normal(programs * block).astype(np.float32)
    y = _poison(programs * block, np.float32)

    def ref(x, y, n):
        out = _f64(y).copy()
        out[:n] = _f64(x[:n]) - 1
        return [out]
    return dict(kernel=early_exit_kernel, grid=(programs,), args=[x, y, n], constexprs={}, outputs=[1],
                reference=ref, rtol=1e-6, atol=1e-6)


def case_returns(rng, guard, programs=5, n=3, block=32):
    x = rng.standard_normal(programs * block).astype(np.float32)

    def ref(x, n):
        out = _f64(x).reshape(programs, block).copy()
        for pid in range(programs):
            if guard:
                if pid >= n:
                    continue
                out[pid] *= 10
            if pid == 0:
                out[pid] = -1
            elif pid >= 2:
                out[pid] += 1
        return [out.reshape(-1)]
    return dict(kernel=returns_kernel, grid=(programs,), args=[x, n], constexprs=dict(GUARD=guard, BLOCK=block),
                outputs=[0], reference=ref, rtol=1e-6, atol=1e-6)


def case_optional_affine(rng, has_w, has_b, m=5, n=300):
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32) if has_w else None
    b = rng.standard_normal(n).astype(np.float32) if has_b else None

    def ref(x, w, b, *rest):
        y = _f64(x)
        y = y * w if w is not None else y
        return [y + b if b is not None else y]
    return dict(kernel=optional_affine_kernel, grid=(m,), args=[x, w, b, _poison((m, n), np.float32), n],
                constexprs=dict(BLOCK=512), outputs=[3], reference=ref, rtol=1e-6, atol=1e-6)


def _bf16_rtz_bits(x):
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.int16)


def _fp16_rtz(x):
    near = x.astype(np.float16)
    too_far = np.abs(near.astype(np.float64)) > np.abs(_f64(x))
    return np.where(too_far, np.nextafter(near, np.float16(0)), near)


def case_store_casts(rng, n=1000, block=256):
    x = (rng.standard_normal(n) * 1000).astype(np.float32)
    x[:4] = [70000.0, -70000.0, 1e-8, 65519.0]
    outs = [_poison(n, np.float16), _poison(n, np.int8), _poison(n, np.float16), _poison(n, np.int16)]

    def ref(x, *rest):
        with np.errstate(over="ignore"):      # +-70000 rounds to +-inf to nearest, to +-65504 toward zero
            return [x.astype(np.float16), (x > 0).astype(np.int8), _fp16_rtz(x), _bf16_rtz_bits(x)]
    return dict(kernel=store_casts_kernel, grid=(transpiler.cdiv(n, block),), args=[x, *outs, n],
                constexprs=dict(BLOCK=block), outputs=[1, 2, 3, 4], reference=ref, rtol=0, atol=0)


def case_grid3d(rng, grid=(3, 4, 2), block=32):
    size = grid[0] * grid[1] * grid[2] * block
    x = rng.standard_normal(size).astype(np.float32)

    def ref(x, *rest):
        b, h, i = np.meshgrid(np.arange(grid[2]), np.arange(grid[1]), np.arange(grid[0]), indexing="ij")
        extra = np.repeat((b * 100 + h * 10 + i).reshape(-1), block)
        return [(x + extra.astype(np.float32))]
    return dict(kernel=grid3d_kernel, grid=grid, args=[x, _poison(size, np.float32)], constexprs=dict(BLOCK=block),
                outputs=[1], reference=ref, rtol=1e-6, atol=1e-6)


def case_hash(rng, n=1000, block=256):
    x = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)

    def ref(x, *rest):
        h = x.view(np.uint32).astype(np.uint64)
        h = (h * 0x9E3779B1) & 0xFFFFFFFF
        h ^= h >> 16
        h = (((h * 0x85EBCA6B) >> 32) + (h << 3)) & 0xFFFFFFFF
        return [h.astype(np.uint32)]
    return dict(kernel=hash_kernel, grid=(transpiler.cdiv(n, block),), args=[x, _poison(n, np.uint32), n],
                constexprs=dict(BLOCK=block), outputs=[1], reference=ref, rtol=0, atol=0)


def case_tile_reduce(rng, bm=8, bn=32):
    x = rng.standard_normal((bm, bn)).astype(np.float32)

    def ref(x, *rest):
        acc = _f64(x) * 6
        return [acc.max(1) + acc.argmax(1) + acc.sum(1)]
    return dict(kernel=tile_reduce_kernel, grid=(1,), args=[x, _poison(bm, np.float32)],
                constexprs=dict(BM=bm, BN=bn), outputs=[1], reference=ref, rtol=1e-5, atol=1e-5)


_POSITIVE_ONLY = {"acosh", "log", "log2", "log10", "sqrt", "rsqrt", "fast_logf", "fast_log2f", "pow", "fast_powf"}
_LIBDEVICE_DOMAIN = {"acosh": (1.1, 3.0), "erfinv": (-0.9, 0.9)}
_LIBDEVICE_REF = {
    "exp10": lambda x: 10.0 ** x, "fast_exp10f": lambda x: 10.0 ** x, "rsqrt": lambda x: 1 / np.sqrt(x),
    "erf": np.vectorize(math.erf), "erfc": np.vectorize(math.erfc), "round": _round_half_away,
    "nearbyint": np.rint, "fabs": np.abs, "signbit": np.signbit, "fdim": lambda x, y: np.maximum(x - y, 0),
    "div_rn": np.divide, "fast_dividef": np.divide, "fast_powf": np.power, "fma": lambda x, y, z: x * y + z,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "atan2": np.arctan2, "erfinv": None,
}


def libdevice_reference(name):
    """NumPy float64 reference of libdevice function `name` (independent of the interpreter's table)."""
    if name == "erfinv":
        return lambda y: _bisect_inverse(np.vectorize(math.erf), y, -5.0, 5.0)
    if name in _LIBDEVICE_REF:
        return _LIBDEVICE_REF[name]
    base = name[len("fast_"):-1] if name.startswith("fast_") else name
    return getattr(np, base)


def _bisect_inverse(f, y, lo, hi):
    lo, hi = np.full_like(y, lo), np.full_like(y, hi)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = f(mid) < y
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def case_libdevice(rng, name, dtype=np.float32, n=700):
    from transpiler.language.extra.libdevice import ARITY
    lo, hi = _LIBDEVICE_DOMAIN.get(name, (0.1, 0.9))
    x = rng.uniform(lo, hi, n).astype(dtype)
    if name not in _POSITIVE_ONLY:
        x[::9] *= -1
    y = rng.uniform(0.2, 1.5, n).astype(dtype)
    z = rng.uniform(-1, 1, n).astype(dtype)
    out = _poison(n, dtype)
    arity = ARITY[name]
    fn = libdevice_reference(name)

    def ref(x, y, z, *rest):
        return [fn(*[_f64(a) for a in (x, y, z)[:arity]])]
    tol = 2e-6 if dtype == np.float32 else 1e-12
    if name.startswith("fast_"):
        tol = 2e-5                        # CUDA's fast intrinsics are approximations
    return dict(kernel=libdevice_kernel, grid=(transpiler.cdiv(n, 256),), args=[x, y, z, out, n],
                constexprs=dict(FN=getattr(libdevice, name), ARITY=arity, BLOCK=256), outputs=[3], reference=ref,
                rtol=tol, atol=tol)


# The float functions checked here against NumPy references; tests/test_libdevice_catalogue.py checks the rest of
# the catalogue.
CLASSIC_LIBDEVICE = (
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "floor",
    "ceil", "trunc", "round", "rint", "nearbyint", "fabs", "isnan", "isinf", "signbit", "fast_expf", "fast_logf",
    "fast_log2f", "fast_exp10f", "fast_sinf", "fast_cosf", "fast_tanf", "pow", "atan2", "hypot", "fmod", "fmax",
    "fmin", "copysign", "fdim", "div_rn", "fast_dividef", "fast_powf", "fma")


def libdevice_cases(rng):
    """One case per classic libdevice function on fp32, and on fp64 where libdevice has it."""
    cases = [(f"libdevice_{name}", case_libdevice(rng, name)) for name in CLASSIC_LIBDEVICE]
    cases += [(f"libdevice_{name}_fp64", case_libdevice(rng, name, np.float64)) for name in CLASSIC_LIBDEVICE
              if not name.startswith("fast_")]
    return cases


def launch_options(case):
    """The launch options a case asks for (`num_warps`, and `num_stages` where it sets one)."""
    options = dict(num_warps=case.get("num_warps", 4))
    if "num_stages" in case:
        options["num_stages"] = case["num_stages"]
    return options


def check(case, outputs):
    """`feature_kernels.check`, and for cases marked `bitwise` the exact bit patterns (NaN payloads, -0.0)."""
    check_values(case, outputs)
    if case.get("bitwise"):
        expected = case["reference"](*case["args"])
        for idx, exp in zip(case["outputs"], expected):
            got = np.asarray(outputs[idx])
            exp = np.ascontiguousarray(np.asarray(exp, dtype=got.dtype).reshape(got.shape))
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), exp.view(f"u{got.itemsize}"),
                                          err_msg=f"output {idx} (bits)")


def all_cases(rng):
    """Every unseen-kernel case, with an id."""
    return [
        ("rmsnorm_fp16", case_rmsnorm(rng)), ("rmsnorm_fp32", case_rmsnorm(rng, np.float32)),
        ("gelu_tanh", case_gelu(rng, "tanh")), ("gelu_sigmoid_tanh", case_gelu(rng, "sigmoid_tanh")),
        ("gelu_erf", case_gelu(rng, "erf")), ("gelu_erf_fp16", case_gelu(rng, "erf", np.float16)),
        ("swiglu", case_swiglu(rng)), ("rope", case_rope(rng)), ("cross_entropy", case_cross_entropy(rng)),
        ("add_layernorm", case_add_layernorm(rng)), ("quantize_int8", case_quantize_int8(rng)),
        ("grid2d", case_grid2d(rng)), ("persistent", case_persistent(rng)),
        ("poly_relu", case_poly(rng, "relu")), ("poly_leaky", case_poly(rng, "leaky")),
        ("poly_none", case_poly(rng, "none")), ("float_math", case_float_math(rng)),
        ("nan_minmax", case_nan_minmax(rng)), ("int_semantics", case_int_semantics(rng)),
        ("shapes", case_shapes(rng)), ("while", case_while(rng)), ("helpers_mode1", case_helpers(rng, 1)),
        ("helpers_mode0", case_helpers(rng, 0)), ("swizzle", case_swizzle(rng)),
        ("softmax", case_softmax(rng)), ("early_exit", case_early_exit(rng)), ("store_casts", case_store_casts(rng)),
        ("returns_guarded", case_returns(rng, True)), ("returns", case_returns(rng, False)),
        ("optional_w_and_b", case_optional_affine(rng, True, True)),
        ("optional_no_w", case_optional_affine(rng, False, True)),
        ("optional_no_b", case_optional_affine(rng, True, False)),
        ("grid3d", case_grid3d(rng)), ("hash", case_hash(rng)), ("tile_reduce", case_tile_reduce(rng)),
        ("join_split_fp32", case_join_split(rng)), ("join_split_fp16", case_join_split(rng, np.float16)),
        ("join_split_int8", case_join_split(rng, np.int8)), ("flip_fp32", case_flip(rng)),
        ("flip_fp16", case_flip(rng, np.float16)), ("flip_int32", case_flip(rng, np.int32)),
    ] + realworld_cases(rng)
