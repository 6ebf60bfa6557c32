"""`tl.dot_scaled` as Triton computes it without microscaled tensor cores (`transpiler/scaled_dot.py`): on the
interpreter against values decoded from the formats' definitions (independent of our conversions), through NVRTC
for sm_80 and sm_90a, and refusals of what Triton refuses."""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
import dot_scaled_kernels as kernels
from transpiler.errors import DTypeError, ShapeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float64)          # the OCP MX spec's e2m1 magnitudes
BM, BN, BK = 32, 32, 64


def decode_fp8(codes, e_bits, m_bits, bias):
    c = codes.astype(np.int64)
    e, m = (c >> m_bits) & ((1 << e_bits) - 1), c & ((1 << m_bits) - 1)
    v = np.where(e == 0, m * 2.0 ** (1 - bias - m_bits), (1 + m / 2.0 ** m_bits) * 2.0 ** (e - bias))
    return np.where(c & 0x80, -v, v)


def values(rng, fmt, shape, packed_axis):
    """(the array the kernel loads, its float64 values)"""
    if fmt == "e2m1":
        nibbles = rng.integers(0, 16, shape)
        vals = np.where(nibbles & 8, -1.0, 1.0) * E2M1[nibbles & 7]
        lo, hi = np.take(nibbles, range(0, shape[packed_axis], 2), packed_axis), \
            np.take(nibbles, range(1, shape[packed_axis], 2), packed_axis)
        return (lo | hi << 4).astype(np.uint8), vals
    codes = rng.integers(0, 0x70, shape).astype(np.uint8) | (rng.integers(0, 2, shape).astype(np.uint8) << 7)
    vals = decode_fp8(codes, 4, 3, 7) if fmt == "e4m3" else decode_fp8(codes, 5, 2, 15)
    return codes, vals


def case(rng, a_fmt, b_fmt, a_scaled=True, b_scaled=True, m=45, n=37, nan_scale=False, fast_math=False):
    a, av = values(rng, a_fmt, (m, BK), 1)
    b, bv = values(rng, b_fmt, (BK, n), 0)
    sa = rng.integers(120, 134, (m, BK // 32)).astype(np.uint8)
    sb = rng.integers(120, 134, (n, BK // 32)).astype(np.uint8)
    if nan_scale:               # row 3's second group: the NaN code, over values of one sign (1.0 in e4m3)
        sa[3, 1] = 0xFF
        a[3, 32:], av[3, 32:], b[32:, :], bv[32:, :] = 0x38, 1.0, 0x38, 1.0
    fa = np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, 1) if a_scaled else 1.0
    fb = np.repeat(2.0 ** (sb.astype(np.float64) - 127), 32, 1).T if b_scaled else 1.0
    if nan_scale and not fast_math:
        fa = np.where(np.repeat(sa == 0xFF, 32, 1), np.nan, fa)
    want = (av * fa) @ (bv * fb)
    out = np.full((m, n), np.nan, np.float32)
    args = (a, sa, b, sb, out, m, n, a.shape[1], b.shape[1])
    consts = dict(BM=BM, BN=BN, BK=BK, A_FORMAT=a_fmt, B_FORMAT=b_fmt, HAS_A_SCALE=a_scaled, HAS_B_SCALE=b_scaled,
                  FAST_MATH=fast_math)
    grid = (transpiler.cdiv(m, BM), transpiler.cdiv(n, BN))
    tolerance = 1e-6 * (np.abs(av * fa) @ np.abs(bv * fb)) + 1e-30       # fp32 accumulation of exact products
    return kernels.dot_scaled_kernel, args, consts, grid, out, want, tolerance


FORMAT_PAIRS = [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e2m1", "e2m1"), ("e2m1", "e5m2")]


@pytest.mark.parametrize("a_fmt,b_fmt", FORMAT_PAIRS)
def test_scaled_product_matches_the_formats_definitions(a_fmt, b_fmt):
    kernel, args, consts, grid, out, want, tol = case(np.random.default_rng(1), a_fmt, b_fmt)
    kernel.interpret[grid](*args, **consts)
    assert np.all(np.abs(out - want) <= tol)


@pytest.mark.parametrize("a_scaled,b_scaled", [(False, True), (True, False), (False, False)])
def test_a_missing_scale_multiplies_by_one(a_scaled, b_scaled):
    kernel, args, consts, grid, out, want, tol = case(np.random.default_rng(2), "e4m3", "e2m1", a_scaled, b_scaled)
    kernel.interpret[grid](*args, **consts)
    assert np.all(np.abs(out - want) <= tol)


def test_scale_code_255_is_nan_unless_fast_math():
    kernel, args, consts, grid, out, want, tol = case(np.random.default_rng(3), "e4m3", "e4m3", nan_scale=True)
    kernel.interpret[grid](*args, **consts)
    assert np.isnan(out[3]).all() and not np.isnan(np.delete(out, 3, 0)).any()
    kernel, args, consts, grid, out, want, tol = case(np.random.default_rng(3), "e4m3", "e4m3", nan_scale=True,
                                                       fast_math=True)
    kernel.interpret[grid](*args, **consts)
    assert np.isposinf(out[3]).all()        # the code read as 2 ** 128 (bf16 inf) times positive values
    assert np.all(np.abs(np.delete(out - want, 3, 0)) <= np.delete(tol, 3, 0))


@needs_nvrtc
@pytest.mark.parametrize("a_fmt,b_fmt", FORMAT_PAIRS)
def test_scaled_product_compiles_without_warnings(a_fmt, b_fmt):
    kernel, args, consts = case(np.random.default_rng(4), a_fmt, b_fmt)[:3]
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(kernel.cuda_source(*args, **consts, arch=arch), arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


@transpiler.jit
def _misused_dot_scaled(A, S, C, WHAT: tl.constexpr):
    r = tl.arange(0, 32)
    k = tl.arange(0, 64)
    a = tl.load(A + r[:, None] * 64 + k[None, :])
    s = tl.load(S + r[:, None] * 2 + tl.arange(0, 2)[None, :])
    if WHAT == "format":
        c = tl.dot_scaled(a, s, "e3m4", tl.trans(a), s, "e4m3")
    elif WHAT == "dtype":
        c = tl.dot_scaled(a.to(tl.int8), s, "e4m3", tl.trans(a), s, "e4m3")
    elif WHAT == "scale_shape":
        c = tl.dot_scaled(a, tl.trans(s), "e4m3", tl.trans(a), s, "e4m3")
    else:
        c = tl.dot_scaled(a, s, "e4m3", tl.trans(a), s, "e4m3", lhs_k_pack=False)
    tl.store(C + r[:, None] * 32 + r[None, :], c)


@pytest.mark.parametrize("what,error,words", [("format", DTypeError, "lhs_format must be one of"),
                                              ("dtype", DTypeError, "e4m3 values must be"),
                                              ("scale_shape", ShapeError, "lhs_scale must have shape [32, 2]"),
                                              ("k_pack", ShapeError, "only e2m1 inputs can be packed")])
def test_misuses_are_refused_as_triton_refuses_them(what, error, words):
    a = np.random.default_rng(5).integers(0, 0x70, (32, 64)).astype(np.uint8)
    s = np.full((32, 2), 127, np.uint8)
    with pytest.raises(error, match=re.escape(words)):
        _misused_dot_scaled.cuda_source(a, s, np.zeros((32, 32), np.float32), WHAT=what)
    with pytest.raises(error, match=re.escape(words)):
        _misused_dot_scaled.interpret[(1,)](a, s, np.zeros((32, 32), np.float32), WHAT=what)
