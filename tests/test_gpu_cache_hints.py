"""GPU: a copy through every cache modifier and eviction policy gives the values NumPy computes (fresh random
inputs, a size not a multiple of the block, the output poisoned before the launch)."""
import numpy as np
import pytest

from cache_hint_kernels import cases, hinted_copy

pytestmark = pytest.mark.gpu
CASES = cases()


@pytest.mark.parametrize("name,constexprs", CASES, ids=[c[0] for c in CASES])
def test_hinted_copy_matches_numpy(name, constexprs):
    import cupy
    n = 4093
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = cupy.full(n + 7, np.nan, np.float32)        # poisoned, and a tail the kernel must not touch
    hinted_copy[(triton_cdiv(n, 512),)](out, cupy.asarray(x), n, BLOCK=512, **constexprs)
    got = cupy.asnumpy(out)
    np.testing.assert_allclose(got[:n], x.astype(np.float64) * 2.0 + 1.0, rtol=1e-6, atol=1e-6)
    assert np.isnan(got[n:]).all()


def triton_cdiv(a, b):
    return -(-a // b)
