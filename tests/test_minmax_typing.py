"""tl.minimum / tl.maximum / tl.clamp / tl.fma are typed as Triton 3.6 types them, on both paths.

Triton's `minimum(x, y)` first turns a Python number into a scalar tensor (int32 / uint32 / int64 by value,
fp32 or fp64 by magnitude), so the number promotes like any scalar (`minimum(u8, 3)` is int32, unlike
`u8 + 3`), and it computes bf16 operands in fp32 (the result stays fp32). `clamp` does the same and is defined
on floats only; `fma` converts numbers the same way (no bf16 step) and promotes x with y, z with x, z with y.
Each case prints the result dtype on the compiler (`kernel.ir`) and the interpreter, runs on the interpreter
against NumPy computed with the expected types, and compiles with NVRTC.
"""
import numpy as np
import pytest

import minmax_kernels as K
import transpiler.language as tl
from dtype_kernels import round_bf16
from transpiler import DTypeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

N, BLOCK = 300, 128
GRID = (-(-N // BLOCK),)
NP = {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "uint32": np.uint32, "int32": np.int32,
      "int64": np.int64, "float16": np.float16, "float32": np.float32, "float64": np.float64}


def tl_dtype(name):
    return getattr(tl, name)


def values_of(rng, name, n=N):
    """Inputs exactly representable in `name` (so the in-kernel conversion from the carrier is exact)."""
    if name == "bfloat16":
        return round_bf16(rng.uniform(-4, 4, n).astype(np.float32)).astype(np.float64)
    if name.startswith("float"):
        return rng.uniform(-4, 4, n).astype(NP[name]).astype(np.float64)
    info = np.iinfo(NP[name])
    return rng.integers(max(info.min, -2**62), min(info.max, 2**62), n, endpoint=True).astype(np.int64)


def typed(x, name):
    """Host values as the kernel's converted block (bf16 held as float32)."""
    return round_bf16(x.astype(np.float32)) if name == "bfloat16" else x.astype(NP[name])


def printed_dtypes(capsys, kernel, args, constexprs):
    """(the dtype the compiler printed, the one the interpreter printed), running the interpreter fully."""
    kernel.ir(*args, **constexprs)
    compiled = capsys.readouterr().out.strip()
    kernel.interpret[GRID](*args, **constexprs)
    interpreted = capsys.readouterr().out.strip().splitlines()
    return compiled, interpreted[0] if interpreted else ""


def compiles(kernel, args, constexprs):
    if nvrtc_available():
        result = compile_offline(kernel.cuda_source(*args, **constexprs), "sm_90a")
        assert not result.warnings, result.log


NUMBER_CASES = [
    # (operand dtype, number, maximum?, Triton's result dtype)
    ("uint8", 255, True, "int32"),       # weak typing kept uint8: 255 + 1 wrapped to 0
    ("int8", 100, True, "int32"),        # ... and int8: 127 + 1 wrapped to -128
    ("uint16", -1, True, "int32"),       # ... and refused the negative number
    ("uint32", -1, True, "uint32"),      # -1 is int32, promoted with uint32: 0xFFFFFFFF, and + 1 wraps
    ("uint32", -1, False, "uint32"),
    ("int64", 7, False, "int64"),
    ("int32", 2**40, False, "int64"),
    ("float16", 2.0, False, "float32"),  # weak typing kept fp16 and rounded the + 1 there
    ("bfloat16", 0.5, True, "float32"),
    ("float32", 1e300, False, "float64"),
]


@pytest.mark.parametrize("name,c,is_max,result", NUMBER_CASES,
                         ids=[f"{'max' if c[2] else 'min'}_{c[0]}_{c[1]}" for c in NUMBER_CASES])
def test_minimum_maximum_with_a_number_promote_it_as_a_scalar(capsys, name, c, is_max, result):
    rng = np.random.default_rng(11)
    x = values_of(rng, name)
    if name.startswith("float"):
        x = x * 2.0**-8                               # small values: + 1 in fp16 rounds them away
    out = np.full(N, np.nan if result.startswith("float") or name == "bfloat16" else -7,
                  np.float64 if result.startswith("float") else np.int64)
    args, constexprs = (x, out, N), dict(DT=tl_dtype(name), C=c, MAX=is_max, BLOCK=BLOCK)
    compiled, interpreted = printed_dtypes(capsys, K.min_with_number_kernel, args, constexprs)
    assert compiled == interpreted == tl_dtype(result).name
    rt = NP[result]
    xv = typed(x, name).astype(rt)
    cv = np.array(c).astype(rt) if result.startswith("float") else np.array(c & ((1 << 64) - 1)).astype(
        np.uint64).astype(rt)
    with np.errstate(over="ignore"):
        y = (np.maximum(xv, cv) if is_max else np.minimum(xv, cv)) + rt(1)
    np.testing.assert_array_equal(out, y.astype(out.dtype))
    compiles(K.min_with_number_kernel, args, constexprs)


def test_maximum_of_bf16_blocks_is_fp32_so_the_sum_after_it_rounds_to_fp32(capsys):
    rng = np.random.default_rng(5)
    x, y = values_of(rng, "bfloat16"), values_of(rng, "bfloat16")
    z = round_bf16((rng.uniform(-4, 4, N) * 2.0**-6).astype(np.float32)).astype(np.float64)
    out = np.full(N, np.nan, np.float32)
    args, constexprs = (x, y, z, out, N), dict(BLOCK=BLOCK)
    compiled, interpreted = printed_dtypes(capsys, K.bf16_max_then_add_kernel, args, constexprs)
    assert compiled == interpreted == "fp32"
    expected = np.maximum(x.astype(np.float32), y.astype(np.float32)) + z.astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    assert not np.array_equal(round_bf16(expected), expected), "the inputs must tell fp32 from bf16"
    compiles(K.bf16_max_then_add_kernel, args, constexprs)


@pytest.mark.parametrize("name,result", [("bfloat16", "float32"), ("float16", "float16"), ("float64", "float64")])
def test_clamp_of_blocks_computes_bf16_in_fp32(capsys, name, result):
    rng = np.random.default_rng(2)
    x, a, b = (values_of(rng, name) for _ in range(3))
    lo, hi = np.minimum(a, b) * 2.0**-5, np.maximum(a, b)
    lo = typed(lo, name).astype(np.float64)
    out = np.full(N, np.nan, np.float64)
    args, constexprs = (x, lo, hi, out, N), dict(DT=tl_dtype(name), BLOCK=BLOCK)
    compiled, interpreted = printed_dtypes(capsys, K.clamp_kernel, args, constexprs)
    assert compiled == interpreted == tl_dtype(result).name
    rt = NP[result]
    xv, lov, hiv = (typed(v, name).astype(rt) for v in (x, lo, hi))
    np.testing.assert_array_equal(out, (np.minimum(np.maximum(xv, lov), hiv) + lov).astype(np.float64))
    compiles(K.clamp_kernel, args, constexprs)


def test_clamp_of_fp16_with_numbers_is_fp32(capsys):
    rng = np.random.default_rng(4)
    x = values_of(rng, "float16")
    out = np.full(N, np.nan, np.float32)
    args, constexprs = (x, out, N), dict(LO=-0.5, HI=1.0, DT=tl.float16, BLOCK=BLOCK)
    compiled, interpreted = printed_dtypes(capsys, K.clamp_number_kernel, args, constexprs)
    assert compiled == interpreted == "fp32"
    np.testing.assert_array_equal(out, np.clip(x.astype(np.float16), -0.5, 1.0).astype(np.float32))
    compiles(K.clamp_number_kernel, args, constexprs)


def test_fma_with_a_number_is_fp32_for_fp16_operands(capsys):
    rng = np.random.default_rng(8)
    x, y = values_of(rng, "float16"), values_of(rng, "float16")
    out = np.full(N, np.nan, np.float32)
    args, constexprs = (x, y, out, N), dict(C=1.0, DT=tl.float16, BLOCK=BLOCK)
    compiled, interpreted = printed_dtypes(capsys, K.fma_number_kernel, args, constexprs)
    assert compiled == interpreted == "fp32"
    expected = (x * y + 1.0).astype(np.float32)      # fp16 * fp16 is exact in fp64: one rounding to fp32
    np.testing.assert_array_equal(out, expected)
    compiles(K.fma_number_kernel, args, constexprs)


@pytest.mark.parametrize("name,z_name,result", [("bfloat16", "bfloat16", "bfloat16"),
                                                ("float16", "float32", "float32"),
                                                ("float16", "float16", "float16")])
def test_fma_of_blocks_promotes_pairwise(capsys, name, z_name, result):
    rng = np.random.default_rng(9)
    x, y, z = values_of(rng, name), values_of(rng, name), values_of(rng, z_name)
    out = np.full(N, np.nan, np.float64)
    args, constexprs = (x, y, z, out, N), dict(DT=tl_dtype(name), Z_DT=tl_dtype(z_name), BLOCK=BLOCK)
    compiled, interpreted = printed_dtypes(capsys, K.fma_blocks_kernel, args, constexprs)
    assert compiled == interpreted == tl_dtype(result).name
    exact = x * y + z                                   # exact: 8- and 11-bit mantissas fit float64's
    expected = typed(exact.astype(np.float32).astype(np.float64), result) if result == "bfloat16" else \
        exact.astype(NP[result])
    np.testing.assert_allclose(out, expected.astype(np.float64), rtol=2.0**-8 if result == "bfloat16" else 0,
                               atol=0)
    compiles(K.fma_blocks_kernel, args, constexprs)


@pytest.mark.parametrize("kernel,constexprs", [
    (K.clamp_number_kernel, dict(LO=0, HI=5, DT=tl.int32, BLOCK=BLOCK)),
    (K.fma_number_kernel, dict(C=1, DT=tl.int32, BLOCK=BLOCK)),
], ids=["clamp", "fma"])
def test_clamp_and_fma_of_integers_are_refused_on_both_paths(kernel, constexprs):
    x = np.arange(N, dtype=np.float64)
    args = (x, np.zeros(N, np.int32), N) if kernel is K.clamp_number_kernel else (x, x, np.zeros(N, np.int32), N)
    with pytest.raises(DTypeError, match="floating-point"):
        kernel.ir(*args, **constexprs)
    with pytest.raises(DTypeError, match="floating-point"):
        kernel.interpret[GRID](*args, **constexprs)
