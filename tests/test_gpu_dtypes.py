"""GPU: the dtype matrix (`dtype_kernels.py`) against NumPy, on fresh random inputs, outputs poisoned.

Arrays go to the GPU as CuPy arrays, except bf16 ones, which only torch holds (so those launches mix CuPy
and torch arguments, as a user's may). Sizes are not multiples of the block; outputs are poisoned (NaN, or
MIN + 7 for integers) so an element the kernel never wrote fails the comparison.
"""
import numpy as np
import pytest

import dtype_kernels as D

pytestmark = pytest.mark.gpu

IDS = [c[0] for c in D.all_cases(np.random.default_rng(0))]


def to_device(case):
    import cupy
    out = []
    for i, a in enumerate(case["args"]):
        if i in case["bf16"]:
            torch = pytest.importorskip("torch")
            out.append(torch.from_numpy(np.ascontiguousarray(a, np.float32)).cuda().to(torch.bfloat16))
        elif isinstance(a, np.ndarray):
            out.append(cupy.asarray(a))
        else:
            out.append(a)
    return out


def to_host(a):
    import cupy
    if isinstance(a, cupy.ndarray):
        return cupy.asnumpy(a)
    if type(a).__module__.startswith("torch"):
        return a.float().cpu().numpy()
    return a


@pytest.mark.parametrize("name", IDS)
def test_dtype_case_matches_numpy_on_gpu(name):
    import cupy
    case = dict(D.all_cases(np.random.default_rng()))[name]
    dev = to_device(case)
    case["kernel"][case["grid"]](*dev, num_warps=case.get("num_warps", 4), **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    D.check(case, [to_host(a) for a in dev])
