"""GPU: `tl.gather` through shared memory (emit_cuda/rules/gather.py) against NumPy (an index outside the source
gives 0) and, on indices inside the source, against Triton on the same source; a gather inside a loop (its
scratch rewritten each iteration). Fresh random inputs, sizes not multiples of the blocks, outputs poisoned."""
from pathlib import Path

import numpy as np
import pytest

import gather_kernels as g
from test_gather import SHAPES, gather_case, gather_reference

pytestmark = pytest.mark.gpu


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _run(module, torch, x, idx, axis, bm, bn):
    m, n = x.shape
    y = torch.full((m, n), 77, dtype=getattr(torch, x.dtype.name), device="cuda")
    module.gather_2d[(1,)](torch.from_numpy(x).cuda(), torch.from_numpy(idx).cuda(), y, m, n, AXIS=axis,
                           BLOCK_M=bm, BLOCK_N=bn)
    return y.cpu().numpy()


@pytest.mark.parametrize("m,n,bm,bn,axis,dtype", SHAPES)
def test_matches_numpy(m, n, bm, bn, axis, dtype):
    torch = _torch()
    x, idx = gather_case(np.random.default_rng(), m, n, axis, dtype)
    np.testing.assert_array_equal(_run(g, torch, x, idx, axis, bm, bn), gather_reference(x, idx, axis))


def test_in_a_loop_matches_numpy():
    torch = _torch()
    rng = np.random.default_rng()
    n = 100 + int(rng.integers(0, 20))
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(0, n, n).astype(np.int32)
    y = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
    g.gather_in_loop[(1,)](torch.from_numpy(x).cuda(), torch.from_numpy(idx).cuda(), y, n, 3, BLOCK=128)
    expected = x.copy()
    for _ in range(3):
        expected = expected[idx] * 2.0
    np.testing.assert_array_equal(y.cpu().numpy(), expected)


def test_same_results_as_triton():
    torch = _torch()
    from triton_twin import triton_twin_of
    twin = triton_twin_of(Path(g.__file__))
    rng = np.random.default_rng()
    for m, n, bm, bn, axis, dtype in SHAPES:
        x, idx = gather_case(rng, m, n, axis, dtype, outside=False)
        np.testing.assert_array_equal(_run(g, torch, x, idx, axis, bm, bn), _run(twin, torch, x, idx, axis, bm, bn))
