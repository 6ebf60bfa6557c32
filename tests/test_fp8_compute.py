"""fp8 operands in arithmetic, selection, abs and min/max, typed as Triton 3.6 types them (`dtypes.computation_type`,
`dtypes.fp8_computable`), on the interpreter and through NVRTC; the refusals name why (Triton's compiler fails
on them too). References decode the fp8 codes by the formats' definitions, independently of our conversions."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
import fp8_compute_kernels as fk
from transpiler.errors import DTypeError

from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

# (exponent bits, mantissa bits, bias, has infinities) of the two formats CUDA has
FORMATS = {"e4nv": (tl.float8e4nv, 4, 3, 7, False), "e5": (tl.float8e5, 5, 2, 15, True)}


def decode(codes, fmt):
    """float64 values of fp8 codes, by the format's definition (NaN codes to NaN)."""
    _, e_bits, m_bits, bias, has_inf = FORMATS[fmt]
    c = codes.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> m_bits) & ((1 << e_bits) - 1), c & ((1 << m_bits) - 1)
    value = np.where(e == 0, m * 2.0 ** (1 - bias - m_bits), (1 + m / 2.0 ** m_bits) * 2.0 ** (e - bias))
    top = e == (1 << e_bits) - 1
    nan = (top & (m != 0)) if has_inf else (top & (m == (1 << m_bits) - 1))
    value = np.where(top & (m == 0), np.inf, value) if has_inf else value
    return np.where(nan, np.nan, sign * value)


def finite_codes(rng, fmt, shape):
    """Random codes of finite values (NaN and infinity codes replaced)."""
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    bad = ~np.isfinite(decode(codes, fmt))
    codes[bad] = rng.integers(0, 0x30, int(bad.sum())).astype(np.uint8)
    return codes


def fp8(codes, fmt):
    return transpiler.reinterpret(codes, FORMATS[fmt][0])


def dequant_case(rng, fmt, rows=5, cols=300, block=128):
    q = finite_codes(rng, fmt, (rows, cols))
    s = rng.uniform(0.01, 2.0, rows).astype(np.float32)
    y = np.full((rows, cols), np.nan, np.float32)
    args = (fp8(q, fmt), s, y, cols, cols, cols)
    want = (decode(q, fmt).astype(np.float32) * s[:, None]).astype(np.float32)   # one fp32 rounding
    return fk.fp8_dequant_rows_kernel, args, dict(BLOCK=512), (rows,), y, want


def mixed_case(rng, n=700, contracted=False):
    """`a + b` of two fp8 types and `a * h - b` with fp16 `h`. The interpreter rounds the product and the
    difference separately; compiled code (ours, and Triton's) contracts them into one fp16 FMA (HFMA2: the
    `mul.f16` / `sub.f16` pair has no rounding modifier, so ptxas may fuse it), one rounding: `contracted`
    chooses that model."""
    a, b = finite_codes(rng, "e4nv", n), finite_codes(rng, "e5", n)
    b[np.abs(decode(b, "e5")) > 6e4] = 0x3C   # keep a * h - b inside fp16's range
    h = rng.uniform(-4, 4, n).astype(np.float16)
    s, hs = np.full(n, np.nan, np.float16), np.full(n, np.nan, np.float16)
    fa, fb = decode(a, "e4nv"), decode(b, "e5")
    want_sum = (fa + fb).astype(np.float16)                         # exact in float64, one fp16 rounding
    prod = fa * h.astype(np.float64)                                # exact: 4 x 11 significant bits
    if contracted:                                                  # fma: one rounding of the exact value
        want_hsum = (prod - fb).astype(np.float16)
    else:                                                           # fp16 multiply, then fp16 subtract
        want_hsum = (prod.astype(np.float16).astype(np.float64) - fb).astype(np.float16)
    args = (fp8(a, "e4nv"), fp8(b, "e5"), h, s, hs, n)
    return fk.fp8_mixed_kernel, args, dict(BLOCK=256), (transpiler.cdiv(n, 256),), (s, hs), (want_sum, want_hsum)


