"""GPU: accumulators whose layout conversion runs in chunks (`analysis/conversion_chunks.py`) store the right
values: a 128 x 256 and a 256 x 256 fp32 tile against NumPy, outputs poisoned before launch."""
import numpy as np
import pytest

from test_conversion_chunks import _big_tile_gemm

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("bm,bn,warps,chunks", [(128, 256, 8, 2), (256, 256, 16, 4)])
def test_chunked_accumulator_conversion_matches_numpy(bm, bn, warps, chunks):
    import cupy
    rng = np.random.default_rng()
    m, n, k = 700, 608, 320     # rows 16-byte aligned: the loads are pipelined
    a = (rng.standard_normal((m, k)) * 0.3).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 0.3).astype(np.float16)
    c = cupy.full((m, n), np.nan, np.float16)
    p = cupy.full((bm, bn), np.nan, np.float32)
    args = (cupy.asarray(a), cupy.asarray(b), c, p, m, n, k)
    src = _big_tile_gemm.cuda_source(*args, BM=bm, BN=bn, BK=64, num_warps=warps, num_stages=2)
    assert f"through shared memory in {chunks} chunks" in src
    _big_tile_gemm[(-(-m // bm), -(-n // bn))](*args, BM=bm, BN=bn, BK=64, num_warps=warps, num_stages=2)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(cupy.asnumpy(c).astype(np.float64), ref, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(cupy.asnumpy(p).astype(np.float64), ref[:bm, :bn], rtol=2e-3, atol=2e-3)
