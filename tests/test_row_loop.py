"""The row loop (analysis/row_loop.py): which kernels are folded into persistent row loops, which loads run one
row ahead, the source it makes (NVRTC on sm_80 and sm_90a: no spills, no warnings), and the launcher that
launches one wave of programs with the user's grid x as the last parameter. Results on a GPU:
tests/test_gpu_membound.py; the references themselves are checked here on the interpreter."""
import re

import numpy as np
import pytest

import membound_kernels as K
from example_specs import analysis_for, source_for
from transpiler.runtime.compiler import compile_offline, nvrtc_available
from transpiler.runtime.launcher import RowLoopLauncher

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@pytest.fixture(autouse=True)
def _programs_not_packed(monkeypatch):
    """The row loop of programs of `num_warps` warps, its rows ahead in registers; packed programs of one warp:
    tests/test_program_packing.py; rows ahead in a shared-memory ring: tests/test_row_ring.py; programs on fewer
    warps than launched (analysis/program_warps.py, which takes the 16-byte rows here by default):
    tests/test_program_warps.py."""
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")
    monkeypatch.setenv("TRANSPILER_ROW_RING", "0")
    monkeypatch.setenv("TRANSPILER_PROGRAM_WARPS", "0")


def _small(name):
    rng = np.random.default_rng(1)
    builders = {
        "softmax": lambda: K.softmax_case(rng, 7, 100, 103),
        "norm": lambda: K.norm_case(rng, 5, 77, 81),
        "argmax": lambda: K.argmax_case(rng, 9, 65, 67),
        "grid_facts": lambda: K.grid_facts_case(rng, 4, 300),
        "early_return": lambda: K.early_return_case(rng, 7, 50),
        "store_then_load": lambda: K.store_then_load_case(rng, 5, 33),
        "scaled_sums": lambda: K.scaled_sums_case(rng, 6, 70),
    }
    return builders[name]()


def _decision(case):
    _, analysis = analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    (d,) = analysis.decisions.for_pass("row_loop")
    return d, analysis


@pytest.mark.parametrize("name", ["softmax", "norm", "argmax", "grid_facts", "early_return", "store_then_load",
                                  "scaled_sums"])
def test_references_agree_with_the_interpreter(name):
    """The GPU test's references are right: the CPU interpreter (the original grid, one row per program)
    gives the same results."""
    case = _small(name)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, **case["constexprs"])
    K.check(case, args)


@pytest.mark.parametrize("name, prefetched", [("softmax", 1), ("norm", 1), ("argmax", 1), ("grid_facts", 1),
                                              ("early_return", 1), ("store_then_load", 1), ("scaled_sums", 2)])
def test_row_kernels_are_folded_and_say_why(name, prefetched):
    d, analysis = _decision(_small(name))
    assert d.what.startswith("programs folded into a persistent row loop")
    assert f"{prefetched} load(s) issued one row ahead" in d.what
    assert analysis.row_loop is not None and len(analysis.row_loop.prefetched) == prefetched


@pytest.mark.parametrize("kernel, args, constexprs, reason", [
    (K.histogram_rows, [np.zeros((4, 64), np.int32), np.zeros(4, np.int32), 64], dict(BLOCK=64), "atomics"),
    (K.plain_copy, [np.zeros(4096, np.float32), np.zeros(4096, np.float32), 4096], dict(BLOCK=1024),
     "no reduction"),
    (K.chunked_row_max, [np.zeros((4, 1000), np.float32), np.zeros(4, np.float32), 1000], dict(BLOCK=256),
     "runtime loop of its own"),
])
def test_kernels_with_cross_program_effects_or_no_reduction_stay_one_row_per_program(kernel, args, constexprs,
                                                                                      reason):
    _, analysis = analysis_for(kernel, args, constexprs)
    (d,) = analysis.decisions.for_pass("row_loop")
    assert d.what == "one row per program" and reason in d.why
    assert analysis.row_loop is None
    assert "n_rows" not in source_for(kernel, args, constexprs)


