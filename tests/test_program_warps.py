"""Programs on fewer warps than launched (analysis/program_warps.py): which row kernels run on how many warps and
why, what stays as launched (atomics, a barrier, a loop of its own, no reduction, packed programs, the switch
off), the source and the variant the runtime launches (threads per block, the layout over the fewer warps), and
NVRTC on sm_80 and sm_90a (no spills, no warnings). Results on a GPU: tests/test_gpu_membound.py (the
`*_on_fewer_warps` cases)."""
import numpy as np
import pytest

import membound_kernels as K
from example_specs import analysis_for, source_for
from packing_kernels import rows_with_barrier
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def _rng():
    return np.random.default_rng(0)


def _analysis(case):
    return analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])[1]


def _variant(case):
    return case["kernel"].compiled_variant(*case["args"], num_warps=case["num_warps"], **case["constexprs"])


# name -> (case, warps a program runs on by default, with TRANSPILER_PROGRAM_WARPS=64)
CASES = {
    "softmax_fp16_4096_w16": (lambda: K.softmax_case(_rng(), 64, 4000, 4096, np.float16, num_warps=16), 8, 4),
    "softmax_fp16_2048_w8": (lambda: K.softmax_case(_rng(), 64, 2000, 2048, np.float16, num_warps=8), 4, 4),
    "softmax_fp32_4096_w16": (lambda: K.softmax_case(_rng(), 64, 4000, 4096, num_warps=16), 16, 8),
    "softmax_fp16_8192_w16": (lambda: K.softmax_case(_rng(), 64, 8190, 8192, np.float16, num_warps=16), 16, 8),
    "norm_fp16_2048_w8": (lambda: K.norm_case(_rng(), 64, 2000, 2048, np.float16, num_warps=8), 4, 4),
    "argmax_fp16_4096_w16": (lambda: K.argmax_case(_rng(), 64, 4000, 4096, np.float16, num_warps=16), 8, 4),
    "argmax_fp32_1024_w4": (lambda: K.argmax_case(_rng(), 64, 1000, 1024, num_warps=4), 4, 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("target", [None, "64", "0"])
def test_warps_a_program_runs_on(name, target, monkeypatch):
    if target is not None:
        monkeypatch.setenv("TRANSPILER_PROGRAM_WARPS", target)
    make, default, at64 = CASES[name]
    case = make()
    expected = {None: default, "64": at64, "0": case["num_warps"]}[target]
    analysis = _analysis(case)
    assert analysis.options.num_warps == analysis.program_warps == expected
    variant = _variant(case)
    assert variant.num_warps == expected
    assert f"__launch_bounds__({32 * expected})" in variant.source
    launched = (f"; launched with num_warps = {case['num_warps']}: analysis/program_warps.py"
                if expected != case["num_warps"] else "")
    assert f"// num_warps = {expected} ({32 * expected} threads per program{launched})" in variant.source
    if case["num_warps"] > 4:
        (d,) = analysis.decisions.for_pass("program_warps")
        assert (f"launched as {expected}" in d.what) == (expected != case["num_warps"])
        assert "TRANSPILER_PROGRAM_WARPS=0" in d.why if target == "0" else True


def test_the_layout_spans_the_fewer_warps():
    source = source_for(*(lambda c: (c["kernel"], c["args"], c["constexprs"], c["num_warps"]))(
        CASES["softmax_fp16_4096_w16"][0]()))
    assert "16 registers x 32 lanes x 8 warps" in source


def _rows_args(dtype, n_cols=4096, n_rows=8):
    return [np.zeros((n_rows, n_cols), dtype), np.zeros(n_rows, np.float32), n_cols]


@pytest.mark.parametrize("kernel, args, reason", [
    (K.histogram_rows, _rows_args(np.float16), "atomics"),
    (rows_with_barrier, _rows_args(np.float16), "tl.debug_barrier"),
    (K.chunked_row_max, _rows_args(np.float16), "a runtime loop of its own"),
])
def test_kernels_that_depend_on_the_blocks_threads_run_as_launched(kernel, args, reason):
    _, analysis = analysis_for(kernel, args, dict(BLOCK=1024 if kernel is K.chunked_row_max else 4096), 16)
    assert analysis.options.num_warps == 16
    (d,) = analysis.decisions.for_pass("program_warps")
    assert reason in d.why


def test_a_kernel_without_a_reduction_is_not_considered():
    x = np.zeros(1 << 16, np.float16)
    _, analysis = analysis_for(K.plain_copy, [x, x.copy(), x.size], dict(BLOCK=4096), 16)
    assert analysis.options.num_warps == 16
    assert analysis.decisions.for_pass("program_warps") == []


def test_packed_programs_keep_their_one_warp():
    case = K.softmax_case(_rng(), 64, 500, 512, np.float16, num_warps=8)
    analysis = _analysis(case)
    assert analysis.packing is not None and analysis.program_warps == 1
    assert analysis.options.num_warps == 8       # the block: 8 programs of one warp
    assert analysis.decisions.for_pass("program_warps") == []


def test_the_decision_is_in_explain():
    case = CASES["softmax_fp16_4096_w16"][0]()
    report = case["kernel"].explain(*case["args"], num_warps=16, **case["constexprs"])
    assert "num_warps = 8 (256 threads per program)" in report
    assert "why [program_warps]: 8 warps a program (num_warps = 16 launched as 8)" in report


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(n for n, (_, d, _) in CASES.items() if d != CASES[n][0]()["num_warps"]))
def test_programs_on_fewer_warps_compile_without_spills_or_warnings(name, arch):
    case = CASES[name][0]()
    result = compile_offline(source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"]), arch)
    assert result.spill_bytes == 0, result.log
    assert "warning" not in result.log.lower(), result.log
