"""GPU: every atomic kernel (tests/atomic_kernels.py) on fresh random inputs, checked against NumPy: counts
and integer results exactly, float sums within the dtype's tolerance; order-dependent results (which
program wins a compare-and-swap, which old value a program saw) by what every order must give."""
import numpy as np
import pytest

import atomic_kernels as A

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in A.all_cases(np.random.default_rng(0))]


@pytest.mark.parametrize("repeat", range(3))
@pytest.mark.parametrize("name", NAMES)
def test_atomic_kernel_matches_numpy_on_gpu(name, repeat):
    import cupy
    case = dict(A.all_cases(np.random.default_rng()))[name]
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    dev_args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"][case["grid"]](*dev_args, num_warps=case["num_warps"], **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    after = [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in dev_args]
    case["check"](before, after)


def test_bf16_atomic_add_on_gpu():
    import cupy
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    case = A.case_add(rng, np.float32, n=1000, slots=64)     # partial sums below 256: exact in bf16 too
    p, x, n = case["args"]
    tp, tx = (torch.from_numpy(a).cuda().to(torch.bfloat16) for a in (p, x))
    case["kernel"][case["grid"]](tp, tx, n, num_warps=4, **case["constexprs"])
    cupy.cuda.runtime.deviceSynchronize()
    case["check"]([p, x, n], [tp.float().cpu().numpy(), x, n])
