"""One small kernel per language feature, each with a NumPy float64 reference and a case builder.

Shared by the CPU tests (NVRTC compile of every kernel, the interpreter against NumPy) and the GPU tests
(compiled results against NumPy on fresh random inputs). A case is a dict: `kernel`, `grid`, `args` (NumPy
arrays and scalars, outputs poisoned), `constexprs`, `outputs` (indices of output arrays) and `reference`
(a function of the input arrays returning the expected outputs), plus `rtol`/`atol`.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl
from random_kernels import random_cases

# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def add_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=m) + tl.load(Y + offs, mask=m), mask=m)


@transpiler.jit
def math_kernel(X, OUT, N, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(tl.abs(x) + 1.0)
    elif FN == "log2":
        y = tl.log2(tl.abs(x) + 1.0)
    elif FN == "sqrt":
        y = tl.sqrt(tl.abs(x))
    elif FN == "rsqrt":
        y = tl.rsqrt(tl.abs(x) + 0.5)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "ceil":
        y = tl.ceil(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "fma":
        y = tl.fma(x, x, 0.5)
    elif FN == "clamp":
        y = tl.clamp(x, -0.5, 0.5)
    elif FN == "where":
        y = tl.where(x > 0, x, -2.0 * x)
    elif FN == "minmax":
        y = tl.maximum(tl.minimum(x, 0.3), -0.3)
    else:
        y = -x
    tl.store(OUT + offs, y, mask=m)


@transpiler.jit
def int_ops_kernel(A, B, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=1)
    b = tl.load(B + offs, mask=m, other=1)
    base = OUT + offs * 8
    tl.store(base + 0, a // b, mask=m)
    tl.store(base + 1, a % b, mask=m)
    tl.store(base + 2, (a & b) | (a ^ 3), mask=m)
    tl.store(base + 3, (a << 2) >> 1, mask=m)
    tl.store(base + 4, tl.where(a < b, a, b) * 3 - 1, mask=m)
    tl.store(base + 5, -a + ~b, mask=m)
    tl.store(base + 6, tl.cdiv(tl.abs(a), 7), mask=m)
    tl.store(base + 7, (a > 0).to(tl.int32) + (b != 0).to(tl.int32), mask=m)


@transpiler.jit
def cast_kernel(X, OUT_H, OUT_I, OUT_BITS, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    tl.store(OUT_H + offs, x.to(tl.float16), mask=m)
    tl.store(OUT_I + offs, x.to(tl.int32), mask=m)
    tl.store(OUT_BITS + offs, x.to(tl.int32, bitcast=True), mask=m)


@transpiler.jit
def reduce_rows_kernel(X, SUM, MAX, MIN, ARGMAX, ARGMIN, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=float("-inf"))
    x0 = tl.where(mask, x, 0.0)
    rm = rows < M
    tl.store(SUM + rows, tl.sum(x0, axis=1), mask=rm)
    tl.store(MAX + rows, tl.max(x, axis=1), mask=rm)
    tl.store(MIN + rows, tl.min(tl.where(mask, x, float("inf")), axis=1), mask=rm)
    tl.store(ARGMAX + rows, tl.argmax(x, axis=1), mask=rm)
    tl.store(ARGMIN + rows, tl.argmin(tl.where(mask, x, float("inf")), axis=1), mask=rm)


@transpiler.jit
def reduce_cols_kernel(X, SUM, MAX, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    rows = tl.arange(0, BM)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    cm = cols < N
    tl.store(SUM + cols, tl.sum(x, axis=0), mask=cm)
    tl.store(MAX + cols, tl.max(tl.where(mask, x, float("-inf")), axis=0, keep_dims=True).reshape(BN), mask=cm)


@transpiler.jit
def _add_combine(a, b):
    return a + b


@transpiler.jit
def _max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@transpiler.jit
def custom_reduce_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + tl.program_id(0) * N + offs, mask=offs < N, other=0.0)
    tl.store(OUT + tl.program_id(0) * 2, tl.reduce(x, 0, _add_combine))
    tl.store(OUT + tl.program_id(0) * 2 + 1, tl.reduce(x, 0, _max_abs))


@transpiler.jit
def range_keywords_kernel(X, OUT, N, LO: tl.constexpr, HI: tl.constexpr, STEP: tl.constexpr,
                          BLOCK: tl.constexpr):
    """Loop bounds given by keyword, as Triton allows: `tl.static_range(..., step=)`, `tl.range(arg1=, arg2=,
    step=)` with a runtime end."""
    unrolled = 0
    for i in tl.static_range(LO, HI, step=STEP):
        unrolled += i
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(arg1=0, arg2=N, step=2 * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(X + offs, mask=offs < N, other=0.0)
    tl.store(OUT, tl.sum(acc, axis=0))
    tl.store(OUT + 1, unrolled)


@transpiler.jit
def loop_kernel(X, OUT, N, BLOCK: tl.constexpr):
    """Running sum over chunks (loop-carried block), a while loop and a runtime if."""
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(X + offs, mask=offs < N, other=0.0)
        count += 1
    total = tl.sum(acc, axis=0)
    k = 1
    while k < count:
        k = k * 2
    if total > 0:
        sign = 1.0
    else:
        sign = -1.0
    tl.store(OUT, total)
    tl.store(OUT + 1, k.to(tl.float32))
    tl.store(OUT + 2, sign)


@transpiler.jit
def _scale_shift(x, scale, SHIFT: tl.constexpr):
    return x * scale + SHIFT


@transpiler.jit
def shape_kernel(X, OUT_T, OUT_H, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """trans, broadcast_to, expand_dims, a helper call and static_range."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    xt = tl.trans(x)
    tl.store(OUT_T + rn[:, None] * M + rm[None, :], xt, mask=(rn[:, None] < N) & (rm[None, :] < M))
    acc = tl.broadcast_to(tl.expand_dims(tl.sum(x, axis=1), 1), BM, BN)
    for i in tl.static_range(2):
        acc = _scale_shift(acc, 0.5, i)
    tl.store(OUT_H + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@transpiler.jit
def boundary_masks_kernel(X, OUT, n, BLOCK: tl.constexpr):
    # Masks that split a thread's run of 4 contiguous columns at n (a multiple of 16): only `< n` and `>= n`
    # are constant over such a run; `<=`, `>`, `==` and `!=` change inside the run holding n.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs <= n, other=-1.0)
    x = tl.where(offs > n, x + 10.0, x)
    x = tl.where(offs == n, x + 100.0, x)
    x = tl.where(n >= offs, x + 1000.0, x)
    x = tl.where(n < offs, x, x * 2.0)
    tl.store(OUT + offs, x, mask=offs != n + 3)


@transpiler.jit
def scalar_fill_kernel(X, n, BLOCK: tl.constexpr):
    # A block computed from scalars only: every register holds the same value, stored through wide stores.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, tl.full((BLOCK,), 1.5, tl.float32) + pid, mask=offs < n)


# ---------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------

def _poison(shape, dtype):
    out = np.empty(shape, dtype)
    if np.dtype(dtype).kind == "f":
        out.fill(np.nan)
    else:
        out.fill(np.iinfo(dtype).min + 7)
    return out


MATH_FNS = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor", "ceil", "sigmoid", "fma",
            "clamp", "where", "minmax", "neg"]
