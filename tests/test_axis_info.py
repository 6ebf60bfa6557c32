"""Axis info of comparisons: which masks are constant over a contiguous run (analysis/axis_info.py).

A run [m*k, m*k + k) lies wholly on one side of a multiple n*k, so `offs < n` and `offs >= n` (and their
mirrors `n > offs`, `n <= offs`) are constant over it; `<=`, `>`, `==` and `!=` change inside the run that
holds n. Treating those as constant would give a vector access one mask for four elements, or compute a
select once per run (wrong answers the GPU tests caught for `tl.join`)."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis.axis_info import AxisInfoAnalysis


@transpiler.jit
def _compare_kernel(X, n, BLOCK: tl.constexpr, FN: tl.constexpr, FLIP: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if FLIP:
        if FN == "lt":
            m = n < offs
        elif FN == "le":
            m = n <= offs
        elif FN == "gt":
            m = n > offs
        elif FN == "ge":
            m = n >= offs
        elif FN == "eq":
            m = n == offs
        else:
            m = n != offs
    else:
        if FN == "lt":
            m = offs < n
        elif FN == "le":
            m = offs <= n
        elif FN == "gt":
            m = offs > n
        elif FN == "ge":
            m = offs >= n
        elif FN == "eq":
            m = offs == n
        else:
            m = offs != n
    tl.store(X + offs, 1.0, mask=m)


def _mask_constancy(fn, flip):
    x = np.zeros(64, np.float32)
    ir = _compare_kernel.ir(x, 32, BLOCK=64, FN=fn, FLIP=flip)
    info = AxisInfoAnalysis(ir)
    compares = [op for op in ir.walk() if op.name == "elementwise" and op.attrs["fn"] == fn]
    assert len(compares) == 1
    return info[compares[0].results[0]].constancy[0]


@pytest.mark.parametrize("fn, flip, constant_over_runs", [
    ("lt", False, True), ("ge", False, True), ("gt", True, True), ("le", True, True),
    ("le", False, False), ("gt", False, False), ("lt", True, False), ("ge", True, False),
    ("eq", False, False), ("ne", False, False), ("eq", True, False), ("ne", True, False),
])
def test_only_comparisons_a_multiple_cannot_split_are_constant_over_runs(fn, flip, constant_over_runs):
    # n = 32 is specialized as a multiple of 16: `offs < n` is constant over aligned runs of 16.
    assert (_mask_constancy(fn, flip) == 16) == constant_over_runs
    if not constant_over_runs:
        assert _mask_constancy(fn, flip) == 1


def test_a_join_selects_per_register():
    @transpiler.jit
    def join_kernel(X, Y, OUT, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        joined = tl.join(tl.load(X + offs), tl.load(Y + offs))
        tl.store(OUT + offs[:, None] * 2 + tl.arange(0, 2)[None, :], joined)
    x = np.zeros(128, np.float32)
    source = join_kernel.cuda_source(x, x, np.zeros(256, np.float32), BLOCK=128)
    assert "run" not in source.split("joined = tl.join")[1].split("tl.store")[0]
