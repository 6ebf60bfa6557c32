"""GPU: a pointer as a condition (`if BIAS:` / `if not BIAS:`) compiled, against NumPy and against Triton on the
same source and inputs (Triton compares the pointer with null)."""
from pathlib import Path

import numpy as np
import pytest

import test_pointer_condition as cpu
from triton_twin import triton_twin_of

pytestmark = pytest.mark.gpu


def _run(kernel, args, consts, grid, to_device):
    device = [to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*device, **consts)
    return device[2]


@pytest.mark.parametrize("with_bias", [True, False])
def test_pointer_condition_on_gpu_matches_numpy(with_bias):
    cupy = pytest.importorskip("cupy")
    args, consts, grid, out, want = cpu.case(np.random.default_rng(), with_bias)
    got = cupy.asnumpy(_run(cpu.kernels.add_optional_bias_kernel, args, consts, grid, cupy.asarray))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("with_bias", [True, False])
def test_pointer_condition_on_gpu_matches_triton(with_bias):
    twin = triton_twin_of(Path(__file__).with_name("pointer_condition_kernels.py"))
    import torch
    results = []
    for kernel in (cpu.kernels.add_optional_bias_kernel, twin.add_optional_bias_kernel):
        args, consts, grid = cpu.case(np.random.default_rng(7), with_bias)[:3]
        results.append(_run(kernel, args, consts, grid, lambda a: torch.from_numpy(a).cuda()).cpu().numpy())
    np.testing.assert_array_equal(*results)
