"""GPU: kernels with assigned numbers (`scale = 100`, `eps = 1e-3`, `acc = 0.0`), compiled and launched, against
NumPy computed in Triton's types, and against Triton 3.6 on the same source where it is installed."""
from pathlib import Path

import numpy as np
import pytest

import assigned_number_kernels as kernels

pytestmark = pytest.mark.gpu

KERNELS = Path(kernels.__file__)


def _cases(rng):
    """(kernel name, inputs, output dtype, grid, constexprs, NumPy reference) on fresh ragged inputs."""
    n = 1000 + int(rng.integers(1, 200))
    x8 = rng.integers(-128, 128, size=n).astype(np.int8)
    x16 = (rng.standard_normal(n) * 3).astype(np.float16)
    parts = (rng.standard_normal(4 * n) * 100).astype(np.float16)
    summed = sum(parts[p * n:(p + 1) * n].astype(np.float32) for p in range(4))
    return [
        ("scaled_int8_kernel", x8, np.int32, n, dict(BLOCK=2048), x8.astype(np.int32) * 100),
        ("constexpr_scale_int8_kernel", x8, np.int32, n, dict(BLOCK=2048), (x8 * np.int8(100)).astype(np.int32)),
        ("eps_fp16_kernel", x16, np.float32, n, dict(BLOCK=2048), x16.astype(np.float32) + np.float32(1e-3)),
        ("unrolled_sum_fp16_kernel", parts, np.float32, n, dict(BLOCK=2048, PARTS=4), summed),
        # numbers a helper returns (`return 100`, `return 3, 1e-3`): typed scalars in Triton too
        ("helper_gain_int8_kernel", x8, np.int32, n, dict(BLOCK=2048), x8.astype(np.int32) * 100),
        ("helper_eps_fp16_kernel", x16 * np.float16(100), np.float32, n, dict(BLOCK=2048),
         (x16 * np.float16(100) + np.float16(3)).astype(np.float32) + np.float32(1e-3)),
    ]


def test_assigned_numbers_on_gpu():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    for name, x, out_dtype, n, constexprs, expected in _cases(rng):
        out = cupy.full(n, -7, out_dtype)
        getattr(kernels, name)[(1,)](cupy.asarray(x), out, n, **constexprs)
        np.testing.assert_array_equal(cupy.asnumpy(out), expected, err_msg=name)
    x = rng.integers(-50, 50, size=1001).astype(np.int16)
    out = cupy.full(1001, np.nan, np.float32)
    kernels.tuple_and_half_block_kernel[(-(-1001 // 32),)](cupy.asarray(x), out, 1001, BLOCK=64)
    np.testing.assert_array_equal(cupy.asnumpy(out), (x.astype(np.int32) + 3).astype(np.float32) * np.float32(0.5))


def test_same_types_as_triton():
    from triton_twin import triton_twin_of
    twin = triton_twin_of(KERNELS)
    import torch
    rng = np.random.default_rng()
    for name, x, out_dtype, n, constexprs, expected in _cases(rng):
        results = []
        for kernel in (getattr(kernels, name), getattr(twin, name)):
            out = torch.full((n,), -7, dtype=getattr(torch, np.dtype(out_dtype).name), device="cuda")
            kernel[(1,)](torch.from_numpy(x).cuda(), out, n, **constexprs)
            results.append(out.cpu().numpy())
        np.testing.assert_array_equal(results[0], results[1], err_msg=name)
        np.testing.assert_array_equal(results[1], expected, err_msg=f"Triton's {name}")
