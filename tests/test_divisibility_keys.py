"""Specialization by divisibility 1/2/4/8/16 of integer arguments and by pointer alignment 1..16 bytes.

Triton keys an integer only by "divisible by 16"; we key it by the largest power of two <= 16 dividing it (one
field), so a row stride of 4k fp32 elements still proves every row 16-byte aligned, and 2k proves 8 bytes. Each
case pins the vector width the vectorize pass chooses and the PTX that NVRTC makes of it on the CPU.
"""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from example_specs import aligned, analysis_for, source_for
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@transpiler.jit
def tile_copy_kernel(X, Y, n_rows, n_cols, x_stride, y_stride, BR: tl.constexpr, BC: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.arange(0, BC)
    m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(X + rows[:, None] * x_stride + cols[None, :], mask=m)
    tl.store(Y + rows[:, None] * y_stride + cols[None, :], x, mask=m)


def _widths(dtype, stride, offset_elems=0):
    x = aligned((8, stride), dtype, offset_elems)
    y = aligned((8, stride), dtype)
    args = [x, y, 8, 128, stride, stride]
    ir, analysis = analysis_for(tile_copy_kernel, args, dict(BR=8, BC=128))
    by_op = {op.name: analysis.vector_width.get(op) for op in ir.walk() if op.name in ("load", "store")}
    return by_op, args


# (dtype, row stride in elements, first element's offset past 16 bytes) -> elements per access of the load
CASES = {
    "fp32_stride_4k": (np.float32, 4092, 0, 4),       # 4092 = 4 * 1023: 16-byte rows although not a multiple of 16
    "fp32_stride_2k": (np.float32, 4094, 0, 2),       # 8-byte rows
    "fp32_stride_odd": (np.float32, 4093, 0, 1),
    "fp16_stride_8k": (np.float16, 4088, 0, 8),       # 4088 = 8 * 511
    "fp16_stride_4k": (np.float16, 4092, 0, 4),       # 8-byte rows of halves
    "fp32_pointer_8_byte_aligned": (np.float32, 4096, 2, 2),   # X 8 bytes past a 16-byte boundary
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_load_width_follows_stride_divisibility_and_pointer_alignment(name):
    dtype, stride, offset, expected = CASES[name]
    widths, _ = _widths(dtype, stride, offset)
    assert widths["load"] == expected
    # the store's pointer Y is 16-byte aligned: its rows are as aligned as the stride allows
    assert widths["store"] == min(expected if offset == 0 else 16 // np.dtype(dtype).itemsize,
                                  16 // np.dtype(dtype).itemsize)


def test_explain_and_header_name_the_divisibility():
    _, args = _widths(np.float32, 4092)
    source = source_for(tile_copy_kernel, args, dict(BR=8, BC=128))
    assert "x_stride int32 (multiple of 4)" in source and "n_cols int32 (multiple of 16)" in source
    report = str(tile_copy_kernel.explain(*args, BR=8, BC=128))
    assert "x_stride: int32 (multiple of 4)" in report


def test_one_variant_per_divisor_not_per_value():
    """Strides 4092 and 1020 (both 4 * odd) share a variant; 4094 (2 * odd) selects another."""
    k = tile_copy_kernel
    sources = {s: source_for(k, _widths(np.float32, s)[1], dict(BR=8, BC=128)) for s in (4092, 1020, 4094)}
    assert sources[4092] == sources[1020] != sources[4094]


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ptx_of_the_2d_load_holds_the_proven_width(name, arch):
    dtype, stride, offset, expected = CASES[name]
    _, args = _widths(dtype, stride, offset)
    result = compile_offline(source_for(tile_copy_kernel, args, dict(BR=8, BC=128)), arch)
    ptx = result.ptx.decode() if isinstance(result.ptx, bytes) else result.ptx
    bytes_per_access = expected * np.dtype(dtype).itemsize
    loads = re.findall(r"ld\.global\S*", ptx)
    if bytes_per_access == 16:
        assert any(".v4." in x for x in loads), loads            # the pin: stride 4k -> ld.global.v4
    elif bytes_per_access == 8:
        assert any(".v2." in x for x in loads) and not any(".v4." in x for x in loads), loads
    else:
        assert loads and not any(re.search(r"\.v[24]\.", x) for x in loads), loads
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log
