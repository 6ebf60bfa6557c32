"""GPU: every scan kernel against its NumPy float64 reference, on fresh random inputs, outputs poisoned."""
import numpy as np
import pytest

from feature_kernels import check
from scan_kernels import all_cases

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in all_cases(np.random.default_rng(0))]


@pytest.mark.parametrize("name", NAMES)
def test_scan_matches_numpy_on_gpu(name):
    import cupy
    case = dict(all_cases(np.random.default_rng()))[name]
    dev_args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"][case["grid"]](*dev_args, num_warps=case.get("num_warps", 4), **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    outputs = [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in dev_args]
    check(case, outputs)
