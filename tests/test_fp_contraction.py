"""CPU: products read by an add or subtract in their region become one fma (analysis/fp_contraction.py), with
LLVM's choice of operand, fp16/bf16 ones in their own type (`__hfma`); products in another region stay as written; tl.exp2 is
ex2.approx.ftz.f32 as in Triton and the interpreter flushes its fp32 results under 2**-126 like it; NVRTC
compiles the kernels for sm_80 and sm_90a without warnings or spills."""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from contraction_kernels import exp2_of, half_fma, half_products, products, scaled_shift
from transpiler.runtime.compiler import compile_offline, nvrtc_available

N = 1000


def _f32(*shape):
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32)


def _products_source(dtype=np.float32, kernel=products, **kw):
    a = _f32(N).astype(dtype)
    out = np.empty(6 * N, dtype)
    if kernel is products:
        return products.cuda_source(a, a, a, out, N, 3, BLOCK=256, **kw)
    return half_products.cuda_source(a, a, a, out, N, BLOCK=256, **kw)


def test_a_product_read_twice_is_fused_into_the_subtract():
    x, y = _f32(4, 100), np.empty((4, 100), np.float32)
    src = scaled_shift.cuda_source(x, y, 100, 0.5, BLOCK=128)
    assert re.search(r"fmaf\([^,]+, scale, -\(", src), src      # y - m as fma(x, scale, -m)
    assert re.search(r"\] \* scale;", src)                      # the product stays for the maximum
    assert "tp::exp2_ftz(" in src and "exp2f(" not in src


def test_each_operand_position_follows_llvms_rule():
    body = _products_source()
    body = body[body.index("__global__"):]
    fused = re.findall(r"= (fmaf\([^;]*\));", body)
    assert fused == ["fmaf(a[r], b[r], c[r])",            # p + c
                     "fmaf(a[r], b[r], c[r])",            # c + p
                     "fmaf(a[r], b[r], -(c[r]))",         # p - c
                     "fmaf(-(a[r]), b[r], c[r])",         # c - p
                     "fmaf(-(b[r]), c[r], p[r])"], fused  # p - q: q has fewer readers, so q is fused
    assert re.search(r"p\[r\] = a\[r\] \* b\[r\];", body)    # p stays: the loop still reads it
    assert not re.search(r"\bq\[r\] =", body)                      # q had one reader: gone
    # the loop's add reads p from outside its region: a plain add
    assert re.search(r"acc_1\[r\] = acc\[r\] \+ p\[r\];", body), body


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_products_follow_llvms_rule_in_their_own_type(dtype):
    # Triton's PTX (sm_80 and sm_90) has fma.rn.f16 / fma.rn.bf16 where LLVM fuses: one rounding in the element
    # type, never through fp32 (fmaf and a conversion would round twice)
    a = _f32(N)
    if dtype == "bfloat16":
        a = transpiler.reinterpret((a.view(np.uint32) >> 16).astype(np.uint16), tl.bfloat16)
    else:
        a = a.astype(np.float16)
    out = np.empty(6 * N, np.float16) if dtype == "float16" else transpiler.reinterpret(
        np.empty(6 * N, np.uint16), tl.bfloat16)
    body = products.cuda_source(a, a, a, out, N, 3, BLOCK=256)
    body = body[body.index("__global__"):]
    assert "fmaf(" not in body
    assert re.findall(r"= (__hfma\([^;]*\));", body) == [
        "__hfma(a[r], b[r], c[r])", "__hfma(a[r], b[r], c[r])", "__hfma(a[r], b[r], __hneg(c[r]))",
        "__hfma(__hneg(a[r]), b[r], c[r])", "__hfma(__hneg(b[r]), c[r], p[r])"], body
    assert re.search(r"acc_1\[r\] = acc\[r\] \+ p\[r\];", body), body


def test_tl_fma_of_sixteen_bit_values_rounds_once_in_their_type():
    a = _f32(N).astype(np.float16)
    src = half_fma.cuda_source(a, a, a, np.empty(N, np.float16), N, BLOCK=256)
    assert "__hfma(" in src and "fmaf(" not in src[src.index("__global__"):]


def test_explain_names_the_contraction():
    a = _f32(N)
    text = str(products.explain(a, a, a, np.empty(6 * N, np.float32), N, 3, BLOCK=256))
    assert "[contraction]" in text and "fused multiply-add" in text


def test_interpreter_flushes_exp2_below_the_smallest_normal():
    x = np.array([-130.0, -126.0, -125.5, -1.0, 0.0, 3.5] + [0.0] * 122, np.float32)
    y = np.full(128, np.nan, np.float32)
    exp2_of.interpret[(1,)](x, y, 6, BLOCK=128)
    assert y[0] == 0.0 and y[1] == np.float32(2.0 ** -126) and y[2] == np.float32(2.0 ** -125.5)
    assert y[3] == 0.5 and y[4] == 1.0 and y[5] == np.float32(2.0 ** 3.5)
    x64, y64 = x.astype(np.float64), np.full(128, np.nan)
    exp2_of.interpret[(1,)](x64, y64, 6, BLOCK=128)
    assert y64[0] == 2.0 ** -130                                  # fp64 keeps its subnormal-free range


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_kernels_compile_without_warnings(arch):
    x = _f32(4, 100)
    sources = [scaled_shift.cuda_source(x, np.empty_like(x), 100, 0.5, BLOCK=128, arch=arch if arch == "sm_90a" else None),
               _products_source(arch=arch if arch == "sm_90a" else None),
               _products_source(np.float16, half_products, arch=arch if arch == "sm_90a" else None),
               _products_source(np.float16, arch=arch if arch == "sm_90a" else None)]
    b16 = transpiler.reinterpret(np.zeros(N, np.uint16), tl.bfloat16)
    sources.append(half_fma.cuda_source(b16, b16, b16, b16, N, BLOCK=256, arch=arch if arch == "sm_90a" else None))
    for src in sources:
        result = compile_offline(src, arch)
        assert result.spill_bytes == 0 and not result.warnings, result.log
        assert "ex2.approx.ftz.f32" in result.ptx or "exp2_ftz" not in src
