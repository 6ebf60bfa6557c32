"""A number assigned to a name is typed as Triton types it (`to_tensor`: int32, uint32, int64, fp32, fp64, int1),
on both paths: after `c = 100`, `x_int8 * c` is int32 (Triton's result, checked with Triton 3.6's own compiler),
where `x_int8 * 100` and `c: tl.constexpr = 100` keep the weak literal's int8. Before this, the compiled path
and the interpreter kept `c` a Python number: int8 products wrapped and fp16 sums rounded where Triton's do
not -- silent wrong answers on kernels that run correctly under Triton."""
import numpy as np
import pytest

from assigned_number_kernels import (constexpr_scale_int8_kernel, eps_fp16_kernel, scaled_int8_kernel,
                                     tuple_and_half_block_kernel, unrolled_sum_fp16_kernel)
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


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", ["int8", "fp16", "sum", "tuple"])
def test_they_compile_without_warnings(case, arch):
    kernel, args, constexprs = {
        "int8": (scaled_int8_kernel, (np.zeros(8, np.int8), np.zeros(8, np.int32), 8), dict(BLOCK=128)),
        "fp16": (eps_fp16_kernel, (np.zeros(8, np.float16), np.zeros(8, np.float32), 8), dict(BLOCK=128)),
        "sum": (unrolled_sum_fp16_kernel, (np.zeros(8, np.float16), np.zeros(8, np.float32), 8),
                dict(BLOCK=64, PARTS=4)),
        "tuple": (tuple_and_half_block_kernel, (np.zeros(8, np.int16), np.zeros(8, np.float32), 8),
                  dict(BLOCK=64)),
    }[case]
    result = compile_offline(kernel.cuda_source(*args, **constexprs), arch)
    assert not result.warnings and result.spill_bytes == 0, result.log


def test_assigned_constants_are_literals_in_the_cuda():
    """`x + shift` with `shift = 3` adds in int32 (x widened first), and the constants are written in place; a
    chain of constant arithmetic (`unrolled += i` over a static_range) folds to one number
    (tests/test_compile_features.py)."""
    src = tuple_and_half_block_kernel.cuda_source(np.zeros(8, np.int16), np.zeros(8, np.float32), 8, BLOCK=64)
    assert "tp::cast<int>(x[r])" in src and "wrap_add<int>(cvt[r], 3)" in src and "0.5f" in src
