"""A number assigned to a name is typed as Triton types it (`to_tensor`: int32, uint32, int64, fp32, fp64, int1),
on both paths: after `c = 100`, `x_int8 * c` is int32 (Triton's result, checked with Triton 3.6's own compiler),
where `x_int8 * 100` and `c: tl.constexpr = 100` keep the weak literal's int8. Before this, the compiled path
and the interpreter kept `c` a Python number: int8 products wrapped and fp16 sums rounded where Triton's do
not -- silent wrong answers on kernels that run correctly under Triton."""
import numpy as np
import pytest

from assigned_number_kernels import (constexpr_scale_int8_kernel, eps_fp16_kernel, helper_eps_fp16_kernel,
                                     helper_gain_int8_kernel, scaled_int8_kernel, tuple_and_half_block_kernel,
                                     unrolled_sum_fp16_kernel)
from transpiler.runtime.compiler import compile_offline, nvrtc_available


def _int8_input(rng, n):
    return rng.integers(-128, 128, size=n).astype(np.int8)


def test_an_assigned_integer_is_int32_in_the_interpreter():
    rng = np.random.default_rng(7)
    x = _int8_input(rng, 77)
    y = np.full(77, -1, np.int32)
    scaled_int8_kernel.interpret[(1,)](x, y, 77, BLOCK=128)
    np.testing.assert_array_equal(y, x.astype(np.int32) * 100)      # no int8 wrap-around


def test_a_constexpr_annotated_integer_stays_the_weak_literal():
    rng = np.random.default_rng(8)
    x = _int8_input(rng, 77)
    y = np.full(77, -1, np.int32)
    constexpr_scale_int8_kernel.interpret[(1,)](x, y, 77, BLOCK=128)
    np.testing.assert_array_equal(y, (x * np.int8(100)).astype(np.int32))   # int8 product, as in Triton


def test_the_compiled_path_types_them_as_the_interpreter_does():
    x = np.zeros(8, np.int8)
    y = np.zeros(8, np.int32)
    assert "scaled int32[8]" in scaled_int8_kernel.explain(x, y, 8, BLOCK=8)
    assert "scaled int8[8]" in constexpr_scale_int8_kernel.explain(x, y, 8, BLOCK=8)


def test_an_assigned_float_makes_fp16_arithmetic_fp32():
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(77) * 3).astype(np.float16)
    y = np.full(77, np.nan, np.float32)
    eps_fp16_kernel.interpret[(1,)](x, y, 77, BLOCK=128)
    np.testing.assert_array_equal(y, x.astype(np.float32) + np.float32(1e-3))


def test_an_assigned_zero_makes_an_fp32_accumulator():
    rng = np.random.default_rng(10)
    n, parts = 61, 4
    x = (rng.standard_normal(parts * n) * 100).astype(np.float16)
    y = np.full(n, np.nan, np.float32)
    unrolled_sum_fp16_kernel.interpret[(1,)](x, y, n, BLOCK=64, PARTS=parts)
    expected = np.zeros(n, np.float32)
    for part in range(parts):
        expected = expected + x[part * n:(part + 1) * n].astype(np.float32)
    np.testing.assert_array_equal(y, expected)


def test_tuples_and_constexpr_bounds():
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, size=100).astype(np.int16)
    y = np.full(100, np.nan, np.float32)
    tuple_and_half_block_kernel.interpret[(4,)](x, y, 100, BLOCK=64)
    np.testing.assert_array_equal(y, (x.astype(np.int32) + 3).astype(np.float32) * np.float32(0.5))


