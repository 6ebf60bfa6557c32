"""GPU tests of `tl.dot` (marker `gpu`): every dot case against a float64 product of the same inputs, on
fresh random data, with M, N and K not multiples of the blocks and the output poisoned before the launch;
and the matmul example (grouped order, fused leaky ReLU, fp16 and bf16) on odd shapes.

Run in a process of its own (bench/gpu_tests.sh does): a fault in tensor-core code poisons the CUDA context
for the rest of the process.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from dot_kernels import (AT_CASES, CASES, REL_ERROR, dot_at_kernel, dot_epilogue_kernel, dot_kernel, launch_args,
                         make_inputs, reference)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

pytestmark = pytest.mark.gpu


def _device_arrays(case, a, b):
    """A, B (B as [N, K] when the case says so) and a NaN-poisoned C, in CuPy or torch (bf16)."""
    m, n, _ = case.shape
    if case.dtype == "bfloat16":
        torch = pytest.importorskip("torch")
        ta = torch.tensor(a, dtype=torch.bfloat16, device="cuda")
        tb = torch.tensor(b.T.copy() if case.b_transposed else b, dtype=torch.bfloat16, device="cuda")
        c = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
        a64 = ta.double().cpu().numpy()
        b64 = tb.double().cpu().numpy()
        b64 = b64.T if case.b_transposed else b64
        sb = tb.stride()
        return ta, tb, c, tuple(ta.stride()), ((sb[1], sb[0]) if case.b_transposed else tuple(sb)), tuple(c.stride()), a64, b64
    import cupy
    np_dtype = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "float64": np.float64}[case.dtype]
    ha = a.astype(np_dtype)
    hb = b.astype(np_dtype)
    da = cupy.asarray(ha)
    db = cupy.asarray(hb.T.copy() if case.b_transposed else hb)
    if case.acc_dtype == "int32":
        dc = cupy.full((m, n), -12345, dtype=np.int32)
    else:
        dc = cupy.full((m, n), np.nan, dtype=case.acc_dtype)

    def strides(x):
        return tuple(s // x.itemsize for s in x.strides)
    sb = strides(db)
    return (da, db, dc, strides(da), ((sb[1], sb[0]) if case.b_transposed else sb), strides(dc),
            ha.astype(np.float64), hb.astype(np.float64))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dot_case(case):
    rng = np.random.default_rng(hash(case.id) & 0xFFFFFFFF)
    a, b = make_inputs(case, rng)
    da, db, dc, sa, sb, sc, a64, b64 = _device_arrays(case, a, b)
    grid, args, options = launch_args(case, da, db, dc, sa, sb, sc)
    dot_kernel[grid](*args, **options)
    got = dc.double().cpu().numpy() if hasattr(dc, "double") else dc.get().astype(np.float64)
    expected = reference(case, a64, b64)
    if case.dtype == "int8":
        assert got.dtype == np.float64 and np.array_equal(got, expected.astype(np.float64)), \
            f"{int((got != expected).sum())} of {got.size} elements differ"
        return
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    key = f"float32/{case.precision}" if case.dtype == "float32" else case.dtype
    rel = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert rel < REL_ERROR[key], f"relative error {rel:.2e} (allowed {REL_ERROR[key]:.0e})"


def test_dot_epilogue_bias_relu_rowmax_cast():
    import cupy
    rng = np.random.default_rng()
    m, n, k = 200, 60, 50
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    out = cupy.full((m, n), np.nan, np.float16)
    row_max = cupy.full(m, np.nan, np.float32)
    dot_epilogue_kernel[(transpiler_cdiv(m, 64),)](cupy.asarray(a), cupy.asarray(b), cupy.asarray(bias), out, row_max,
                                                   m, n, k, BM=64, BN=64, BK=64)
    c = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0.0)
    np.testing.assert_allclose(out.get().astype(np.float64), c, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(row_max.get(), c.max(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bm, bn, bk, warps, stages, shape", AT_CASES)
def test_dot_with_a_given_transposed(bm, bn, bk, warps, stages, shape):
    """A stored [K, M] and transposed in the kernel: on sm_90a wgmma reads it M-major (transpose bit)."""
    import cupy
    rng = np.random.default_rng()
    m, n, k = shape
    at = rng.standard_normal((k, m)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = cupy.full((m, n), np.nan, np.float32)
    dot_at_kernel[(transpiler_cdiv(m, bm), transpiler_cdiv(n, bn))](cupy.asarray(at), cupy.asarray(b), c, m, n, k,
                                                                    BM=bm, BN=bn, BK=bk, num_warps=warps,
                                                                    num_stages=stages)
    got = c.get().astype(np.float64)
    expected = at.astype(np.float64).T @ b.astype(np.float64)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    rel = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert rel < REL_ERROR["float16"], f"relative error {rel:.2e}"


def transpiler_cdiv(a, b):
    return -(-a // b)


@pytest.mark.parametrize("dtype, shape, activation", [
    ("float16", (1000, 1100, 333), ""),
    ("float16", (257, 129, 200), "leaky_relu"),
    ("bfloat16", (777, 555, 1000), "leaky_relu"),
    ("float16", (16, 300, 1024), ""),
])
def test_matmul_example(dtype, shape, activation):
    import matmul as example
    import _harness as H
    lib = H.pick_library(dtype, True)
    if lib is None:
        pytest.skip("bf16 needs torch with CUDA")
    example.run_case(lib, dtype=dtype, shape=shape, activation=activation)