_MATH_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": lambda x: np.log(np.abs(x) + 1), "log2": lambda x: np.log2(np.abs(x) + 1),
    "sqrt": lambda x: np.sqrt(np.abs(x)), "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + 0.5), "sin": np.sin,
    "cos": np.cos, "erf": None, "floor": np.floor, "ceil": np.ceil, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "fma": lambda x: x * x + 0.5, "clamp": lambda x: np.clip(x, -0.5, 0.5), "where": lambda x: np.where(x > 0, x, -2 * x),
    "minmax": lambda x: np.maximum(np.minimum(x, 0.3), -0.3), "neg": lambda x: -x,
}


def _erf(x):
    import math
    return np.vectorize(math.erf)(x)


_MATH_REF["erf"] = _erf


def case_add(rng, dtype=np.float32, n=3001, block=1024):
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    z = _poison(n, dtype)
    tol = 1e-6 if dtype == np.float32 else (1e-3 if dtype == np.float16 else 1e-12)
    return dict(kernel=add_kernel, grid=(transpiler.cdiv(n, block),), args=[x, y, z, n], constexprs=dict(BLOCK=block),
                outputs=[2], reference=lambda x, y, z, n: [x.astype(np.float64) + y], rtol=tol, atol=tol)


def case_math(rng, fn, dtype=np.float32, n=2049, block=256):
    x = (rng.standard_normal(n) * 2).astype(dtype)
    out = _poison(n, dtype)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=2e-2, atol=2e-2)
    return dict(kernel=math_kernel, grid=(transpiler.cdiv(n, block),), args=[x, out, n],
                constexprs=dict(FN=fn, BLOCK=block), outputs=[1],
                reference=lambda x, o, n: [_MATH_REF[fn](x.astype(np.float64))], **tol)


