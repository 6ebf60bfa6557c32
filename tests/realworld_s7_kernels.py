"""Small kernels, written as Triton users write them, reducing defects that public real-world Triton kernels
(issue 13, core language, seventh session) hit on our paths. Same case format as
`tests/realworld_core_kernels.py`: `tests/test_realworld_s7.py` interprets and compiles them,
`tests/test_gpu_realworld_s7.py` runs them on the GPU against NumPy and against Triton on this same source.
"""
from __future__ import annotations

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


def all_cases(rng):
    """Every case with an id."""
    return [("pair_sums", case_pair_sums(rng))]
