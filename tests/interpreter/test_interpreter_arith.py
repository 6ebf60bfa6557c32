"""Operators, dtype promotion, C integer semantics, fp16/bf16 rounding, casts and elementwise math."""
import math

import numpy as np
import pytest

import transpiler.language as tl
from interp_harness import bf16_reference, run_binary, run_unary
from transpiler.errors import DTypeError, ShapeError
from transpiler.interpreter import interpret

F64 = np.float64


def _ints(rng, n, dtype, lo=None, hi=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi), n, dtype=dtype,
                        endpoint=True)


def _c_div(a, b):
    """Truncating integer division and remainder, with exact Python integers."""
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b >= 0) else -q
    return q, a - q * b


def _wrap(values, dtype):
    """Python ints reduced into the range of a NumPy integer dtype."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return np.array([(int(v) - int(info.min)) % span + int(info.min) for v in values], dtype=dtype)


# ---- promotion ----------------------------------------------------------------------------------------------


def test_int8_plus_python_int_stays_int8_and_wraps(rng):
    x = _ints(rng, 64, np.int8)
    out, dtype = run_binary(lambda a, b: a + 100, x, x, np.int8)
    assert dtype is tl.int8
    np.testing.assert_array_equal(out, _wrap(x.astype(np.int64) + 100, np.int8))


def test_int8_plus_int32_scalar_argument_promotes(rng):
    """A scalar *argument* is an int32 value, not a Python literal: int8 + int32 -> int32."""
    x = _ints(rng, 32, np.int8)
    out, sink = np.full(32, 7, np.int32), []

    def kernel(x_ptr, out_ptr, k):
        offs = tl.arange(0, 32)
        result = tl.load(x_ptr + offs) + k
        sink.append(result.dtype)
        tl.store(out_ptr + offs, result)

    interpret(kernel, (1,), (x, out, 100), {})
    assert sink == [tl.int32]
    np.testing.assert_array_equal(out, x.astype(np.int32) + 100)


def test_int32_truediv_int32_is_fp32(rng):
    x = _ints(rng, 64, np.int32, -10**6, 10**6)
    y = _ints(rng, 64, np.int32, 1, 1000) * rng.choice([-1, 1], 64).astype(np.int32)
    out, dtype = run_binary(lambda a, b: a / b, x, y, np.float32)
    assert dtype is tl.float32
    np.testing.assert_array_equal(out, x.astype(np.float32) / y.astype(np.float32))


def test_fp16_truediv_fp16_is_fp32(rng):
    x = rng.standard_normal(64).astype(np.float16)
    y = (rng.random(64) + 0.5).astype(np.float16)
    out, dtype = run_binary(lambda a, b: a / b, x, y, np.float32)
    assert dtype is tl.float32
    np.testing.assert_array_equal(out, x.astype(np.float32) / y.astype(np.float32))


def test_fp16_plus_fp32_is_fp32(rng):
    x = rng.standard_normal(64).astype(np.float16)
    y = rng.standard_normal(64).astype(np.float32)
    out, dtype = run_binary(lambda a, b: a + b, x, y, np.float32)
    assert dtype is tl.float32
    np.testing.assert_array_equal(out, x.astype(np.float32) + y)


def test_fp16_with_python_float_stays_fp16(rng):
    x = rng.standard_normal(64).astype(np.float16)
    out, dtype = run_unary(lambda a: a * 0.1, x, np.float16)
    assert dtype is tl.float16
    np.testing.assert_array_equal(out, (x.astype(F64) * F64(np.float16(0.1))).astype(np.float16))


def test_float_scalar_argument_is_fp32_and_promotes_fp16(rng):
    x = rng.standard_normal(16).astype(np.float16)
    out, sink = np.full(16, np.nan, np.float32), []

    def kernel(x_ptr, out_ptr, scale):
        offs = tl.arange(0, 16)
        result = tl.load(x_ptr + offs) * scale
        sink.append(result.dtype)
        tl.store(out_ptr + offs, result)

    interpret(kernel, (1,), (x, out, 0.3), {})
    assert sink == [tl.float32]
    np.testing.assert_array_equal(out, x.astype(np.float32) * np.float32(0.3))


def test_bf16_plus_bf16_is_bf16_and_rounded(rng):
    x = rng.standard_normal(256).astype(np.float32)
    y = rng.standard_normal(256).astype(np.float32)
    out, dtype = run_binary(lambda a, b: a.to(tl.bfloat16) + b.to(tl.bfloat16), x, y, np.float32)
    assert dtype is tl.bfloat16
    expected = bf16_reference(bf16_reference(x) + bf16_reference(y))
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    assert not np.array_equal(out, x + y)  # rounding really happened


def test_bf16_with_fp16_is_fp16_and_bf16_with_fp32_is_fp32(rng):
    """Triton's rule 3: fp16 wins over bf16 (except for / and %, which compute in fp32)."""
    x = rng.standard_normal(16).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float16)
    out, dtype = run_binary(lambda a, b: a.to(tl.bfloat16) * b, x, y, np.float16)
    assert dtype is tl.float16
    np.testing.assert_array_equal(out, (bf16_reference(x) * y.astype(F64)).astype(np.float16))
    out, dtype = run_binary(lambda a, b: a.to(tl.bfloat16) / b, x, y, np.float32)
    assert dtype is tl.float32
    out, dtype = run_binary(lambda a, b: a.to(tl.bfloat16) + b.to(tl.float32), x, y, np.float32)
    assert dtype is tl.float32
    np.testing.assert_array_equal(out, (bf16_reference(x) + y.astype(F64)).astype(np.float32))