def case_int_ops(rng, n=1000, block=128):
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    out = _poison(n * 8, np.int32)

    def ref(a, b, out, n):
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        q = np.trunc(a64 / b64).astype(np.int64)
        r = a64 - q * b64
        cols = [q, r, (a64 & b64) | (a64 ^ 3), (a64 << 2) >> 1, np.where(a64 < b64, a64, b64) * 3 - 1, -a64 + ~b64,
                -(-np.abs(a64) // 7), (a64 > 0).astype(np.int64) + (b64 != 0)]
        return [np.stack(cols, axis=1).reshape(-1)]
    return dict(kernel=int_ops_kernel, grid=(transpiler.cdiv(n, block),), args=[a, b, out, n],
                constexprs=dict(BLOCK=block), outputs=[2], reference=ref, rtol=0, atol=0)


def case_cast(rng, n=777, block=256):
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    oh, oi, ob = _poison(n, np.float16), _poison(n, np.int32), _poison(n, np.int32)
    return dict(kernel=cast_kernel, grid=(transpiler.cdiv(n, block),), args=[x, oh, oi, ob, n],
                constexprs=dict(BLOCK=block), outputs=[1, 2, 3],
                reference=lambda x, *rest: [x.astype(np.float16), np.trunc(x).astype(np.int32), x.view(np.int32)],
                rtol=0, atol=0)


def case_reduce_rows(rng, m=37, n=100, bm=4, bn=128, num_warps=4):
    x = rng.standard_normal((m, n)).astype(np.float32)
    outs = [_poison(m, np.float32), _poison(m, np.float32), _poison(m, np.float32), _poison(m, np.int32),
            _poison(m, np.int32)]
    ref = lambda x, *rest: [x.astype(np.float64).sum(1), x.max(1), x.min(1), x.argmax(1), x.argmin(1)]  # noqa: E731
    return dict(kernel=reduce_rows_kernel, grid=(transpiler.cdiv(m, bm),), args=[x] + outs + [m, n, n],
                constexprs=dict(BM=bm, BN=bn), outputs=[1, 2, 3, 4, 5], reference=ref, rtol=1e-5, atol=1e-5,
                num_warps=num_warps)


def case_reduce_cols(rng, m=50, n=300, bm=64, bn=32, num_warps=4):
    x = rng.standard_normal((m, n)).astype(np.float32)
    s, mx = _poison(n, np.float32), _poison(n, np.float32)
    return dict(kernel=reduce_cols_kernel, grid=(transpiler.cdiv(n, bn),), args=[x, s, mx, m, n, n],
                constexprs=dict(BM=bm, BN=bn), outputs=[1, 2],
                reference=lambda x, *r: [x.astype(np.float64).sum(0), x.max(0)], rtol=1e-5, atol=1e-5,
                num_warps=num_warps)


def case_custom_reduce(rng, rows=5, n=300, block=512):
    x = rng.standard_normal((rows, n)).astype(np.float32)
    out = _poison(rows * 2, np.float32)
    return dict(kernel=custom_reduce_kernel, grid=(rows,), args=[x, out, n], constexprs=dict(BLOCK=block),
                outputs=[1], reference=lambda x, o, n: [np.stack([x.astype(np.float64).sum(1), np.abs(x).max(1)],
                                                                 1).reshape(-1)], rtol=1e-5, atol=1e-5)


def case_loop(rng, n=1000, block=128):
    x = rng.standard_normal(n).astype(np.float32)
    out = _poison(3, np.float32)
    count = transpiler.cdiv(n, block)

    def ref(x, o, n):
        total = x.astype(np.float64).sum()
        k = 1
        while k < count:
            k *= 2
        return [np.array([total, k, 1.0 if total > 0 else -1.0])]
    return dict(kernel=loop_kernel, grid=(1,), args=[x, out, n], constexprs=dict(BLOCK=block), outputs=[1],
                reference=ref, rtol=1e-5, atol=1e-4)


def case_range_keywords(rng, n=1000, block=64, lo=3, hi=100, step=7):
    x = rng.standard_normal(n).astype(np.float32)
    out = _poison(2, np.float32)

    def ref(x, o, n):
        every_other_block = [x[s:s + block] for s in range(0, n, 2 * block)]
        return [np.array([np.concatenate(every_other_block).astype(np.float64).sum(), sum(range(lo, hi, step))])]
    return dict(kernel=range_keywords_kernel, grid=(1,), args=[x, out, n],
                constexprs=dict(LO=lo, HI=hi, STEP=step, BLOCK=block), outputs=[1], reference=ref, rtol=1e-5,
                atol=1e-4)


def case_shape(rng, m=13, n=27, bm=16, bn=32):
    x = rng.standard_normal((m, n)).astype(np.float32)
    ot, oh = _poison((n, m), np.float32), _poison((m, n), np.float32)

    def ref(x, *r):
        s = x.astype(np.float64).sum(1)[:, None] * np.ones((1, n))
        s = (s * 0.5 + 0) * 0.5 + 1
        return [x.T, s]
    return dict(kernel=shape_kernel, grid=(1,), args=[x, ot, oh, m, n], constexprs=dict(BM=bm, BN=bn),
                outputs=[1, 2], reference=ref, rtol=1e-5, atol=1e-5)


def case_boundary_masks(rng, n=48, block=128, programs=2):
    x = rng.standard_normal(programs * block).astype(np.float32)
    out = _poison(programs * block, np.float32)

    def ref(x, out, n):
        i = np.arange(x.size)
        y = np.where(i <= n, x.astype(np.float64), -1.0)
        y = np.where(i > n, y + 10.0, y)
        y = np.where(i == n, y + 100.0, y)
        y = np.where(n >= i, y + 1000.0, y)
        y = np.where(n < i, y, y * 2.0)
        return [np.where(i != n + 3, y, out.astype(np.float64))]
    return dict(kernel=boundary_masks_kernel, grid=(programs,), args=[x, out, n], constexprs=dict(BLOCK=block),
                outputs=[1], reference=ref, rtol=1e-6, atol=1e-6)


def case_scalar_fill(rng, n=1000, block=256):
    out = _poison(n, np.float32)
    return dict(kernel=scalar_fill_kernel, grid=(transpiler.cdiv(n, block),), args=[out, n],
                constexprs=dict(BLOCK=block), outputs=[0],
                reference=lambda out, n: [1.5 + np.arange(n) // block], rtol=0, atol=0)


def all_cases(rng):
    """Every feature case, with an id."""
    cases = [("add_fp32", case_add(rng)), ("add_fp16", case_add(rng, np.float16)),
             ("add_fp64", case_add(rng, np.float64)), ("int_ops", case_int_ops(rng)), ("cast", case_cast(rng)),
             ("reduce_rows", case_reduce_rows(rng)), ("reduce_rows_1warp", case_reduce_rows(rng, num_warps=1)),
             ("reduce_rows_8warps_wide", case_reduce_rows(rng, m=9, n=1000, bm=2, bn=1024, num_warps=8)),
             ("reduce_cols", case_reduce_cols(rng)), ("reduce_cols_8warps", case_reduce_cols(rng, num_warps=8)),
             ("custom_reduce", case_custom_reduce(rng)), ("loop", case_loop(rng)), ("shape", case_shape(rng)),
             ("boundary_masks", case_boundary_masks(rng)), ("scalar_fill", case_scalar_fill(rng))]
    cases += [(f"math_{fn}", case_math(rng, fn)) for fn in MATH_FNS]
    cases += [("math_exp_fp16", case_math(rng, "exp", np.float16)), ("math_sigmoid_fp16",
                                                                      case_math(rng, "sigmoid", np.float16))]
    cases += random_cases(rng)
    cases.append(("range_keywords", case_range_keywords(rng)))
    return cases


def check(case, outputs):
    """Compare outputs (NumPy arrays) with the reference; raises AssertionError with the worst element."""
    inputs = case["args"]
    expected = case["reference"](*inputs)
    for idx, exp in zip(case["outputs"], expected):
        got = np.asarray(outputs[idx])
        exp = np.asarray(exp).reshape(got.shape)
        assert not np.isnan(got.astype(np.float64)).any() or np.isnan(exp.astype(np.float64)).any(), \
            f"output {idx} has unwritten (NaN) elements"
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=case["rtol"],
                                   atol=case["atol"], err_msg=f"output {idx}")
