"""GPU: every block-pointer kernel against its NumPy float64 reference, on fresh random inputs, outputs poisoned;
and the block-pointer matmul at large aligned sizes (the cp.async pipeline), B stored either way, against
NumPy."""
import numpy as np
import pytest

from block_ptr_kernels import all_cases, bp_matmul_kernel, case_matmul
from feature_kernels import check

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in all_cases(np.random.default_rng(0))]


def run_on_gpu(case):
    import cupy
    dev_args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"][case["grid"]](*dev_args, num_warps=case.get("num_warps", 4), **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    return [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in dev_args]


@pytest.mark.parametrize("name", NAMES)
def test_block_pointer_kernel_matches_numpy_on_gpu(name):
    case = dict(all_cases(np.random.default_rng()))[name]
    check(case, run_on_gpu(case))


@pytest.mark.parametrize("b_stored_nk", [False, True], ids=["B_KxN", "B_NxK"])
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 1040, 528)])
def test_pipelined_block_pointer_matmul_matches_numpy_on_gpu(shape, b_stored_nk):
    """K and N multiples of 16 (rows provably 16-byte aligned): the cp.async pipeline; M and N not multiples
    of the 128x128 tile, K not a multiple of 32."""
    m, n, k = shape
    case = case_matmul(np.random.default_rng(), m=m, n=n, k=k, block=(128, 128, 32), b_stored_nk=b_stored_nk)
    case["constexprs"]["num_stages"] = 4
    variant = bp_matmul_kernel.compiled_variant(*case["args"], num_warps=4, **case["constexprs"])
    assert "cp_async" in variant.source.split("end of device helpers")[-1]
    check(case, run_on_gpu(case))
