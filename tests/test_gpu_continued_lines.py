"""GPU: a kernel whose Python lines are continued with a backslash, compiled and launched, against NumPy (both
stores happen: before the fix, the first statement after a continued line's comment was spliced into it)."""
import numpy as np
import pytest

from continued_line_kernels import continued_store_kernel, reference

pytestmark = pytest.mark.gpu


def test_continued_lines_on_gpu():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    n = 1000 + int(rng.integers(1, 100))
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = cupy.full(2 * n, np.nan, np.float32)
    continued_store_kernel[(-(-n // 256),)](cupy.asarray(x), cupy.asarray(y), out, n, BLOCK=256)
    got = cupy.asnumpy(out)
    first, second = reference(x, y)
    np.testing.assert_allclose(got[:n], first, rtol=1e-6)
    np.testing.assert_array_equal(got[n:], second)