def test_a_number_a_helper_returns_is_typed_as_triton_types_it():
    """`return 100` gives an int32 scalar (Triton 3.6's code generator decays returned numbers): the int8
    product does not wrap. Found by the typing oracle (tests/fuzz/triton_oracle.py)."""
    rng = np.random.default_rng(12)
    x = _int8_input(rng, 203)
    y = np.full(203, -1, np.int32)
    helper_gain_int8_kernel.interpret[(2,)](x, y, 203, BLOCK=128)
    np.testing.assert_array_equal(y, x.astype(np.int32) * 100)
    assert x.astype(np.int32).max() * 100 > 127          # the int8 product would have wrapped


def test_numbers_a_helper_returns_in_a_tuple_are_typed_one_by_one():
    rng = np.random.default_rng(13)
    x = (rng.standard_normal(203) * 300).astype(np.float16)
    y = np.full(203, np.nan, np.float32)
    helper_eps_fp16_kernel.interpret[(2,)](x, y, 203, BLOCK=128)
    expected = (x + np.float16(3)).astype(np.float32) + np.float32(1e-3)     # fp16 sum, then fp32
    np.testing.assert_array_equal(y, expected)
    assert not np.array_equal(expected, (x + np.float16(3) + np.float16(1e-3)).astype(np.float32))


def test_the_compiled_path_types_returned_numbers_as_the_interpreter_does():
    x8, x16, y = np.zeros(8, np.int8), np.zeros(8, np.float16), np.zeros(8, np.float32)
    ir = helper_gain_int8_kernel.ir(x8, np.zeros(8, np.int32), 8, BLOCK=8)
    stored = [op for op in ir.walk() if op.name == "store"][0]
    assert stored.operands[1].dtype.name == "int32"
    ir = helper_eps_fp16_kernel.ir(x16, y, 8, BLOCK=8)
    stored = [op for op in ir.walk() if op.name == "store"][0]
    assert stored.operands[1].dtype.name == "fp32"
    src = helper_gain_int8_kernel.cuda_source(x8, np.zeros(8, np.int32), 8, BLOCK=128)
    # widened, then multiplied (one register per thread: the register index is written out, 0)
    assert "wrap_mul<int>(cvt[0], 100)" in src and "wrap_mul<signed char>" not in src


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", ["int8", "fp16", "sum", "tuple", "helper_int8", "helper_fp16"])
def test_they_compile_without_warnings(case, arch):
    kernel, args, constexprs = {
        "int8": (scaled_int8_kernel, (np.zeros(8, np.int8), np.zeros(8, np.int32), 8), dict(BLOCK=128)),
        "fp16": (eps_fp16_kernel, (np.zeros(8, np.float16), np.zeros(8, np.float32), 8), dict(BLOCK=128)),
        "sum": (unrolled_sum_fp16_kernel, (np.zeros(8, np.float16), np.zeros(8, np.float32), 8),
                dict(BLOCK=64, PARTS=4)),
        "tuple": (tuple_and_half_block_kernel, (np.zeros(8, np.int16), np.zeros(8, np.float32), 8),
                  dict(BLOCK=64)),
        "helper_int8": (helper_gain_int8_kernel, (np.zeros(8, np.int8), np.zeros(8, np.int32), 8), dict(BLOCK=128)),
        "helper_fp16": (helper_eps_fp16_kernel, (np.zeros(8, np.float16), np.zeros(8, np.float32), 8),
                        dict(BLOCK=128)),
    }[case]
    result = compile_offline(kernel.cuda_source(*args, **constexprs), arch)
    assert not result.warnings and result.spill_bytes == 0, result.log


def test_assigned_constants_are_literals_in_the_cuda():
    """`x + shift` with `shift = 3` adds in int32 (x widened first), and the constants are written in place; a
    chain of constant arithmetic (`unrolled += i` over a static_range) folds to one number
    (tests/test_compile_features.py)."""
    src = tuple_and_half_block_kernel.cuda_source(np.zeros(8, np.int16), np.zeros(8, np.float32), 8, BLOCK=64)
    assert "tp::cast<int>(x[0])" in src and "wrap_add<int>(cvt[0], 3)" in src and "0.5f" in src   # one register
