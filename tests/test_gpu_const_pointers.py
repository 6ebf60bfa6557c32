"""GPU: kernels with `tl.const` pointer parameters compiled, against NumPy (float64) and against Triton on the
same source and inputs; the writes Triton refuses are refused by both."""
from pathlib import Path

import numpy as np
import pytest

import const_pointer_kernels as kernels
import test_const_pointers as cpu
import transpiler
from triton_twin import triton_twin_of

pytestmark = pytest.mark.gpu
SOURCE = Path(__file__).with_name("const_pointer_kernels.py")

# (kernel name, make (args, consts, grid, index of the output argument) from a generator, NumPy reference)
CASES = {
    "scaled_copy_kernel": (lambda x, n: ((x, np.full(n, np.nan, np.float32), n, 1.5), 1),
                           lambda x, n: x.astype(np.float64) * 1.5),
    "block_pointer_from_const_kernel": (lambda x, n: ((x, n), 0), lambda x, n: x.astype(np.float64) + 1),
    "cast_away_const_kernel": (lambda x, n: ((x, n), 0), lambda x, n: x.astype(np.float64) * 3),
    "const_on_helper_parameter_kernel": (lambda x, n: ((x, np.full(n, np.nan, np.float32), n), 1),
                                         lambda x, n: x.astype(np.float64) * 2),
    "const_on_integer_parameter_kernel": (lambda x, n: ((x, np.full(n, np.nan, np.float32), n), 1),
                                          lambda x, n: x.astype(np.float64) + n),
}
BLOCK, N = 128, 1000


def _run(kernel, name, x, to_device):
    make, _ = CASES[name]
    args, out = make(x.copy(), N)
    device = [to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[(-(-N // BLOCK),)](*device, BLOCK=BLOCK)
    return device[out]


@pytest.mark.parametrize("name", sorted(CASES))
def test_const_pointer_kernels_on_gpu_match_numpy(name):
    cupy = pytest.importorskip("cupy")
    x = np.random.default_rng().standard_normal(N).astype(np.float32)
    got = cupy.asnumpy(_run(getattr(kernels, name), name, x, cupy.asarray))
    np.testing.assert_allclose(got, CASES[name][1](x, N), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_const_pointer_kernels_on_gpu_match_triton(name):
    twin = triton_twin_of(SOURCE)
    import torch
    x = np.random.default_rng(11).standard_normal(N).astype(np.float32)
    results = [_run(k, name, x, lambda a: torch.from_numpy(a).cuda()).cpu().numpy()
               for k in (getattr(kernels, name), getattr(twin, name))]
    np.testing.assert_array_equal(*results)


def test_a_const_pointer_walked_through_a_loop_on_gpu_matches_numpy():
    cupy = pytest.importorskip("cupy")
    n, steps = 999, 4
    x = np.random.default_rng().standard_normal(n * steps).astype(np.float32)
    y = cupy.full(n, np.nan, cupy.float32)
    kernels.walk_const_pointer_kernel[(-(-n // BLOCK),)](cupy.asarray(x), y, n, steps, BLOCK=BLOCK)
    np.testing.assert_allclose(cupy.asnumpy(y), x.astype(np.float64).reshape(steps, n).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", [w[0] for w in cpu.WRITES] + [m[0] for m in cpu.MIXES],
                         ids=[w[0].__name__ for w in cpu.WRITES] + [m[0].__name__ for m in cpu.MIXES])
def test_triton_and_we_both_refuse_what_tl_const_forbids(kernel):
    twin = triton_twin_of(SOURCE)
    import torch
    import triton
    x = torch.randn(64, device="cuda")
    y = torch.randn(64, device="cuda")
    with pytest.raises(triton.CompilationError):
        getattr(twin, kernel.__name__)[(1,)](x, y, 5, BLOCK=16)
    with pytest.raises(transpiler.TranspilerError):
        kernel[(1,)](x, y, 5, BLOCK=16)