def test_switch_turns_the_fold_off(monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_LOOP", "0")
    case = _small("softmax")
    d, analysis = _decision(case)
    assert analysis.row_loop is None and "TRANSPILER_ROW_LOOP=0" in d.why


def test_the_next_rows_loads_are_issued_before_this_rows_reductions():
    case = K.softmax_case(np.random.default_rng(0), 64, 4000, 4096, np.float16, num_warps=16)
    src = source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    assert re.search(r"const int n_rows\) \{", src), "the user's grid x is the last parameter"
    loop = src.index("for (int row = row_start; row < n_rows; row += row_step)")
    body = src[loop:]
    ahead, next_load = body.index("row_ahead < n_rows"), body.index("tp::load<8")
    first_reduce = body.index("combine_max")
    assert ahead < next_load < first_reduce
    assert src.index("tp::load<8") < loop, "the first row is loaded before the loop"
    assert "blockIdx.x" not in body, "program_id(0) inside the loop is the row, not the block"


def test_num_programs_of_axis_0_is_the_users_grid_and_axis_1_is_untouched():
    case = _small("grid_facts")
    src = source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    body = src[src.index("for (int row = row_start"):]
    assert "gridDim.x" not in body and "gridDim.y" in body and "blockIdx.y" in body


def test_a_load_after_a_store_of_the_program_is_not_run_ahead():
    d, analysis = _decision(_small("store_then_load"))
    (load,) = analysis.row_loop.prefetched
    assert load.operands[0].owner is not None and "x" == load.result.name


# name -> (case, folded by default). One row of 16 bytes a thread or less is folded; wider rows stay one row
# per program (measured: their extra registers cost a program per SM), unless TRANSPILER_ROW_LOOP_BYTES says more.
SOURCES = {
    "softmax_fp16_4096_w16": (lambda rng: K.softmax_case(rng, 64, 4000, 4096, np.float16, num_warps=16), True),
    "softmax_fp32_4096_w16": (lambda rng: K.softmax_case(rng, 64, 4000, 4096, num_warps=16), False),
    "softmax_fp16_8192_w16": (lambda rng: K.softmax_case(rng, 64, 8190, 8192, np.float16, num_warps=16), False),
    "softmax_fp16_1024_w4": (lambda rng: K.softmax_case(rng, 64, 1000, 1024, np.float16), True),
    "norm_fp16_2048_w8": (lambda rng: K.norm_case(rng, 64, 2048, 2048, np.float16, num_warps=8), True),
    "argmax_fp16_1024_w4": (lambda rng: K.argmax_case(rng, 64, 1024, 1024, np.float16), True),
    "early_return": (lambda rng: K.early_return_case(rng, 64, 200), True),
    "grid_facts": (lambda rng: K.grid_facts_case(rng, 64, 300), True),
    "scaled_sums": (lambda rng: K.scaled_sums_case(rng, 64, 300), True),
}


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("budget", [None, "64"])
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_row_loops_compile_without_spills_or_warnings(name, budget, arch, monkeypatch):
    if budget:
        monkeypatch.setenv("TRANSPILER_ROW_LOOP_BYTES", budget)
    make, folded = SOURCES[name]
    case = make(np.random.default_rng(0))
    src = source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    assert ("row < n_rows" in src) == (folded or budget == "64")
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


FOLDED_GPU_CASES = {"softmax_fp16_many_rows", "softmax_one_row", "norm_fp16_stride_8k", "argmax_fp32_many_rows",
                    "argmax_fp16_odd_stride", "grid_facts_2d_grid", "early_return_every_third_row",
                    "store_then_load_same_row", "scalar_and_block_loads_ahead",
                    # folded on the launch's warps (TRANSPILER_PROGRAM_WARPS=0 here); by default on half of them,
                    # 32 bytes a thread, one row per program
                    "softmax_fp16_4k_on_fewer_warps", "norm_fp16_2k_on_fewer_warps", "argmax_fp16_4k_on_fewer_warps"}


def test_which_gpu_cases_are_folded():
    """Pins what tests/test_gpu_membound.py covers: folded rows and rows too wide for the budget."""
    folded = set()
    for name, case in K.all_cases(np.random.default_rng(0)):
        _, analysis = analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
        if analysis.row_loop is not None:
            folded.add(name)
    assert folded == FOLDED_GPU_CASES


class _RecordingLauncher:
    name = "k"

    def __init__(self):
        self.launches = []

    def launch(self, gx, gy, gz, values, stream):
        self.launches.append((gx, gy, gz, values))


@pytest.mark.parametrize("grid_x, programs, launched", [(10000, 528, 528), (100, 528, 100), (1, 528, 1)])
def test_row_loop_launcher_launches_one_wave_and_passes_the_grid(grid_x, programs, launched):
    inner = _RecordingLauncher()
    RowLoopLauncher(inner, programs).launch(grid_x, 3, 1, (11, 22), 0)
    assert inner.launches == [(launched, 3, 1, (11, 22, grid_x))]


def test_row_loop_launcher_refuses_a_grid_whose_row_sum_would_overflow():
    from transpiler.errors import LaunchError
    with pytest.raises(LaunchError, match="not supported yet"):
        RowLoopLauncher(_RecordingLauncher(), 1000).launch(2**31 - 10, 1, 1, (), 0)
