"""GPU tests of `tl.dot` on tf32, int8 and fp8 (e4m3, e5m2) operands (marker `gpu`): on sm_90a warpgroup MMA
(k8 / k32) when both tiles are K-major (B given as [N, K]), mma.sync when B is N-major, fp8 on mma.sync m16n8k32
with TRANSPILER_WGMMA=0; 4 and 8 warps, M, N and K not multiples of the blocks (K = 336 and 208: rows 16-byte
aligned, staged by cp.async; K = 168: loaded through registers and written to tiles by the dot), the output
poisoned, against a float64 product of the rounded inputs, and Triton's build of the same kernel.

Run in a process of its own: a fault in tensor-core code poisons the CUDA context for the rest of the process.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler.language as tl
from dot_kernels import dot_kernel, dot_out_dtype_kernel

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

TORCH = {"float32": "float32", "int8": "int8", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}
ACC = {"float32": "float32", "int8": "int32", "fp8e4nv": "float32", "fp8e5": "float32"}
# relative Frobenius error against float64: tf32 inputs (2^-11 relative each); fp8 products are exact in fp32 but
# Hopper's fp8 tensor cores add them with fewer mantissa bits than fp32
REL_ERROR = {"float32": 5e-3, "fp8e4nv": 1e-2, "fp8e5": 1e-2}
CASES = [(dtype, block, warps, shape, b_t)
         for dtype in TORCH
         for block, warps, shape in (((128, 128, 64), 4, (300, 260, 336)), ((128, 64, 32), 8, (200, 100, 168)),
                                     ((64, 128, 64), 4, (70, 300, 208)))
         for b_t in (True, False)]


def _inputs(dtype, shape, seed):
    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if dtype == "int8":
        a = torch.randint(-128, 128, (m, k), device="cuda", generator=gen, dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), device="cuda", generator=gen, dtype=torch.int8)
        return a, b
    a = torch.randn((m, k), device="cuda", generator=gen) * 2
    b = torch.randn((k, n), device="cuda", generator=gen) * 2
    return a.to(getattr(torch, TORCH[dtype])), b.to(getattr(torch, TORCH[dtype]))


def _run(kernel, dtype, block, warps, shape, b_transposed, seed=0, lang=tl):
    m, n, k = shape
    a, b = _inputs(dtype, shape, seed)
    bt = b.t().contiguous() if b_transposed else b
    s_bk, s_bn = (bt.stride(1), bt.stride(0)) if b_transposed else (b.stride(0), b.stride(1))
    acc_torch = torch.int32 if dtype == "int8" else torch.float32
    c = torch.full((m, n), -12345 if dtype == "int8" else float("nan"), device="cuda", dtype=acc_torch)
    bm, bn, bk = block
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    kernel[grid](a, bt, c, m, n, k, a.stride(0), a.stride(1), s_bk, s_bn, c.stride(0), c.stride(1),
                 BM=bm, BN=bn, BK=bk, B_TRANSPOSED=b_transposed, ACC_IN_DOT=True,
                 PRECISION="tf32" if dtype == "float32" else None, ACC_TYPE=getattr(lang, ACC[dtype]),
                 num_warps=warps, num_stages=3)
    expected = a.double().cpu().numpy() @ b.double().cpu().numpy()
    return c, expected


def _check(dtype, c, expected):
    got = c.double().cpu().numpy()
    if dtype == "int8":
        assert np.array_equal(got, expected), f"{int((got != expected).sum())} of {got.size} elements differ"
        return
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    rel = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert rel < REL_ERROR[dtype], f"relative error {rel:.2e} (allowed {REL_ERROR[dtype]:.0e})"


@pytest.mark.parametrize("dtype,block,warps,shape,b_t", CASES,
                         ids=[f"{d}-{b[0]}x{b[1]}x{b[2]}-w{w}-{'kmajorB' if t else 'nmajorB'}"
                              for d, b, w, s, t in CASES])
def test_dot_dtype_against_float64(dtype, block, warps, shape, b_t):
    c, expected = _run(dot_kernel, dtype, block, warps, shape, b_t, seed=hash((dtype, block, b_t)) & 0xFFFF)
    _check(dtype, c, expected)


@pytest.mark.parametrize("dtype", ["fp8e4nv", "fp8e5"])
def test_fp8_dot_on_mma_sync(dtype, monkeypatch):
    monkeypatch.setenv("TRANSPILER_WGMMA", "0")
    for b_t in (True, False):
        c, expected = _run(dot_kernel, dtype, (64, 64, 64), 4, (150, 90, 200), b_t)
        _check(dtype, c, expected)


@pytest.mark.parametrize("dtype", ["float32", "int8", "fp8e4nv"])
def test_dot_dtype_agrees_with_triton(dtype):
    triton = pytest.importorskip("triton")
    sys.path.insert(0, str(ROOT / "bench"))
    from twins import load
    triton_kernels = load(ROOT / "tests" / "dot_kernels.py", "triton")
    ours, expected = _run(dot_out_dtype_kernel, dtype, (128, 128, 64), 4, (300, 260, 336), True, seed=3)
    theirs, _ = _run(triton_kernels.dot_out_dtype_kernel, dtype, (128, 128, 64), 4, (300, 260, 336), True, seed=3,
                     lang=triton.language)
    _check(dtype, ours, expected)
    _check(dtype, theirs, expected)
