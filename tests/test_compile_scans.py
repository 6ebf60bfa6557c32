"""Scans compile: NVRTC for sm_80 and sm_90a without warnings or spills; the emitted CUDA walks registers,
lanes and warps as the layout says; result types follow Triton's; unsupported uses are clear errors."""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from scan_kernels import (all_cases, case_chunked_cumsum, case_cumsum_2d, case_cumsum_rows,
                          case_cumsum_transposed_flat, case_linear_recurrence)
from transpiler.errors import CompileTimeError, DTypeError, ShapeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

CASES = all_cases(np.random.default_rng(0))


def _source(case):
    return case["kernel"].cuda_source(*case["args"], num_warps=case.get("num_warps", 4), **case["constexprs"])


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_scan_kernel_compiles_without_spills(name, case, arch):
    result = compile_offline(_source(case), arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


def test_one_warp_scan_is_shuffles_up_without_shared_memory():
    rng = np.random.default_rng(0)
    src = _source(case_cumsum_rows(rng, n=29, block=32, num_warps=1))
    assert [f"tp::shfl_up(y[r], {d})" in src for d in (1, 2, 4, 8, 16)] == [True] * 5
    assert "__syncthreads" not in src and "tp_smem" not in src
    assert "tp::shfl_down" not in src


def test_reverse_scan_shuffles_down_and_counts_lanes_from_the_end():
    src = _source(case_cumsum_rows(np.random.default_rng(0), n=60, block=64, reverse=True, num_warps=1))
    assert "tp::shfl_down(" in src and "tp::shfl_up(" not in src
    assert "31 - (lane)" in src or "31 - lane" in src


def test_registers_scan_in_order_then_one_exclusive_shuffle():
    """Two registers per thread along the axis: they combine in the thread, and the lanes exchange totals."""
    src = _source(case_cumsum_rows(np.random.default_rng(0), n=48, block=64, num_warps=1))
    assert "y[r] = y[prev] + y[r];" in src
    assert "// the lanes before this one" in src
    assert "tp::shfl_from" not in src


def test_one_warp_register_chunks_carry_the_last_lanes_total():
    """Registers 32 elements apart (an odd row length: no known alignment): chunk totals come from lane 31."""
    src = _source(case_cumsum_rows(np.random.default_rng(0), n=51, block=64, num_warps=1))
    assert "tp::shfl_from(y[" in src and "lane | 31" in src
    assert "__syncthreads" not in src


def test_several_warps_carry_totals_through_shared_memory_with_one_barrier(monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_LOOP", "0")      # one row per program: the scan runs once
    src = _source(case_cumsum_rows(np.random.default_rng(0), n=1000, block=1024))
    scan = src[src.index("y = tl.cumsum("):src.index("tl.store(Y")]
    assert scan.count("__syncthreads();") == 1
    assert "y_smem[" in scan and "if (lane == 31)" in scan


def test_a_scan_in_a_row_loop_waits_before_the_next_row_reuses_its_buffer(monkeypatch):
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")     # programs of 4 warps: the scan crosses warps
    src = _source(case_cumsum_rows(np.random.default_rng(0), n=500, block=512))    # 16 bytes a thread: folded
    loop = src[src.index(" = row_start; "):]        # the row loop (its variable renamed: the kernel has a `row`)
    scan = loop[loop.index("y = tl.cumsum("):]
    assert scan[:scan.index("y_smem[")].count("__syncthreads();") == 1


def test_scan_inside_a_loop_waits_before_reusing_its_buffer():
    src = _source(case_chunked_cumsum(np.random.default_rng(0)))
    loop = src[src.index("for (int start"):]
    scan = loop[loop.index("tl.cumsum("):]
    assert scan[:scan.index("_smem[")].count("__syncthreads();") == 1


def test_axis0_of_rows_layout_keeps_other_columns_apart():
    """Warps along the scanned rows, lanes along the columns: one shared slot per (chunk, warp, column)."""
    src = _source(case_cumsum_2d(np.random.default_rng(0), 0))
    assert re.search(r"scan_smem\[\(j \* 4 \+ scan_warp\) \* 32 \+ L\d+_dim0\] = scan\[chunk\];", src)


def test_fp16_cumsum_accumulates_in_fp32_and_rounds_once():
    src = _source(case_cumsum_rows(np.random.default_rng(0), np.float16, n=200, block=256))
    assert "float y_acc[" in src and "tp::cast<float>(" in src and "tp::cast<__half>(y_acc[r])" in src


def test_tuple_combine_fn_is_one_device_function_of_outputs_lefts_rights():
    src = " ".join(_source(case_linear_recurrence(np.random.default_rng(0))).split())   # a long line may be broken
    assert ("void combine(float& out0, float& out1, float left0, float left1, float right0, float right1)"
            in src)


def test_layout_that_interleaves_the_axis_scans_in_the_default_layout():
    case = case_cumsum_transposed_flat(np.random.default_rng(0))
    report = case["kernel"].explain(*case["args"], num_warps=4, **case["constexprs"])
    assert "scan in the default blocked layout" in report
    assert "scan add along dim 0" in report


# ---- result types (as Triton's standard library) -----------------------------------------------------------


@transpiler.jit
def _typed_scan_kernel(X, Y, WHAT: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    if WHAT == "cumsum":
        y = tl.cumsum(x, 0)
    elif WHAT == "cumsum_int64":
        y = tl.cumsum(x, 0, dtype=tl.int64)
    else:
        y = x.cumprod(0)
    tl.store(Y + tl.arange(0, BLOCK), y)


def _scan_result_types(what, np_dtype):
    ir = _typed_scan_kernel.ir(np.ones(64, np_dtype), np.zeros(64, np.float64), WHAT=what, BLOCK=64)
    return [r.dtype for o in ir.walk() if o.name == "scan" for r in o.results]


@pytest.mark.parametrize("np_dtype,expected", [(np.int8, tl.int32), (np.int16, tl.int32), (np.uint8, tl.uint32),
                                               (np.bool_, tl.uint32), (np.int64, tl.int64),
                                               (np.float16, tl.float16), (np.float32, tl.float32)])
def test_cumsum_result_type(np_dtype, expected):
    assert _scan_result_types("cumsum", np_dtype) == [expected]


def test_cumsum_dtype_argument_and_cumprod_keeps_narrow_integers():
    assert _scan_result_types("cumsum_int64", np.int32) == [tl.int64]
    assert _scan_result_types("cumprod", np.int8) == [tl.int8]


# ---- errors --------------------------------------------------------------------------------------------


@transpiler.jit
def _bad_scan_kernel(X, WHAT: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if WHAT == "scalar":
        tl.cumsum(tl.sum(x, 0), 0)
    elif WHAT == "axis":
        tl.cumsum(x, 1)
    elif WHAT == "pointer":
        tl.cumsum(X + tl.arange(0, 16), 0)
    elif WHAT == "none":
        tl.cumsum(x, None)
    else:
        tl.cumsum(x, 0, reverse=tl.program_id(0) > 0)


@pytest.mark.parametrize("what,error", [("scalar", ShapeError), ("axis", ShapeError), ("pointer", DTypeError),
                                        ("none", ShapeError), ("runtime_reverse", CompileTimeError)])
def test_unsupported_scans_are_errors_at_the_kernel_line(what, error):
    with pytest.raises(error) as info:
        _bad_scan_kernel.cuda_source(np.zeros(16, np.float32), WHAT=what)
    assert "tl.cumsum" in str(info.value)
