"""GPU tests (marker `gpu`) of the rewrites that keep the generated CUDA small (tests/test_compile_size.py has the
CPU side): an add into a product computed as the product's accumulator, a branch's scores in the product's
layout, on fresh random inputs against float64 NumPy, outputs poisoned with NaN before each launch; on sm_90a
(wgmma) and the default path. Run in a process of its own: tensor-core code that faults poisons the context."""
from __future__ import annotations

import numpy as np
import pytest

from test_compile_size import add_into_product_kernel, masked_scores_kernel, two_branch_loops_kernel

pytestmark = pytest.mark.gpu


def _rng(seed):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("read_twice", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_add_into_a_product_matches_numpy(read_twice, seed):
    cupy = pytest.importorskip("cupy")
    rng = _rng(seed)
    bm, bn, bk, k = 32, 32, 32, 96
    a = rng.standard_normal((bm, k)).astype(np.float16)
    b = rng.standard_normal((k, bn)).astype(np.float16)
    x = rng.standard_normal((bm, bn)).astype(np.float32)
    c = cupy.full((bm, bn), np.nan, np.float32)
    add_into_product_kernel[(1,)](cupy.asarray(a), cupy.asarray(b), c, cupy.asarray(x), k, BM=bm, BN=bn, BK=bk,
                                  READ_TWICE=read_twice)
    product = a.astype(np.float64) @ b.astype(np.float64)
    expected = x + product * (3.0 if read_twice else 1.0)
    np.testing.assert_allclose(cupy.asnumpy(c), expected, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("n_valid", [17, 40, 64])
def test_masked_scores_in_the_product_layout_match_numpy(n_valid):
    cupy = pytest.importorskip("cupy")
    rng = _rng(n_valid)
    q = rng.standard_normal((64, 64)).astype(np.float16)
    k = rng.standard_normal((64, 64)).astype(np.float16)
    out = cupy.full(64, np.nan, np.float32)
    masked_scores_kernel[(1,)](cupy.asarray(q), cupy.asarray(k), out, n_valid, BM=64, BN=64, D=64)
    scores = q.astype(np.float64) @ k.astype(np.float64)
    if n_valid < 64:
        scores[:, n_valid:] = -np.inf
    np.testing.assert_allclose(cupy.asnumpy(out), scores.max(axis=1), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("arch_wgmma", ["1", "0"])
@pytest.mark.parametrize("n_full,n_masked", [(2, 2), (0, 3), (3, 0), (1, 1)])
def test_an_operand_written_once_before_two_branch_loops_matches_numpy(n_full, n_masked, arch_wgmma, monkeypatch):
    """Q's tile is written before the first `if` (whether or not its loop runs) and read by both loops."""
    cupy = pytest.importorskip("cupy")
    monkeypatch.setenv("TRANSPILER_WGMMA", arch_wgmma)
    rng = _rng(10 * n_full + n_masked)
    q = rng.standard_normal((64, 64)).astype(np.float16)
    k = rng.standard_normal((4, 64, 64)).astype(np.float16)
    out = cupy.full((64, 64), np.nan, np.float32)
    two_branch_loops_kernel[(1,)](cupy.asarray(q), cupy.asarray(k), out, n_full, n_masked, BM=64, BN=64, D=64)
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    expected = np.zeros((64, 64))
    for j in range(n_full):
        expected += q64 @ k64[j]
    for j in range(n_full, n_full + n_masked):
        expected += np.where(np.arange(64)[None, :] < 7, q64 @ k64[j], 0.0)
    np.testing.assert_allclose(cupy.asnumpy(out), expected, rtol=2e-3, atol=5e-2)
