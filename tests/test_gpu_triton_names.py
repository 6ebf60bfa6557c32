"""GPU: `tl.reduce_or`, `tl.map_elementwise`, `tl.add`/`sub`/`mul`, `tl.const`, `tl.pi32_t`, `tl.condition` and
`tl.bitonic_merge` (tests/triton_names_kernels.py) compiled: NumPy's results, and Triton's on the same source where it is
installed. Fresh random inputs, sizes not multiples of the blocks, outputs poisoned before each launch."""
from pathlib import Path

import numpy as np
import pytest

import triton_names_kernels as kernels

pytestmark = pytest.mark.gpu
KERNELS = Path(kernels.__file__)
INT_TYPES = ["int8", "uint8", "int16", "int32", "int64"]


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _or_inputs(rng, dtype, n_rows, n_cols):
    bits = 8 * np.dtype(dtype).itemsize - (1 if np.dtype(dtype).kind == "i" else 0)
    x = (np.ones((n_rows, n_cols), np.uint64) << rng.integers(0, bits, (n_rows, n_cols)).astype(np.uint64))
    x = x.astype(dtype)
    x[rng.random(x.shape) < 0.3] = 0
    return x


def _run_or(module, torch, x):
    n_rows, n_cols = x.shape
    rows = torch.full((n_rows,), 99, dtype=getattr(torch, x.dtype.name), device="cuda")
    cols = torch.full((1, n_cols), 99, dtype=getattr(torch, x.dtype.name), device="cuda")
    module.or_rows_and_columns[(1,)](torch.from_numpy(x).cuda(), rows, cols, n_rows, n_cols, BLOCK_R=32, BLOCK_C=64)
    return rows.cpu().numpy(), cols.cpu().numpy()


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_reduce_or_matches_numpy(dtype):
    torch = _torch()
    rng = np.random.default_rng()
    x = _or_inputs(rng, dtype, 19 + int(rng.integers(0, 10)), 37 + int(rng.integers(0, 20)))
    rows, cols = _run_or(kernels, torch, x)
    np.testing.assert_array_equal(rows, np.bitwise_or.reduce(x, 1))
    np.testing.assert_array_equal(cols, np.bitwise_or.reduce(x, 0, keepdims=True))


def _run_mapped(module, torch, x, a, alpha, d=4):
    n = x.size
    y = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
    q = torch.full((n, d), -99, dtype=torch.int32, device="cuda")
    r = torch.full((n, d), -99, dtype=torch.int32, device="cuda")
    module.mapped[(-(-n // 128),)](torch.from_numpy(x).cuda(), torch.from_numpy(a).cuda(), y, q, r, n, alpha,
                                   BLOCK=128, D=d)
    return y.cpu().numpy(), q.cpu().numpy(), r.cpu().numpy()


def test_map_elementwise_matches_numpy():
    torch = _torch()
    rng = np.random.default_rng()
    n = 1000 + int(rng.integers(1, 127))
    x = rng.standard_normal(n).astype(np.float32)
    a = rng.integers(-500, 500, n).astype(np.int32)
    y, q, r = _run_mapped(kernels, torch, x, a, 1.5)
    selu = np.where(x > 0, x, 1.5 * (np.exp(x.astype(np.float64)) - 1))
    np.testing.assert_allclose(y, selu, rtol=2e-6, atol=1e-7)       # __expf: 2 ulp
    div = np.arange(1, 5)[None, :]
    qq = np.trunc(a[:, None] / div).astype(np.int32)
    np.testing.assert_array_equal(q, qq)
    np.testing.assert_array_equal(r, a[:, None] - qq * div)


def _run_named(module, torch, x, bits, steps):
    n = x.size
    y = torch.full((n,), -99, dtype=torch.int32, device="cuda")
    z = torch.full((n,), -99, dtype=torch.int32, device="cuda")
    module.named_operators[(-(-n // 128),)](torch.from_numpy(x).cuda(), torch.from_numpy(bits).cuda(), y, z, n,
                                            steps, BLOCK=128)
    return y.cpu().numpy(), z.cpu().numpy()


def test_named_operators_const_pi32_t_and_condition_match_numpy():
    torch = _torch()
    rng = np.random.default_rng()
    n = 700 + int(rng.integers(1, 127))
    x = rng.integers(-10000, 10000, n).astype(np.int32)
    bits = rng.standard_normal(n).astype(np.float32)
    y, z = _run_named(kernels, torch, x, bits, 5)
    np.testing.assert_array_equal(y, 4 * x - 7 + sum(range(5)))
    np.testing.assert_array_equal(z, bits.view(np.int32))


def _run_merged(module, torch, x, descending):
    y = torch.full(x.shape, float("nan"), dtype=torch.float32, device="cuda")
    module.merged_rows[(1,)](torch.from_numpy(x).cuda(), y, DESCENDING=descending, ROWS=x.shape[0], N=x.shape[1])
    return y.cpu().numpy()


@pytest.mark.parametrize("descending", [0, 1])
def test_bitonic_merge_sorts_bitonic_rows(descending):
    torch = _torch()
    from test_triton_names import bitonic_rows
    x = bitonic_rows(np.random.default_rng(), 8, 128)
    expected = np.sort(x, 1)
    np.testing.assert_array_equal(_run_merged(kernels, torch, x, descending),
                                  expected[:, ::-1] if descending else expected)


def test_same_results_as_triton():
    torch = _torch()
    from triton_twin import triton_twin_of
    twin = triton_twin_of(KERNELS)
    rng = np.random.default_rng()
    for dtype in INT_TYPES:
        x = _or_inputs(rng, dtype, 23, 41)
        for ours, theirs in zip(_run_or(kernels, torch, x), _run_or(twin, torch, x)):
            np.testing.assert_array_equal(ours, theirs)
    n = 900 + int(rng.integers(1, 127))
    x = rng.standard_normal(n).astype(np.float32)
    a = rng.integers(-500, 500, n).astype(np.int32)
    for ours, theirs in zip(_run_mapped(kernels, torch, x, a, 0.75), _run_mapped(twin, torch, x, a, 0.75)):
        np.testing.assert_array_equal(ours, theirs)
    xi = rng.integers(-10000, 10000, n).astype(np.int32)
    for ours, theirs in zip(_run_named(kernels, torch, xi, x, 3), _run_named(twin, torch, xi, x, 3)):
        np.testing.assert_array_equal(ours, theirs)
    from test_triton_names import bitonic_rows
    rows = bitonic_rows(rng, 8, 128)
    for descending in (0, 1):
        np.testing.assert_array_equal(_run_merged(kernels, torch, rows, descending),
                                      _run_merged(twin, torch, rows, descending))