def test_uint32_plus_int32_is_uint32(rng):
    x = _ints(rng, 64, np.uint32)
    y = _ints(rng, 64, np.int32)
    out, dtype = run_binary(lambda a, b: a + b, x, y, np.uint32)
    assert dtype is tl.uint32
    np.testing.assert_array_equal(out, _wrap(x.astype(object) + y.astype(object), np.uint32))


def test_comparisons_promote_and_give_int1(rng):
    x = _ints(rng, 64, np.int8, -5, 5)
    y = rng.integers(-5, 5, 64).astype(np.float32) + 0.5
    for op, ref in [(lambda a, b: a < b, np.less), (lambda a, b: a >= b, np.greater_equal),
                    (lambda a, b: a == b, np.equal), (lambda a, b: a != b, np.not_equal)]:
        out, dtype = run_binary(op, x, y, np.int8)
        assert dtype is tl.int1
        np.testing.assert_array_equal(out, ref(x.astype(F64), y).astype(np.int8))


def test_nan_comparisons(rng):
    x = np.array([np.nan, 1.0, np.nan, 2.0], dtype=np.float32)
    y = np.array([np.nan, np.nan, 1.0, 2.0], dtype=np.float32)
    out, _ = run_binary(lambda a, b: a != b, x, y, np.int8)
    np.testing.assert_array_equal(out, [1, 1, 1, 0])
    out, _ = run_binary(lambda a, b: a == b, x, y, np.int8)
    np.testing.assert_array_equal(out, [0, 0, 0, 1])


# ---- integer semantics --------------------------------------------------------------------------------------


