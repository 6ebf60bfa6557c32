"""GPU: the fuzzer's H200 findings (tests/test_fuzz_findings.py) compiled and launched, against NumPy.

The compiled path alone got these wrong: `s % d` / `s // d` with a uniform `s` (computed once per run of
registers), `-x` of +0.0 (C's -0.0 against Triton's `0 - x`), an integer argument equal to 1 typed as a literal.
Fresh random inputs, sizes not multiples of the block, outputs poisoned before launch.
"""
import numpy as np
import pytest

import test_fuzz_findings as F

pytestmark = pytest.mark.gpu


def _run(kernel, grid, args, **constexprs):
    import cupy
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*dev, **constexprs)
    cupy.cuda.runtime.deviceSynchronize()
    return [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in dev]


@pytest.mark.parametrize("s", [-11, 37, 2**20 + 3])
def test_uniform_value_over_varying_divisor_on_gpu(s):
    n = 1000 + int(np.random.default_rng().integers(0, 24))
    out_mod, out_div, *_ = _run(F.scalar_over_block_kernel, (-(-n // 256),),
                                [np.full(n, -7, np.int32), np.full(n, -7, np.int32), n, s], BLOCK=256)
    d = (np.arange(n) & 7) + 1
    np.testing.assert_array_equal(out_mod, np.fmod(s, d))
    np.testing.assert_array_equal(out_div, np.trunc(s / d).astype(np.int64))


def test_negation_keeps_plus_zero_on_gpu():
    rng = np.random.default_rng()
    n = 777
    x = np.where(rng.random(n) < 0.3, 0.0, rng.standard_normal(n)).astype(np.float32)
    h = x.astype(np.float16)
    _, _, out, out_h, _ = _run(F.negate_kernel, (-(-n // 128),), [x, h, np.full(n, np.nan, np.float32),
                                                                    np.full(n, np.nan, np.float16), n], BLOCK=128)
    expected = np.float32(0.0) - x
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    np.testing.assert_array_equal(np.signbit(out_h), np.signbit(np.float16(0.0) - h))


def test_argument_equal_to_one_is_an_int32_scalar_on_gpu():
    n = 333
    x = np.random.default_rng().integers(100, 128, n).astype(np.int8)
    _, out, *_ = _run(F.argument_equal_to_one_kernel, (-(-n // 128),), [x, np.full(n, -7, np.int32), n, 1],
                      BLOCK=128)
    np.testing.assert_array_equal(out, x.astype(np.int32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_signed_integer_arithmetic_wraps_on_gpu(dtype):
    """C's signed overflow is undefined (`(x + y) < x` was folded to `y < 0`): the compiled path wraps as
    Triton does, on fresh full-range inputs (bench/fuzz.py's intops family compares it with Triton)."""
    rng = np.random.default_rng()
    n = 1000 + int(rng.integers(0, 100))
    x, y, outs, expected = F._wrapping_case(dtype, n, rng)
    got = _run(F.wrapping_arithmetic_kernel, (-(-n // 128),), [x, y, *outs, n], BLOCK=128)[2:8]
    for g, want in zip(got, expected):
        np.testing.assert_array_equal(g, want)
    whole = n // 128 * 128          # the check kernel has no mask: whole blocks only
    carry = _run(F.overflow_check_kernel, (n // 128,), [x, y, np.full(n, -7, np.int8)], BLOCK=128)[2]
    np.testing.assert_array_equal(carry[:whole], expected[0][:whole])


def test_a_float_literal_beyond_the_blocks_type_is_inf_on_gpu():
    n = 1000 + int(np.random.default_rng().integers(0, 50))
    x = np.random.default_rng().uniform(-3, 3, n).astype(np.float32)
    outs = [np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float16), np.full(n, np.nan, np.float32)]
    got = _run(F.literal_beyond_fp32_kernel, (-(-n // 128),), [x, *outs, n], BLOCK=128)[1:4]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got[0], x * np.float32(np.inf))
        np.testing.assert_array_equal(got[1], x.astype(np.float16) * np.float16(np.inf))
    np.testing.assert_array_equal(got[2], np.ones(n, np.float32))


def test_pointer_casts_on_gpu():
    rng = np.random.default_rng()
    n = 50 + int(rng.integers(0, 14))
    t = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    x = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    b = np.zeros(64, np.int32)
    got_t, got_x, got_b, _ = _run(F.pointer_cast_kernel, (1,), [t.copy(), x.copy(), b, n], BLOCK=64)
    active = np.arange(64) < n
    want_t = np.where(active, np.maximum(t.view(np.uint32), x.view(np.uint32)), t.view(np.uint32))
    np.testing.assert_array_equal(got_t, want_t.view(np.int32))
    np.testing.assert_array_equal(got_x, np.where(active, t, x))
    np.testing.assert_array_equal(got_b, np.where(active, 256, 0))


def test_fp32_subnormals_are_kept_on_gpu():
    n = 1000 + int(np.random.default_rng().integers(0, 50))
    x = (np.random.default_rng().integers(1, 64, n) / 8.0).astype(np.float32)
    _, out, positive, _ = _run(F.subnormal_kernel, (-(-n // 128),),
                               [x, np.full(n, np.nan, np.float32), np.full(n, -7, np.int8), n], BLOCK=128)
    want_out, want_positive = F._subnormal_expected(x)
    np.testing.assert_array_equal(positive, want_positive)
    np.testing.assert_array_equal(out, want_out)
