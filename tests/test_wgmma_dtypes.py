"""CPU tests of `tl.dot` beyond fp16/bf16 on the tensor cores: warpgroup MMA on sm_90a for tf32 (k8), int8 (k32,
int32 product) and fp8 e4m3/e5m2 (k32) when both tiles are K-major, mma.sync (with the reason in the decisions)
when one is not; fp8 dots on mma.sync m16n8k32 for any device from sm_89 (and a located refusal below it), FMA when
K is not a multiple of 32; the fp8 formats CUDA lacks refused; the interpreter's fp8 dot against float64."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import dtypes
from transpiler.analysis.arch_requirements import required_arch
from transpiler.analysis.tensor_cores import plan_wgmma
from transpiler.errors import DTypeError
from transpiler.numerics import fp8
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dot_kernels import dot_kernel  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")
ACC = {tl.float32: tl.float32, tl.int8: tl.int32, tl.float8e4nv: tl.float32, tl.float8e5: tl.float32}
# dtype -> the PTX of its wgmma (m64n128, K per instruction) and of its mma.sync
WGMMA_PTX = {tl.float32: "m64n128k8.f32.tf32.tf32", tl.int8: "m64n128k32.s32.s8.s8",
             tl.float8e4nv: "m64n128k32.f32.e4m3.e4m3", tl.float8e5: "m64n128k32.f32.e5m2.e5m2"}
MMA_PTX = {tl.float32: "m16n8k8.row.col.f32.tf32.tf32.f32", tl.int8: "m16n8k32.row.col.s32.s8.s8.s32",
           tl.float8e4nv: "m16n8k32.row.col.f32.e4m3.e4m3.f32", tl.float8e5: "m16n8k32.row.col.f32.e5m2.e5m2.f32"}


def _launch(dtype, b_transposed, block=(128, 128, 64), warps=4):
    """Arguments of dot_kernel over 1024^3 (rows 16-byte aligned: the loads are staged); with `b_transposed` B
    is given as [N, K] (K contiguous: a K-major tile), else as [K, N]."""
    s, c = transpiler.StandIn(dtype), transpiler.StandIn(ACC[dtype])
    s_bk, s_bn = (1, 1024) if b_transposed else (1024, 1)
    args = (s, s, c, 1024, 1024, 1024, 1024, 1, s_bk, s_bn, 1024, 1)
    kw = dict(BM=block[0], BN=block[1], BK=block[2], B_TRANSPOSED=b_transposed, ACC_IN_DOT=True, PRECISION="tf32",
              ACC_TYPE=ACC[dtype], num_warps=warps, num_stages=3)
    return args, kw


def _instructions(ptx):
    return sorted(set(re.findall(r"(?:wgmma\.mma_async\.sync\.aligned|mma\.sync\.aligned)\.(\S+)", ptx)))


@needs_nvrtc
@pytest.mark.parametrize("dtype", list(WGMMA_PTX), ids=lambda d: d.name)
def test_k_major_operands_take_wgmma_on_sm90a(dtype):
    args, kw = _launch(dtype, True)
    variant = dot_kernel.compiled_variant(*args, arch="sm_90a", **kw)
    result = compile_offline(variant.source, "sm_90a")
    assert _instructions(result.ptx) == [WGMMA_PTX[dtype]]
    assert "ldmatrix" not in result.ptx
    assert result.spill_bytes == 0 and not result.warnings, (result.spill_bytes, result.warnings)
    explained = dot_kernel.explain(*args, arch="sm_90a", **kw)
    assert f"wgmma.mma_async {WGMMA_PTX[dtype].split('.')[0]} ({dtype.name})" in explained


@needs_nvrtc
@pytest.mark.parametrize("dtype", list(WGMMA_PTX), ids=lambda d: d.name)
def test_an_n_major_b_keeps_mma_sync_with_the_reason(dtype):
    args, kw = _launch(dtype, False, block=(64, 64, 32))
    explained = dot_kernel.explain(*args, arch="sm_90a", **kw)
    assert "rather than wgmma" in explained and "reads only K-major tiles, and B is loaded" in explained
    result = compile_offline(dot_kernel.compiled_variant(*args, arch="sm_90a", **kw).source, "sm_90a")
    assert _instructions(result.ptx) == [MMA_PTX[dtype]]
    assert not result.warnings
    # Known cost, not investigated: B's fp8 fragments built byte by byte leave ptxas an 8-byte stack frame (24
    # bytes of spill traffic at 80 registers; the same kernel on int8 has none).
    assert result.spill_bytes <= (32 if dtype.is_fp8() else 0), result.log


def test_wgmma_types_and_their_limits():
    ok = dict(k_major=(True, True))
    for dtype, k in ((dtypes.float32, 8), (dtypes.int8, 32), (dtypes.float8e4nv, 32), (dtypes.float8e5, 32)):
        acc = dtypes.int32 if dtype is dtypes.int8 else dtypes.float32
        shape, why = plan_wgmma(64, 64, 64, dtype, acc, 4, **ok)
        assert shape is not None and shape.k == k and not shape.transposable, why
        shape, why = plan_wgmma(64, 64, 64, dtype, acc, 4, k_major=(False, True))
        assert shape is None and "K-major" in why and "A is loaded" in why
        shape, why = plan_wgmma(64, 64, 64, dtype, acc, 4, a_in_registers=True, **ok)
        assert shape is None and "register-A form" in why
    shape, why = plan_wgmma(64, 64, 64, dtypes.float32, dtypes.float32, 4, precision="ieee", **ok)
    assert shape is None and "ieee" in why
    shape, why = plan_wgmma(64, 64, 48, dtypes.int8, dtypes.int32, 4, **ok)
    assert shape is None and "K of 32" in why


@needs_nvrtc
@pytest.mark.parametrize("dtype", [tl.float8e4nv, tl.float8e5], ids=lambda d: d.name)
def test_fp8_dot_is_mma_sync_from_sm89_and_needs_it(dtype):
    args, kw = _launch(dtype, False, block=(64, 64, 32))
    variant = dot_kernel.compiled_variant(*args, **kw)
    result = compile_offline(variant.source, "sm_89")
    assert _instructions(result.ptx) == [MMA_PTX[dtype]]
    assert result.spill_bytes == 0 and not result.warnings
    ir, _ = _ir_and_analysis(args, kw)
    need = required_arch(ir)
    assert need.capability == 89 and "fp8" in need.what
    # K = 16 is not a multiple of the instruction's 32: FMA on CUDA cores
    args, kw = _launch(dtype, True, block=(32, 32, 16))
    assert "FMA on CUDA cores" in dot_kernel.explain(*args, **kw)
    result = compile_offline(dot_kernel.compiled_variant(*args, **kw).source, "sm_89")
    assert "mma.sync" not in result.ptx and result.spill_bytes == 0


def _ir_and_analysis(args, kw):
    return dot_kernel.analysis(*args, **kw)


@transpiler.jit
def fp8_dot_kernel(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    tl.store(C + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("dtype", [tl.float8e4nv, tl.float8e5], ids=lambda d: d.name)
def test_interpreted_fp8_dot_matches_float64(dtype):
    rng = np.random.default_rng(5)
    a_codes, b_codes = (fp8.encode(rng.standard_normal(shape) * 3, dtype) for shape in ((32, 64), (64, 16)))
    c = np.full((32, 16), np.nan, np.float32)
    fp8_dot_kernel.interpret[(1,)](transpiler.reinterpret(a_codes, dtype), transpiler.reinterpret(b_codes, dtype), c,
                                   BM=32, BN=16, BK=64)
    expected = fp8.decode(a_codes, dtype).astype(np.float64) @ fp8.decode(b_codes, dtype).astype(np.float64)
    np.testing.assert_allclose(c, expected.astype(np.float32), rtol=1e-6, atol=1e-5)
    assert np.abs(expected).max() > 10     # not a product of zeros


@transpiler.jit
def fp8_dot_fp16_out_kernel(A, C, BM: tl.constexpr):
    r = tl.arange(0, BM)
    a = tl.load(A + r[:, None] * BM + r[None, :])
    tl.store(C + r[:, None] * BM + r[None, :], tl.dot(a, a, out_dtype=tl.float16))


def test_fp8_dot_refusals_are_located():
    q = transpiler.reinterpret(np.zeros(256, np.uint8), tl.float8e4nv)
    c = np.zeros(256, np.float16)
    for run in (lambda: fp8_dot_fp16_out_kernel.cuda_source(q, c, BM=16),
                lambda: fp8_dot_fp16_out_kernel.interpret[(1,)](q, c, BM=16)):
        with pytest.raises(DTypeError, match="not supported yet: tl.dot: out_dtype=tl.float16 for fp8 inputs"):
            run()