def test_c_like_floordiv_and_mod_with_negative_operands(rng):
    x = _ints(rng, 200, np.int32, -1000, 1000)
    y = _ints(rng, 200, np.int32, 1, 50) * rng.choice([-1, 1], 200).astype(np.int32)
    q, qtype = run_binary(lambda a, b: a // b, x, y, np.int32)
    r, rtype = run_binary(lambda a, b: a % b, x, y, np.int32)
    assert qtype is tl.int32 and rtype is tl.int32
    expected = [_c_div(int(a), int(b)) for a, b in zip(x, y)]
    np.testing.assert_array_equal(q, [e[0] for e in expected])
    np.testing.assert_array_equal(r, [e[1] for e in expected])
    assert (q != x // y).any()  # differs from Python's floor semantics on this data


def test_reflected_c_division_with_python_numbers(rng):
    y = np.array([3, -3, 4, -4, 7, -7, 2, -2], dtype=np.int32)
    q, _ = run_unary(lambda b: -7 // b, y, np.int32)
    r, _ = run_unary(lambda b: -7 % b, y, np.int32)
    np.testing.assert_array_equal(q, [_c_div(-7, int(b))[0] for b in y])
    np.testing.assert_array_equal(r, [_c_div(-7, int(b))[1] for b in y])


def test_float_mod_is_fmod(rng):
    x = (rng.standard_normal(64) * 10).astype(np.float32)
    y = (rng.standard_normal(64) * 3).astype(np.float32)
    out, dtype = run_binary(lambda a, b: a % b, x, y, np.float32)
    assert dtype is tl.float32
    np.testing.assert_array_equal(out, [np.float32(math.fmod(a, b)) for a, b in zip(x.astype(F64), y.astype(F64))])


def test_float_floordiv_is_an_error():
    x = np.ones(4, np.float32)
    with pytest.raises(DTypeError, match="//"):
        run_binary(lambda a, b: a // b, x, x, np.float32)


def test_integer_overflow_wraps(rng):
    x = _ints(rng, 64, np.int32, 2**20, 2**30)
    out, _ = run_binary(lambda a, b: a * b + b, x, x, np.int32)
    np.testing.assert_array_equal(out, _wrap(x.astype(object) * x.astype(object) + x.astype(object), np.int32))
    u = _ints(rng, 64, np.uint8)
    out, dtype = run_unary(lambda a: a - 200, u, np.uint8)
    assert dtype is tl.uint8
    np.testing.assert_array_equal(out, _wrap(u.astype(np.int64) - 200, np.uint8))


def test_shifts_signed_and_unsigned(rng):
    x = _ints(rng, 64, np.int32)
    s = rng.integers(0, 32, 64).astype(np.int32)
    out, _ = run_binary(lambda a, b: a >> b, x, s, np.int32)
    np.testing.assert_array_equal(out, [int(a) >> int(b) for a, b in zip(x, s)])  # arithmetic
    out, _ = run_binary(lambda a, b: a << b, x, s, np.int32)
    np.testing.assert_array_equal(out, _wrap([int(a) << int(b) for a, b in zip(x, s)], np.int32))

    u = x.view(np.uint32)
    out, dtype = run_binary(lambda a, b: a >> b.to(tl.uint32), u, s, np.uint32)
    assert dtype is tl.uint32
    np.testing.assert_array_equal(out, [int(a) >> int(b) for a, b in zip(u, s)])  # logical
    assert (out != (x >> s).view(np.uint32)).any()


def test_bitwise_ops_promote_like_arithmetic(rng):
    x = _ints(rng, 16, np.int8)
    out, dtype = run_unary(lambda a: a >> 1, x, np.int8)
    assert dtype is tl.int8  # a Python int does not widen the block (Triton 3.4+ bitwise typing)
    np.testing.assert_array_equal(out, x >> 1)
    out, dtype = run_binary(lambda a, b: a.to(tl.int16) & b, x, x, np.int16)
    assert dtype is tl.int16  # int16 & int8 -> int16
    np.testing.assert_array_equal(out, x.astype(np.int16) & x)


def test_bitwise_ops(rng):
    x = _ints(rng, 64, np.int16)
    y = _ints(rng, 64, np.int16)
    for op, ref in [(lambda a, b: a & b, np.bitwise_and), (lambda a, b: a | b, np.bitwise_or),
                    (lambda a, b: a ^ b, np.bitwise_xor)]:
        out, dtype = run_binary(op, x, y, np.int16)
        assert dtype is tl.int16
        np.testing.assert_array_equal(out, ref(x, y))
    out, _ = run_unary(lambda a: ~a, x, np.int16)
    np.testing.assert_array_equal(out, ~x)
    with pytest.raises(DTypeError, match="integer"):
        run_unary(lambda a: a.to(tl.float32) & 1, x, np.int16)


def test_unary_minus_plus_and_reflected_ops(rng):
    x = (rng.random(32) + 0.5).astype(np.float32)
    cases = [(lambda a: -a, -x), (lambda a: +a, x), (lambda a: 3 - a, 3 - x), (lambda a: 2 * a, 2 * x),
             (lambda a: 1 / a, np.float32(1) / x), (lambda a: 2.5 + a, np.float32(2.5) + x)]
    for op, expected in cases:
        out, dtype = run_unary(op, x, np.float32)
        assert dtype is tl.float32
        np.testing.assert_array_equal(out, expected)


def test_numpy_scalar_operands_count_as_python_scalars(rng):
    x = _ints(rng, 16, np.int32, -100, 100)
    out, dtype = run_unary(lambda a: np.int64(3) * a, x, np.int32)
    assert dtype is tl.int32  # a scalar of a kind no higher than the block's does not promote
    np.testing.assert_array_equal(out, 3 * x)
    # A NumPy scalar is typed by its own dtype (python_scalar_dtype): float64 outranks an int block.
    out, dtype = run_unary(lambda a: a + np.float64(0.25), x, np.float64)
    assert dtype is tl.float64
    np.testing.assert_array_equal(out, x + 0.25)


@pytest.mark.parametrize("op, message", [
    (lambda a, b: a ** 2, r"\*\*"),
    (lambda a, b: a.to(tl.uint32) + (-1), "unsigned"),
    (lambda a, b: a.to(tl.int8) + 1000, "out of range"),
    (lambda a, b: a.to(tl.uint32) / b, "signedness"),
])
def test_operator_type_errors(op, message):
    x = np.arange(1, 5, dtype=np.int32)
    with pytest.raises(DTypeError, match=message):
        run_binary(op, x, x, np.int32)


def test_shape_mismatch_names_both_shapes():
    def kernel(out_ptr):
        tl.arange(0, 4) + tl.arange(0, 8)

    with pytest.raises(ShapeError, match=r"\[4\].*\[8\]"):
        interpret(kernel, (1,), (np.zeros(1),), {})


# ---- fp16 rounding ------------------------------------------------------------------------------------------


def test_fp16_arithmetic_rounds_once(rng):
    x = rng.standard_normal(512).astype(np.float16)
    y = rng.standard_normal(512).astype(np.float16)
    for op, ref in [(lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
                    (lambda a, b: a * b, np.multiply)]:
        out, dtype = run_binary(op, x, y, np.float16)
        assert dtype is tl.float16
        np.testing.assert_array_equal(out, ref(x.astype(F64), y.astype(F64)).astype(np.float16))


def test_fp16_overflow_to_inf():
    x = np.array([60000, -60000, 1], dtype=np.float16)
    out, _ = run_unary(lambda a: a * 2.0, x, np.float16)
    np.testing.assert_array_equal(out, [np.inf, -np.inf, 2])


# ---- casts --------------------------------------------------------------------------------------------------


def test_float_to_int_truncates_toward_zero(rng):
    x = (rng.standard_normal(64) * 100).astype(np.float32)
    out, dtype = run_unary(lambda a: a.to(tl.int32), x, np.int32)
    assert dtype is tl.int32
    np.testing.assert_array_equal(out, np.trunc(x).astype(np.int32))


def test_int_to_narrower_int_wraps_and_bool_is_nonzero(rng):
    x = _ints(rng, 64, np.int32)
    out, _ = run_unary(lambda a: a.to(tl.int8), x, np.int8)
    np.testing.assert_array_equal(out, _wrap(x, np.int8))
    y = np.array([0.0, -0.0, 0.5, -3, np.nan, 0, 7, np.inf], dtype=np.float32)
    out, dtype = run_unary(lambda a: a.to(tl.int1), y, np.int8)
    assert dtype is tl.int1
    np.testing.assert_array_equal(out, [0, 0, 1, 1, 1, 0, 1, 1])


def test_uint8_to_float_and_fp32_to_fp16(rng):
    u = _ints(rng, 32, np.uint8)
    out, _ = run_unary(lambda a: a.to(tl.float32), u, np.float32)
    np.testing.assert_array_equal(out, u.astype(np.float32))
    x = rng.standard_normal(64).astype(np.float32)
    out, dtype = run_unary(lambda a: tl.cast(a, tl.float16), x, np.float16)
    assert dtype is tl.float16
    np.testing.assert_array_equal(out, x.astype(np.float16))


def test_fp32_to_bf16_rounds_to_nearest_even(rng):
    x = rng.standard_normal(1024).astype(np.float32)
    # Exact ties between two bf16 values: the low 16 bits are 0x8000.
    ties = ((rng.integers(0x3F800000, 0x40800000, 8, dtype=np.uint32) & 0xFFFF0000) | 0x8000).view(np.float32)
    # A NaN whose payload would carry into the sign bit when rounded by bit arithmetic must stay NaN.
    big_payload_nan = np.array([0x7FFFFFFF], dtype=np.uint32).view(np.float32)
    specials = np.concatenate([big_payload_nan, np.array([np.inf, -np.inf, 3.4e38], np.float32)])
    x = np.concatenate([x, ties, specials])
    out, _ = run_unary(lambda a: a.to(tl.bfloat16), x, np.float32)
    np.testing.assert_array_equal(out[:-4], bf16_reference(x[:-4]).astype(np.float32))
    assert np.isnan(out[-4]) and out[-3] == np.inf and out[-2] == -np.inf and out[-1] == np.inf


def test_bitcast(rng):
    x = rng.standard_normal(32).astype(np.float32)
    out, dtype = run_unary(lambda a: a.to(tl.int32, bitcast=True), x, np.int32)
    assert dtype is tl.int32
    np.testing.assert_array_equal(out, x.view(np.int32))
    out, _ = run_unary(lambda a: a.to(tl.int32, bitcast=True).to(tl.float32, bitcast=True), x, np.float32)
    np.testing.assert_array_equal(out, x)
    # bf16 <-> int16 through the bit pattern.
    out, dtype = run_unary(lambda a: a.to(tl.bfloat16).to(tl.int16, bitcast=True), x, np.int16)
    assert dtype is tl.int16
    expected_bits = (bf16_reference(x).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
    np.testing.assert_array_equal(out, expected_bits)
    bits = expected_bits
    out, dtype = run_unary(lambda a: a.to(tl.bfloat16, bitcast=True), bits, np.float32)
    assert dtype is tl.bfloat16
    np.testing.assert_array_equal(out, bf16_reference(x).astype(np.float32))
    with pytest.raises(DTypeError, match="equal widths"):
        run_unary(lambda a: a.to(tl.int16, bitcast=True), x, np.int16)


# ---- elementwise math -------------------------------------------------------------------------------------

_MATH = {
    "exp": (tl.exp, np.exp), "exp2": (tl.exp2, np.exp2), "log": (tl.log, np.log), "log2": (tl.log2, np.log2),
    "sqrt": (tl.sqrt, np.sqrt), "sqrt_rn": (tl.sqrt_rn, np.sqrt), "rsqrt": (tl.rsqrt, lambda v: 1 / np.sqrt(v)),
    "sin": (tl.sin, np.sin), "cos": (tl.cos, np.cos), "erf": (tl.erf, np.vectorize(math.erf)),
    "floor": (tl.floor, np.floor), "ceil": (tl.ceil, np.ceil), "sigmoid": (tl.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    "abs": (tl.abs, np.abs),
}


@pytest.mark.parametrize("name", sorted(_MATH))
def test_math_functions_fp32(rng, name):
    fn, ref = _MATH[name]
    x = (rng.random(128) * 4 + 0.01).astype(np.float32)
    if name in ("sin", "cos", "erf", "floor", "ceil", "sigmoid", "abs", "exp"):
        x = (x - 2).astype(np.float32)  # negative inputs too where defined
    out, dtype = run_unary(fn, x, np.float32)
    assert dtype is tl.float32
    np.testing.assert_allclose(out, ref(x.astype(F64)), rtol=2e-7, atol=1e-30)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "erf", "sigmoid"])
def test_math_functions_fp16_compute_in_fp32(rng, name):
    fn, ref = _MATH[name]
    x = (rng.random(128) * 3 + 0.1).astype(np.float16)
    out, dtype = run_unary(fn, x, np.float16)
    assert dtype is tl.float16
    np.testing.assert_array_equal(out, ref(x.astype(F64)).astype(np.float32).astype(np.float16))


def test_math_on_bf16_rounds_to_bf16(rng):
    x = rng.random(64).astype(np.float32) + 0.5
    out, dtype = run_unary(lambda a: tl.exp(a.to(tl.bfloat16)), x, np.float32)
    assert dtype is tl.bfloat16
    np.testing.assert_array_equal(out, bf16_reference(np.exp(bf16_reference(x)).astype(np.float32)))


def test_math_on_integers_is_an_error():
    with pytest.raises(DTypeError, match="tl.exp"):
        run_unary(tl.exp, np.arange(4, dtype=np.int32), np.float32)


def test_abs_integers(rng):
    x = _ints(rng, 64, np.int32, -1000, 1000)
    out, dtype = run_unary(tl.abs, x, np.int32)
    assert dtype is tl.int32
    np.testing.assert_array_equal(out, np.abs(x))


def test_fma_cdiv_div_rn_fdiv(rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    out, _ = run_binary(lambda a, b: tl.fma(a, b, 0.5), x, y, np.float32)
    np.testing.assert_array_equal(out, (x.astype(F64) * y + 0.5).astype(np.float32))
    out, _ = run_binary(tl.div_rn, x, y, np.float32)
    np.testing.assert_array_equal(out, x / y)
    out, _ = run_binary(tl.fdiv, x, y, np.float32)
    np.testing.assert_allclose(out, x.astype(F64) / y, rtol=1e-6)

    n = _ints(rng, 64, np.int32, 0, 10**6)
    out, dtype = run_unary(lambda a: tl.cdiv(a, 128), n, np.int32)
    assert dtype is tl.int32
    np.testing.assert_array_equal(out, (n + 127) // 128)
    seen = []

    def kernel(N: tl.constexpr):
        seen.append(tl.cdiv(N, 32))

    interpret(kernel, (1,), (), {"N": 100})
    assert seen == [4]


def test_umulhi(rng):
    x = _ints(rng, 64, np.uint32)
    y = _ints(rng, 64, np.uint32)
    out, dtype = run_binary(tl.umulhi, x, y, np.uint32)
    assert dtype is tl.uint32
    np.testing.assert_array_equal(out, [(int(a) * int(b)) >> 32 for a, b in zip(x, y)])
    x64 = _ints(rng, 16, np.uint64)
    out, _ = run_binary(tl.umulhi, x64, x64[::-1].copy(), np.uint64)
    np.testing.assert_array_equal(out, np.array([(int(a) * int(b)) >> 64 for a, b in zip(x64, x64[::-1])],
                                                dtype=np.uint64))


def test_where_promotes_branches(rng):
    x = _ints(rng, 64, np.int32, -50, 50)
    out, dtype = run_unary(lambda a: tl.where(a > 0, a, 1.5), x, np.float32)
    assert dtype is tl.float32
    np.testing.assert_array_equal(out, np.where(x > 0, x.astype(np.float32), 1.5))
    out, dtype = run_unary(lambda a: tl.where(a, 1, 2), x, np.int32)  # int condition: != 0
    np.testing.assert_array_equal(out, np.where(x != 0, 1, 2))


def test_minimum_maximum_nan_semantics():
    x = np.array([np.nan, 1.0, np.nan, -2.0, 3.0], dtype=np.float32)
    y = np.array([0.5, np.nan, np.nan, 4.0, -1.0], dtype=np.float32)
    out, _ = run_binary(tl.minimum, x, y, np.float32)
    np.testing.assert_array_equal(out, [0.5, 1.0, np.nan, -2.0, -1.0])
    out, _ = run_binary(tl.maximum, x, y, np.float32)
    np.testing.assert_array_equal(out, [0.5, 1.0, np.nan, 4.0, 3.0])
    out, _ = run_binary(lambda a, b: tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL), x, y, np.float32)
    np.testing.assert_array_equal(out, [np.nan, np.nan, np.nan, -2.0, -1.0])
    out, _ = run_binary(lambda a, b: tl.maximum(a, b, tl.PropagateNan.ALL), x, y, np.float32)
    np.testing.assert_array_equal(out, [np.nan, np.nan, np.nan, 4.0, 3.0])


def test_minimum_maximum_integers_and_clamp(rng):
    x = _ints(rng, 64, np.int16)
    y = _ints(rng, 64, np.int16)
    out, dtype = run_binary(tl.maximum, x, y, np.int16)
    assert dtype is tl.int16
    np.testing.assert_array_equal(out, np.maximum(x, y))
    f = (rng.standard_normal(64) * 3).astype(np.float32)
    out, _ = run_unary(lambda a: tl.clamp(a, -1.0, 2.0), f, np.float32)
    np.testing.assert_array_equal(out, np.clip(f, -1.0, 2.0))
    with pytest.raises(DTypeError, match="floating"):
        run_binary(lambda a, b: tl.clamp(a, 0, 1), x, y, np.int16)
