"""What the random-kernel fuzzer (tests/fuzz/) found on the CPU, each as a kernel a Triton user could write.

Each kernel runs on the interpreter against NumPy and its CUDA must compile with NVRTC without a warning (a
warning in generated code is ours, never the user's).
"""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def compiles_cleanly(src):
    if nvrtc_available():
        for arch in ("sm_80", "sm_90a"):
            result = compile_offline(src, arch)
            assert not result.warnings, result.log


@transpiler.jit
def min_all_keep_dims_kernel(X, OUT, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    x = tl.load(X + rows * BN + cols)
    lowest = tl.min(x, axis=None, keep_dims=True)       # [1, 1]: one size-1 axis per axis of x
    total = tl.sum(x, keep_dims=True)
    tl.static_print(lowest.shape, total.shape)
    tl.store(OUT + rows * BN + cols, x - lowest + total)


def test_reduction_over_all_axes_with_keep_dims_keeps_every_axis(capsys):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(4 * 8).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    min_all_keep_dims_kernel.ir(x, out, BM=4, BN=8)
    assert capsys.readouterr().out.strip() == "(1, 1) (1, 1)"
    min_all_keep_dims_kernel.interpret[(1,)](x, out, BM=4, BN=8)
    assert capsys.readouterr().out.strip() == "(1, 1) (1, 1)"
    np.testing.assert_allclose(out, x - x.min() + x.sum(dtype=np.float64), rtol=1e-5, atol=1e-5)
    compiles_cleanly(min_all_keep_dims_kernel.cuda_source(x, out, BM=4, BN=8))


@transpiler.jit
def unused_load_kernel(X, Y, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    y = tl.load(Y + offs, mask=mask, other=1)           # never read
    tl.store(OUT + offs, x * 2, mask=mask)


@needs_nvrtc
def test_a_load_nobody_reads_is_dropped():
    x = np.arange(100, dtype=np.int8)
    y = np.ones(100, np.int64)
    out = np.zeros(100, np.int8)
    unused_load_kernel.interpret[(1,)](x, y, out, 100, BLOCK=128)
    np.testing.assert_array_equal(out, (x.astype(np.int32) * 2).astype(np.int8))
    src = unused_load_kernel.cuda_source(x, y, out, 100, BLOCK=128)
    assert not re.search(r"\bY \+", src), "the unread load of Y is emitted"
    compiles_cleanly(src)


@transpiler.jit
def constant_block_reductions_kernel(OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ones = tl.full((BLOCK,), 3, tl.int32)
    count = tl.sum(ones, axis=0)                       # reduces a splat: no register is read
    top = tl.max(ones, axis=0, keep_dims=True)
    tl.store(OUT + offs, count + top, mask=offs < N)


@needs_nvrtc
def test_reductions_of_a_constant_block_compile_without_warnings():
    out = np.zeros(300, np.int32)
    constant_block_reductions_kernel.interpret[(3,)](out, 300, BLOCK=128)
    np.testing.assert_array_equal(out, np.full(300, 3 * 128 + 3))
    compiles_cleanly(constant_block_reductions_kernel.cuda_source(out, 300, BLOCK=128))


@transpiler.jit
def narrow_constant_shift_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    eights = tl.full((BLOCK,), 8, tl.uint8)
    wrapped = eights << 5                              # 256 wraps to 0 in uint8
    x = tl.load(X + offs, mask=mask, other=0)
    negative = x < 0                                   # always false for unsigned x: still valid Triton
    tl.store(OUT + offs, wrapped + x + negative, mask=mask)


@needs_nvrtc
def test_narrow_integer_constants_wrap_and_unsigned_comparisons_with_zero_compile_cleanly():
    x = np.random.default_rng(2).integers(0, 200, 77).astype(np.uint8)
    out = np.zeros(77, np.uint8)
    narrow_constant_shift_kernel.interpret[(1,)](x, out, 77, BLOCK=128)
    np.testing.assert_array_equal(out, x)
    compiles_cleanly(narrow_constant_shift_kernel.cuda_source(x, out, 77, BLOCK=128))


@transpiler.jit
def store_column_argmin_kernel(X, OUT, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    column = tl.load(X + rows)                               # [BM, 1]
    where = tl.argmin(column, axis=0, keep_dims=True)        # [1, 1], stored over the whole [BM, BN] block
    tl.store(OUT + rows * BN + cols, where)


@needs_nvrtc
def test_a_kept_dims_argmin_stored_over_a_block_compiles_cleanly():
    x = np.random.default_rng(3).permutation(16).astype(np.float64)
    out = np.full(16 * 32, -7, np.int32)
    store_column_argmin_kernel.interpret[(1,)](x, out, BM=16, BN=32, num_warps=1)
    np.testing.assert_array_equal(out, np.full(16 * 32, np.argmin(x)))
    compiles_cleanly(store_column_argmin_kernel.cuda_source(x, out, BM=16, BN=32, num_warps=1))


@transpiler.jit
def int64_min_literal_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    tl.store(OUT + offs, tl.where(x > 0, x, -2**63), mask=mask)


def test_the_most_negative_int64_literal_is_spelled_as_a_valid_constant():
    x = np.random.default_rng(4).integers(-2**40, 2**40, 200)
    out = np.zeros(200, np.int64)
    int64_min_literal_kernel.interpret[(2,)](x, out, 200, BLOCK=128)
    np.testing.assert_array_equal(out, np.where(x > 0, x, np.iinfo(np.int64).min))
    src = int64_min_literal_kernel.cuda_source(x, out, 200, BLOCK=128)
    assert "9223372036854775808" not in src
    compiles_cleanly(src)


# ---- found on the H200 (bench/fuzz.py, 2026-12-01): the compiled path disagreed with Triton and the interpreter ---

@transpiler.jit
def scalar_over_block_kernel(OUT_MOD, OUT_DIV, N, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    d = (offs & 7) + 1                      # varies along the block
    tl.store(OUT_MOD + offs, s % d, mask=mask)
    tl.store(OUT_DIV + offs, s // d, mask=mask)


def test_a_uniform_value_over_a_varying_divisor_is_not_uniform():
    """`s % d` and `s // d` vary with d: the axis info said they were constant over runs (computed once per
    run of registers from the first one), which the compiled kernels got wrong for every element but the first
    of each run."""
    from transpiler.analysis.axis_info import AxisInfoAnalysis
    out_mod, out_div = np.zeros(300, np.int32), np.zeros(300, np.int32)
    ir = scalar_over_block_kernel.ir(out_mod, out_div, 300, -11, BLOCK=256)
    info = AxisInfoAnalysis(ir)
    results = [op.result for op in ir.walk() if op.name == "elementwise" and op.attrs["fn"] in ("mod", "floordiv")]
    assert len(results) == 2 and all(info[r].constancy == (1,) for r in results)
    scalar_over_block_kernel.interpret[(2,)](out_mod, out_div, 300, -11, BLOCK=256)
    d = (np.arange(300) & 7) + 1
    np.testing.assert_array_equal(out_mod, np.fmod(-11, d))
    np.testing.assert_array_equal(out_div, np.trunc(-11 / d).astype(np.int32))


@transpiler.jit
def narrow_constant_argmin_kernel(OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    threes = tl.full((BLOCK,), 3, tl.int16)
    tl.store(OUT + offs, tl.argmin(threes, axis=0) - (-3) + -threes)   # also `-` of the literal -3


@needs_nvrtc
def test_argmin_of_a_narrow_constant_block_and_negated_negative_literals_compile():
    """NVRTC rejected `combine_argmin(short&, int&, 3, idx)` (template deduction) and `--3`."""
    out = np.zeros(1024, np.int32)
    narrow_constant_argmin_kernel.interpret[(1,)](out, BLOCK=1024)      # 8 elements per thread
    np.testing.assert_array_equal(out, np.zeros(1024, np.int32))
    compiles_cleanly(narrow_constant_argmin_kernel.cuda_source(out, BLOCK=1024))


@transpiler.jit
def argument_equal_to_one_kernel(X, OUT, N, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    small = n.to(tl.uint8)                  # n == 1 is specialized, but stays an int32 scalar
    tl.static_print((x + n).dtype, small.dtype)
    tl.store(OUT + offs, (x + n) - small, mask=mask)


def test_an_integer_argument_equal_to_one_is_an_int32_scalar(capsys):
    """Triton specializes an integer argument equal to 1 to the constant 1 but types it as the int32 scalar it
    is: `n.to(...)` works and `x_int8 + n` is int32 (we refused `.to` and typed `+` as with a literal)."""
    x = np.full(100, 127, np.int8)
    out = np.zeros(100, np.int32)
    argument_equal_to_one_kernel.ir(x, out, 100, 1, BLOCK=128)
    assert capsys.readouterr().out.strip() == "int32 uint8"
    argument_equal_to_one_kernel.interpret[(1,)](x, out, 100, 1, BLOCK=128)
    assert capsys.readouterr().out.strip() == "int32 uint8"
    np.testing.assert_array_equal(out, np.full(100, 127))      # 127 + 1 - 1 in int32: no int8 wrap-around
    compiles_cleanly(argument_equal_to_one_kernel.cuda_source(x, out, 100, 1, BLOCK=128))


@transpiler.jit
def argmax_keep_dims_index_only_kernel(X, OUT, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    x = tl.load(X + rows * BN + cols).to(tl.float16)
    tl.store(OUT + cols, tl.argmax(x, axis=0, keep_dims=True))      # [1, BN]; the value half goes unused


@needs_nvrtc
def test_an_unused_value_half_of_a_kept_dims_argmax_is_not_emitted():
    x = np.random.default_rng(5).permutation(8 * 32).astype(np.float32)
    out = np.zeros(32, np.int32)
    argmax_keep_dims_index_only_kernel.interpret[(1,)](x, out, BM=8, BN=32)
    np.testing.assert_array_equal(out, np.argmax(x.reshape(8, 32), axis=0))
    compiles_cleanly(argmax_keep_dims_index_only_kernel.cuda_source(x, out, BM=8, BN=32))


@transpiler.jit
def negate_kernel(X, H, OUT, OUT_H, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(OUT + offs, -tl.load(X + offs, mask=mask), mask=mask)
    tl.store(OUT_H + offs, -tl.load(H + offs, mask=mask), mask=mask)


def test_negation_is_triton_s_zero_minus_x_so_plus_zero_stays_plus_zero():
    """Triton spells `-x` as `0 - x`: -(+0.0) is +0.0 there (C's `-x` gave -0.0: the fp16 and fp32 zeros the
    GPU fuzz run found against Triton)."""
    x = np.array([0.0, -0.0, 1.5, -2.0] * 25, np.float32)
    h = x.astype(np.float16)
    out, out_h = np.full(100, np.nan, np.float32), np.full(100, np.nan, np.float16)
    negate_kernel.interpret[(1,)](x, h, out, out_h, 100, BLOCK=128)
    expected = np.float32(0.0) - x
    np.testing.assert_array_equal(out, expected)
    assert not np.signbit(out[0]) and not np.signbit(out_h[0]) and not np.signbit(out[1])
    np.testing.assert_array_equal(np.signbit(out_h), np.signbit(expected))
    src = negate_kernel.cuda_source(x, h, out, out_h, 100, BLOCK=128)
    assert "0.0f - " in src
    compiles_cleanly(src)


@transpiler.jit
def wrapping_arithmetic_kernel(X, Y, CARRY, PROD_GT, NEG, ABS, USQ, SHL, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    y = tl.load(Y + offs, mask=mask, other=0)
    tl.store(CARRY + offs, ((x + y) < x).to(tl.int8), mask=mask)     # an overflow check, as users write it
    tl.store(PROD_GT + offs, (x * 3 - y > x).to(tl.int8), mask=mask)
    tl.store(NEG + offs, -x, mask=mask)
    tl.store(ABS + offs, tl.abs(x), mask=mask)
    u = x.to(tl.uint16)
    tl.store(USQ + offs, (u * u).to(tl.int32), mask=mask)            # 16-bit operands: C promotes them to int
    tl.store(SHL + offs, (x.to(tl.int8) << 3).to(tl.int32), mask=mask)


@transpiler.jit
def overflow_check_kernel(X, Y, CARRY, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(CARRY + offs, ((x + y) < x).to(tl.int8))


def _wrapping_case(dtype, n, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64).astype(dtype)
    y = rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64).astype(dtype)
    x[:4] = [info.max, info.min, -1, info.max]
    y[:4] = [1, -1, info.min, info.max]
    outs = [np.full(n, -7, np.int8), np.full(n, -7, np.int8), np.full(n, -7, dtype), np.full(n, -7, dtype),
            np.full(n, -7, np.int32), np.full(n, -7, np.int32)]
    with np.errstate(over="ignore"):
        u = x.astype(np.uint16)
        expected = [((x + y) < x).astype(np.int8), (x * dtype(3) - y > x).astype(np.int8), (dtype(0) - x),
                    np.where(x < 0, dtype(0) - x, x).astype(dtype), (u * u).astype(np.uint16).astype(np.int32),
                    (x.astype(np.int8) << np.int8(3)).astype(np.int8).astype(np.int32)]
    return x, y, outs, expected


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_signed_integer_arithmetic_wraps_as_in_triton(dtype):
    """Triton's integer +, -, * and << wrap; C's signed overflow is undefined and the C compiler folded
    `(x + y) < x` into `y < 0` (x not even loaded): computed in unsigned arithmetic now."""
    rng = np.random.default_rng(5)
    n = 300
    x, y, outs, expected = _wrapping_case(dtype, n, rng)
    wrapping_arithmetic_kernel.interpret[(-(-n // 128),)](x, y, *outs, n, BLOCK=128)
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)
    src = wrapping_arithmetic_kernel.cuda_source(x, y, *outs, n, BLOCK=128)
    compiles_cleanly(src)
    if nvrtc_available():
        ptx = compile_offline(overflow_check_kernel.cuda_source(x, y, outs[0], BLOCK=128), "sm_90a").ptx
        width = 8 * np.dtype(dtype).itemsize
        # both operands are read and the sum is compared: the overflow check was not folded away
        assert len(re.findall(rf"ld\.global(?:\.nc)?(?:\.v\d)?\.[us]{width}", ptx)) >= 2, ptx[:3000]
        assert re.search(rf"setp\.lt\.s{width}", ptx), ptx[:3000]


@transpiler.jit
def literal_beyond_fp32_kernel(X, OUT, OUT16, TINY, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=1.0)
    tl.store(OUT + offs, x * 1.3611294676837539e+39, mask=mask)        # the literal is inf as fp32
    tl.store(OUT16 + offs, x.to(tl.float16) * 1.0e5, mask=mask)         # inf as fp16
    tl.store(TINY + offs, x * 1.0e-50 + 1.0, mask=mask)                 # 0 as fp32


def test_a_float_literal_beyond_the_blocks_type_is_inf_there_and_compiles():
    """A literal out of fp32's range met an fp32 block: Triton casts it to inf; we spelled a C float constant
    NVRTC refuses ("floating constant is out of range"). Found by the fuzzer's subnormal family."""
    n = 100
    x = np.linspace(-3, 3, n).astype(np.float32)
    outs = [np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float16), np.full(n, np.nan, np.float32)]
    literal_beyond_fp32_kernel.interpret[(1,)](x, *outs, n, BLOCK=128)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(outs[0], x * np.float32(np.inf))
        np.testing.assert_array_equal(outs[1], x.astype(np.float16) * np.float16(np.inf))
    np.testing.assert_array_equal(outs[2], np.ones(n, np.float32))
    compiles_cleanly(literal_beyond_fp32_kernel.cuda_source(x, *outs, n, BLOCK=128))


@transpiler.jit
def pointer_cast_kernel(T, X, B, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0)
    old = tl.atomic_max((T + offs).to(tl.pointer_type(tl.uint32)), x.to(tl.uint32), mask=m)   # unsigned max
    tl.store(X + offs, old.to(tl.int32, bitcast=True), mask=m)
    tl.store(B.to(tl.pointer_type(tl.uint8)) + offs * 4 + 1, tl.full((BLOCK,), 1, tl.uint8), mask=m)


def test_pointer_casts_reinterpret_memory_on_the_interpreter():
    """The interpreter refused `ptr.to(tl.pointer_type(...))` (Triton's pointer bitcast) that the compiler
    accepts: unsigned atomics on an int32 array, bytes of an int32 array."""
    rng = np.random.default_rng(3)
    n = 60
    t = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    x = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    b = np.zeros(64, np.int32)
    t0, x0 = t.copy(), x.copy()
    pointer_cast_kernel.interpret[(1,)](t, x, b, n, BLOCK=64)
    active = np.arange(64) < n
    want_t = np.where(active, np.maximum(t0.view(np.uint32), x0.view(np.uint32)), t0.view(np.uint32))
    np.testing.assert_array_equal(t, want_t.view(np.int32))
    np.testing.assert_array_equal(x, np.where(active, t0, x0))
    np.testing.assert_array_equal(b, np.where(active, 256, 0))
    compiles_cleanly(pointer_cast_kernel.cuda_source(t, x, b, n, BLOCK=64))


@transpiler.jit
def subnormal_kernel(X, OUT, POSITIVE, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=1.0)
    t = x * 7.346839692639297e-40                   # 2**-130: subnormal products
    tl.store(POSITIVE + offs, (t > 0).to(tl.int8), mask=mask)
    tl.store(OUT + offs, (t + t) * 3.6893488147419103e+19 * 3.6893488147419103e+19, mask=mask)   # * 2**130


def _subnormal_expected(x):
    t = (x.astype(np.float64) * 2.0**-130).astype(np.float32)
    return ((t.astype(np.float64) * 2) * 2.0**130).astype(np.float32), (t > 0).astype(np.int8)


def test_fp32_subnormals_are_kept_as_in_triton():
    """Triton's fp32 arithmetic keeps subnormals (only its libdevice is linked flushing); we compiled with
    CuPy's -ftz=true, so x * 2**-130 was 0 on the GPU. Found by the fuzzer's subnormal family."""
    n = 100
    x = (np.arange(1, n + 1) / 8.0).astype(np.float32)
    out, positive = np.full(n, np.nan, np.float32), np.full(n, -7, np.int8)
    subnormal_kernel.interpret[(1,)](x, out, positive, n, BLOCK=128)
    want_out, want_positive = _subnormal_expected(x)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(positive, want_positive)
    src = subnormal_kernel.cuda_source(x, out, positive, n, BLOCK=128)
    compiles_cleanly(src)
    if nvrtc_available():
        ptx = compile_offline(src, "sm_90a").ptx
        assert re.search(r"mul(\.rn)?\.f32", ptx) and not re.search(r"\.ftz\.f32", ptx), ptx[-3000:]
