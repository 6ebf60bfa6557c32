"""Small kernels, written as Triton users write them, reducing defects that public real-world Triton kernels
(issue 13, core language, seventh session) hit on our paths. Same case format as
`tests/realworld_core_kernels.py`, and run by the same tests: `tests/test_realworld_core.py` interprets and
compiles them, `tests/test_gpu_realworld_core.py` runs them on the GPU against NumPy and against Triton on this
same source.
"""
from __future__ import annotations

import math

import numpy as np

import transpiler
import transpiler.language as tl
from feature_kernels import _poison


def _cdiv(a, b):
    return (a + b - 1) // b


# ---- compile-time Python functions: `@constexpr_function`, `triton.cdiv` in a kernel, `x.numel` ------------

@transpiler.constexpr_function
def _halved(n):
    return n // 2


@transpiler.jit
def pair_sums_kernel(X, Y, N, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    pairs = tl.reshape(x, [_halved(x.numel), 2])          # the element count, known while compiling
    levels: tl.constexpr = tl.standard._log2(BLOCK)        # Triton's private compile-time helper
    groups: tl.constexpr = transpiler.cdiv(BLOCK, GROUP)   # the host's cdiv, called in the kernel
    out = tl.sum(pairs, axis=1) * levels + groups
    half = tl.arange(0, _halved(BLOCK))
    tl.store(Y + half, out, mask=half < _cdiv_rt(N))


@transpiler.jit
def _cdiv_rt(n):
    return (n + 1) // 2


def case_pair_sums(rng, n=45, block=64, group=24):
    x = rng.standard_normal(n).astype(np.float32)

    def reference(x, *_):
        padded = np.zeros(block)
        padded[:n] = x
        return [padded.reshape(-1, 2).sum(axis=1)[:_cdiv(n, 2)] * 6 + _cdiv(block, group)]
    return dict(kernel=pair_sums_kernel, grid=(1,), args=[x, _poison(_cdiv(n, 2), np.float32), n],
                constexprs=dict(BLOCK=block, GROUP=group), outputs=[1], reference=reference, rtol=1e-5, atol=1e-5)


# ---- values updated under a runtime `if` and read only inside it (split-KV decode attention) -----------------

@transpiler.jit
def segment_logsumexp_kernel(X, OUT, STARTS, ENDS, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lo = tl.load(STARTS + pid)
    hi = tl.load(ENDS + pid)
    best = -float("inf")
    total = 0.0
    if hi > lo:                      # an empty segment writes nothing; `best` and `total` are not read after
        for start in range(lo, hi, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = tl.load(X + offs, mask=offs < hi, other=-float("inf"))
            new_best = tl.maximum(tl.max(x, 0), best)
            total = total * tl.exp(best - new_best) + tl.sum(tl.exp(x - new_best), 0)
            best = new_best
        tl.store(OUT + pid, best + tl.log(total))


def case_segment_logsumexp(rng, block=32):
    bounds = np.array([0, 45, 45, 120, 121], np.int32)
    x = rng.standard_normal(int(bounds[-1])).astype(np.float32)

    def reference(x, out, starts, ends):
        return [[np.log(np.exp(x[a:b].astype(np.float64)).sum()) if b > a else np.nan for a, b in zip(starts, ends)]]
    return dict(kernel=segment_logsumexp_kernel, grid=(4,), args=[x, _poison(4, np.float32), bounds[:-1], bounds[1:]],
                constexprs=dict(BLOCK=block), outputs=[1], reference=reference, rtol=1e-5, atol=1e-5)


# ---- a dot operand seen through two transposes (`bt = tl.trans(b)`, then `tl.dot(a, tl.trans(bt))`) ----------

@transpiler.jit
def double_transpose_dot_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :], mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        bt = tl.trans(b)                             # [BN, BK]
        acc = tl.dot(a, tl.trans(bt), acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def case_double_transpose_dot(rng, m=40, n=24, k=70):
    a = (rng.standard_normal((m, k)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 0.5).astype(np.float16)
    return dict(kernel=double_transpose_dot_kernel, grid=(_cdiv(m, 32),), args=[a, b, _poison((m, n), np.float32), m, n, k],
                constexprs=dict(BM=32, BN=32, BK=32), outputs=[2],
                reference=lambda a, b, *_: [a.astype(np.float64) @ b.astype(np.float64)], rtol=1e-2, atol=1e-2)


# ---- Python helpers called in a kernel on compile-time values: `@tl.constexpr` on a function, a module's
# function (`math.log2`), `tl.core.get_int_dtype` (the order-preserving keys of FlagGems' radix sort) ------------

@tl.constexpr
def _unsigned_of(bits):
    bits = bits.value if isinstance(bits, tl.constexpr) else bits
    return tl.core.get_int_dtype(bits, False)


@tl.constexpr
def _top_bit(bits):
    bits = bits.value if isinstance(bits, tl.constexpr) else bits     # Triton passes its constexpr wrapper
    return 1 << (bits - 1)


@transpiler.jit
def order_keys_kernel(X, KEYS, DIGITS, N, BLOCK: tl.constexpr, RADIX: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0)
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    u = x.to(_unsigned_of(bits), bitcast=True) ^ _top_bit(bits)       # signed order as unsigned order
    tl.store(KEYS + offs, u, mask=offs < N)
    shift: tl.constexpr = int(math.log2(RADIX))
    tl.store(DIGITS + offs, ((u >> shift) & (RADIX - 1)).to(tl.int32), mask=offs < N)


def case_order_keys(rng, dtype=np.int32, n=300, block=128, radix=16):
    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, n).astype(dtype)
    unsigned = np.dtype(f"u{np.dtype(dtype).itemsize}")

    def reference(x, *_):
        u = x.view(unsigned) ^ unsigned.type(1 << (8 * x.itemsize - 1))
        return [u, ((u >> int(math.log2(radix))) & (radix - 1)).astype(np.int32)]
    return dict(kernel=order_keys_kernel, grid=(_cdiv(n, block),),
                args=[x, np.zeros(n, unsigned), _poison(n, np.int32), n], constexprs=dict(BLOCK=block, RADIX=radix),
                outputs=[1, 2], reference=reference, rtol=0, atol=0)


def all_cases(rng):
    """Every case with an id."""
    return [("pair_sums", case_pair_sums(rng)), ("segment_logsumexp", case_segment_logsumexp(rng)),
            ("double_transpose_dot", case_double_transpose_dot(rng)),
            ("order_keys_i32", case_order_keys(rng)), ("order_keys_i16", case_order_keys(rng, np.int16))]