def select_case(rng, fmt, n=600):
    x, y = finite_codes(rng, fmt, n), finite_codes(rng, fmt, n)
    ab, pick = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    fx, fy = decode(x, fmt), decode(y, fmt)
    want_abs = x & 0x7F
    chosen = np.where(np.abs(fx) > 1.0, np.maximum(fx, fy), np.minimum(fx, fy))
    # the chosen value's code is x's or y's (min and max pick one; equal values may differ only in the zero sign)
    want_pick = np.where(chosen == fx, x, y)
    return fk.fp8_select_kernel, (fp8(x, fmt), fp8(y, fmt), fp8(ab, fmt), fp8(pick, fmt), n, 1.0), dict(BLOCK=128), \
        (transpiler.cdiv(n, 128),), (ab, pick), (want_abs, want_pick), (fx, fy)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_fp8_times_a_float32_scale_is_computed_in_float32(fmt):
    kernel, args, consts, grid, y, want = dequant_case(np.random.default_rng(1), fmt)
    kernel.interpret[grid](*args, **consts)
    np.testing.assert_array_equal(y, want)


def test_two_fp8_types_meet_in_fp16_and_fp8_widens_to_fp16():
    kernel, args, consts, grid, outs, wants = mixed_case(np.random.default_rng(2))
    kernel.interpret[grid](*args, **consts)
    for got, want in zip(outs, wants):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_abs_maximum_minimum_and_where_keep_one_fp8_type(fmt):
    kernel, args, consts, grid, (ab, pick), (want_abs, want_pick), (fx, fy) = select_case(np.random.default_rng(3),
                                                                                          fmt)
    kernel.interpret[grid](*args, **consts)
    np.testing.assert_array_equal(ab, want_abs)
    same = fx == fy                                         # +0 / -0 ties: either code is the right value
    np.testing.assert_array_equal(pick[~same], want_pick[~same])
    np.testing.assert_array_equal(decode(pick[same], fmt), fx[same])


@needs_nvrtc
@pytest.mark.parametrize("make", [lambda rng: dequant_case(rng, "e4nv"), lambda rng: dequant_case(rng, "e5"),
                                  mixed_case, lambda rng: select_case(rng, "e4nv"),
                                  lambda rng: select_case(rng, "e5")],
                         ids=["dequant-e4nv", "dequant-e5", "mixed", "select-e4nv", "select-e5"])
def test_fp8_compute_kernels_compile_without_warnings(make):
    kernel, args, consts = make(np.random.default_rng(4))[:3]
    src = kernel.cuda_source(*args, **consts)
    assert "#include <cuda_fp8.h>" in src
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


@transpiler.jit
def _fp8_expression(X, O, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if OP == "scale":
        y = x * 2.0
    elif OP == "neg":
        y = -x
    elif OP == "compare":
        y = tl.where(x < x, x, x)
    elif OP == "divide":
        y = x / x
    elif OP == "exp":
        y = tl.exp(x)
    else:
        y = x + offs
    tl.store(O + offs, y)


@pytest.mark.parametrize("op,message", [("scale", "Triton's compiler cannot lower"), ("neg", "cannot lower"),
                                        ("compare", "cannot lower"), ("divide", "cannot lower"),
                                        ("exp", "cannot lower"), ("int", "meets an integer block")])
def test_what_triton_cannot_compile_on_fp8_is_refused_on_both_paths(op, message):
    x = fp8(finite_codes(np.random.default_rng(5), "e4nv", 16), "e4nv")
    o = fp8(np.zeros(16, np.uint8), "e4nv")
    for run in (lambda: _fp8_expression.cuda_source(x, o, OP=op, BLOCK=16),
                lambda: _fp8_expression.interpret[(1,)](x, o, OP=op, BLOCK=16)):
        with pytest.raises(DTypeError, match=message):
            run()
