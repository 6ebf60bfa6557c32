"""GPU: every kernel of `tests/unseen_kernels.py` (and every libdevice function) against its NumPy float64
reference, on fresh random inputs, outputs poisoned before launch."""
import numpy as np
import pytest

from unseen_kernels import all_cases, check, launch_options, libdevice_cases, print_kernel

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in all_cases(np.random.default_rng(0))]
LIBDEVICE_NAMES = [c[0] for c in libdevice_cases(np.random.default_rng(0))]


def _run(case):
    import cupy
    dev_args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"][case["grid"]](*dev_args, **launch_options(case), **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    check(case, [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in dev_args])


@pytest.mark.parametrize("name", NAMES)
def test_unseen_kernel_matches_numpy_on_gpu(name):
    _run(dict(all_cases(np.random.default_rng()))[name])


@pytest.mark.parametrize("name", LIBDEVICE_NAMES)
def test_libdevice_function_matches_numpy_on_gpu(name):
    _run(dict(libdevice_cases(np.random.default_rng()))[name])


def test_device_print_runs_on_gpu(capfd):
    import cupy
    x = cupy.asarray(np.arange(100, dtype=np.float32) + 0.5)
    print_kernel[(2,)](x, 100, BLOCK=64)
    cupy.cuda.runtime.deviceSynchronize()
    out = capfd.readouterr().out
    assert "99.5" in out and "pid" in out
