"""Program packing (analysis/program_packing.py): which kernels run several programs of one warp per block, the
reason in `explain`, the source it makes (the program id of warp `program_slot`, a program's scalar stores from
its own first lane, the loop that keeps programs past the grid idle), NVRTC on sm_80 and sm_90a (no spills, no
warnings, 16-byte accesses in the PTX), and the launcher's grid. Results on a GPU: tests/test_gpu_program_packing.py;
the references themselves are checked here on the interpreter."""
import re

import numpy as np
import pytest

import packing_kernels as P
from example_specs import analysis_for, source_for
from transpiler.runtime.compiler import compile_offline, nvrtc_available
from transpiler.runtime.launcher import RowLoopLauncher

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def _analysis(case):
    return analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])[1]


def _source(case, arch=None):
    return source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"], arch=arch)


def _packing_decision(case):
    (d,) = _analysis(case).decisions.for_pass("packing")
    return d


def _small(rng):
    """Small versions of the GPU cases, for the interpreter and the decisions."""
    return [("softmax", P.softmax_case(rng, 7, 100, 103)), ("softmax_fp16", P.softmax_case(rng, 6, 700, 704, np.float16)),
            ("layernorm", P.layernorm_case(rng, 5, 77, 80)), ("cumsum", P.cumsum_case(rng, 6, 50, 53)),
            ("blocks_of_rows", P.blocks_of_rows_case(rng, 5, 300)), ("rows_until", P.rows_until_case(rng, 9, 40, 6))]


@pytest.mark.parametrize("index", range(6))
def test_references_agree_with_the_interpreter(index):
    name, case = _small(np.random.default_rng(index))[index]
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, **case["constexprs"])
    P.check(case, args)


@pytest.mark.parametrize("index", range(6))
def test_short_row_kernels_are_packed_one_warp_per_program(index):
    name, case = _small(np.random.default_rng(0))[index]
    analysis = _analysis(case)
    assert analysis.packing is not None and analysis.programs_per_block == 4 and analysis.program_warps == 1
    d = _packing_decision(case)
    assert d.what.startswith("4 programs per block, one warp each")
    # Every layout of the program is over one warp: no warp bits anywhere.
    assert all(not layout.warp for layout in analysis.layouts.layout.values())
    assert analysis.shared_memory.total_bytes() == 0


def test_the_number_of_programs_per_block_is_num_warps():
    case = P.softmax_case(np.random.default_rng(0), 64, 130, 136, np.float16, num_warps=8)
    assert _analysis(case).programs_per_block == 8
    assert "static_cast<int>(blockIdx.x) * 8 + program_slot" in _source(case)


@pytest.mark.parametrize("kernel, args, constexprs, num_warps, reason", [
    (P.mixed_widths, [np.zeros((4, 256), np.float16), np.zeros(256, np.float32), np.zeros(4, np.float32), 256],
     dict(BLOCK=256), 4, "2 layouts"),
    # Rows of an odd stride are read one element a thread, the weights 8 bytes a thread: two layouts at one
    # warp (at four, 128 columns are one element a thread in both).
    (P.short_layernorm, [np.zeros((4, 81), np.float16), np.zeros((4, 81), np.float16), np.zeros(77, np.float16),
                         np.zeros(77, np.float16), np.zeros(4, np.float32), np.zeros(4, np.float32), 81, 77, 1e-5],
     dict(BLOCK=128), 4, "2 layouts"),
    # x, w and b of 1024 halves: 6 KiB a program, its registers would halve the blocks per SM (measured slower).
    (P.short_layernorm, [np.zeros((4, 1000), np.float16), np.zeros((4, 1000), np.float16), np.zeros(1000, np.float16),
                         np.zeros(1000, np.float16), np.zeros(4, np.float32), np.zeros(4, np.float32), 1000, 1000,
                         1e-5], dict(BLOCK=1024), 4, "its loads hold 6144 bytes a program"),
    (P.rows_with_barrier, [np.zeros((4, 100), np.float32), np.zeros(4, np.float32), 100], dict(BLOCK=128), 4,
     "tl.debug_barrier"),
    (P.tile_row_sums, [np.zeros((64, 32), np.float32), np.zeros(64, np.float32), 64, 32], dict(BM=8, BN=32), 4,
     "layouts"),
    (P.short_softmax, [np.zeros((4, 1000), np.float32), np.zeros((4, 1000), np.float32), 1000, 1000, 1000],
     dict(BLOCK=1024), 4, "its loads hold 4096 bytes a program"),
    (P.short_softmax, [np.zeros((4, 100), np.float32), np.zeros((4, 100), np.float32), 100, 100, 100],
     dict(BLOCK=128), 1, "num_warps = 1"),
])
def test_kernels_that_need_their_whole_block_are_not_packed(kernel, args, constexprs, num_warps, reason):
    _, analysis = analysis_for(kernel, args, constexprs, num_warps)
    (d,) = analysis.decisions.for_pass("packing")
    assert analysis.packing is None and d.what == f"one program per block of {num_warps} warps"
    assert reason in d.why
    assert "program_slot" not in source_for(kernel, args, constexprs, num_warps)


def test_atomics_kernels_without_a_reduction_and_loops_over_long_rows_are_not_packed():
    import membound_kernels as K
    for kernel, args, constexprs, reason in [
            (K.histogram_rows, [np.zeros((4, 64), np.int32), np.zeros(4, np.int32), 64], dict(BLOCK=64), "atomics"),
            (K.plain_copy, [np.zeros(4096, np.float32), np.zeros(4096, np.float32), 4096], dict(BLOCK=512),
             "no reduction"),
            (K.chunked_row_max, [np.zeros((4, 1000), np.float32), np.zeros(4, np.float32), 1000], dict(BLOCK=256),
             "runtime loop of its own")]:
        _, analysis = analysis_for(kernel, args, constexprs)
        (d,) = analysis.decisions.for_pass("packing")
        assert analysis.packing is None and reason in d.why


def test_switches_turn_packing_off_and_set_the_row_limit(monkeypatch):
    case = P.softmax_case(np.random.default_rng(0), 8, 500, 512)
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")
    d = _packing_decision(case)
    assert "TRANSPILER_PACK_PROGRAMS=0" in d.why
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "1")
    monkeypatch.setenv("TRANSPILER_PACK_ROW_BYTES", "1024")
    assert "its loads hold 2048 bytes a program" in _packing_decision(case).why


def test_explain_says_why_and_how_the_block_is_shared():
    case = P.softmax_case(np.random.default_rng(0), 8, 500, 512)
    text = case["kernel"].explain(*case["args"], num_warps=4, **case["constexprs"])
    assert "(128 threads per block, 4 programs of one warp)" in text
    assert re.search(r"why \[packing\]: 4 programs per block, one warp each .*at one warp one layout and no "
                     r"shared memory", text)


def test_source_runs_program_slot_warps_as_programs_of_the_users_grid():
    src = _source(P.layernorm_case(np.random.default_rng(0), 8, 250, 256))
    assert re.search(r"const int n_rows\) \{", src), "the user's grid x is the last parameter"
    assert "const int warp = 0;" in src and "const int program_slot = threadIdx.x >> 5;" in src
    assert "row_start = static_cast<int>(blockIdx.x) * 4 + program_slot" in src
    assert "row_step = static_cast<int>(gridDim.x) * 4" in src
    assert "for (int row = row_start; row < n_rows; row += row_step)" in src
    # mean and rstd are scalars: stored by each program's first lane, not the block's first thread.
    assert src.count("if (lane == 0) *(") == 2 and "threadIdx.x == 0" not in src
    assert "__syncthreads" not in src and "tp_smem" not in src


def test_num_programs_of_axis_0_is_the_users_grid_and_axis_1_is_untouched():
    src = _source(P.blocks_of_rows_case(np.random.default_rng(0), 8, 300))
    body = src[src.index("for (int row = row_start"):]
    assert "gridDim.x" not in body and "gridDim.y" in body and "blockIdx.y" in body


def test_a_program_that_returns_leaves_the_other_programs_of_its_block_running():
    src = _source(P.rows_until_case(np.random.default_rng(0), 9, 40, 6))
    body = src[src.index("for (int row = row_start"):]
    assert "return" not in body and re.search(r"if \(\w+\) \{[^{}]*// x = tl.load", body), \
        "the rest of the row is skipped"


# name -> case: sources compiled offline (no spills, no warnings).
SOURCES = {
    "softmax_fp16_1000": lambda rng: P.softmax_case(rng, 64, 1000, 1024, np.float16),
    "softmax_fp32_509_stride_4092": lambda rng: P.softmax_case(rng, 64, 509, 4092),
    "softmax_fp16_130_w8": lambda rng: P.softmax_case(rng, 64, 130, 136, np.float16, num_warps=8),
    "layernorm_fp16_250": lambda rng: P.layernorm_case(rng, 64, 250, 256),
    "cumsum_fp32_250": lambda rng: P.cumsum_case(rng, 64, 250, 257),
    "blocks_of_rows": lambda rng: P.blocks_of_rows_case(rng, 64, 300),
    "rows_until": lambda rng: P.rows_until_case(rng, 64, 200, 30),
}


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_packed_kernels_compile_without_spills_or_warnings(name, arch):
    case = SOURCES[name](np.random.default_rng(0))
    src = _source(case)
    assert "program_slot" in src
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_packed_row_of_stride_4k_elements_is_read_16_bytes_at_a_time(arch):
    """fp32 rows with a stride of 4 * 1023 elements: 16-byte loads and stores in the PTX of the packed kernel."""
    case = P.softmax_case(np.random.default_rng(0), 64, 509, 4092)
    result = compile_offline(_source(case), arch)
    assert re.search(r"ld\.global(\.nc)?(\.L1::no_allocate)?\.v4\.(f32|u32|b32)", result.ptx), result.ptx[:2000]
    assert re.search(r"st\.global\.v4\.(f32|u32|b32)", result.ptx)


class _RecordingLauncher:
    name = "k"

    def __init__(self):
        self.launches = []

    def launch(self, gx, gy, gz, values, stream):
        self.launches.append((gx, gy, gz, values))


@pytest.mark.parametrize("grid_x, blocks, per_block, launched", [
    (10001, None, 4, 2501), (4, None, 4, 1), (1, None, 8, 1), (10000, 528, 4, 528), (100, 528, 4, 25)])
def test_packed_launcher_launches_a_block_per_programs_per_block(grid_x, blocks, per_block, launched):
    inner = _RecordingLauncher()
    RowLoopLauncher(inner, blocks, per_block).launch(grid_x, 3, 1, (11, 22), 0)
    assert inner.launches == [(launched, 3, 1, (11, 22, grid_x))]


def test_a_packed_kernel_that_would_share_memory_is_an_internal_error_not_a_race(monkeypatch, tmp_path):
    """The emitter's safety net: were the probe ever to let through a kernel whose one-warp programs convert a
    layout through shared memory, generating it fails loudly instead of racing between a block's programs."""
    from transpiler.analysis import program_packing
    from transpiler.errors import InternalCompilerError
    import transpiler
    monkeypatch.setattr(program_packing, "_cooperation_at_one_warp", lambda kernel: None)
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path))       # nothing compiled before this patch is reused
    args = [np.zeros((4, 256), np.float16), np.zeros(256, np.float32), np.zeros(4, np.float32), 256]
    with pytest.raises(InternalCompilerError, match="needed shared memory"):
        source_for(transpiler.jit(P.mixed_widths.fn), args, dict(BLOCK=256), 4)


@needs_nvrtc
def test_explain_for_a_gpu_counts_blocks_and_the_programs_they_hold():
    case = P.softmax_case(np.random.default_rng(0), 8, 1000, 1024, np.float16)
    text = case["kernel"].explain(*case["args"], num_warps=4, arch="sm_90a", **case["constexprs"])
    blocks = int(re.search(r"registers \(sm_90a\): \d+ registers, (\d+) blocks of 4 programs per SM", text).group(1))
    assert f"({4 * blocks} programs)" in text


def test_a_row_held_by_many_reductions_at_once_is_not_packed():
    """Sum, max, min and argmax of a 1024-element int16 row: 160 elements a thread at one warp held by reductions
    (ptxas spilled it on sm_80); a softmax or an argmax of 1024 columns holds 64 and is packed."""
    import dtype_kernels as D
    case = dict(D.all_cases(np.random.default_rng(0)))["reduce_int16"]
    _, analysis = analysis_for(case["kernel"], D.stand_in_args(case), case["constexprs"], 4)
    (d,) = analysis.decisions.for_pass("packing")
    assert analysis.packing is None and "its reductions would hold 160 elements a thread" in d.why
    import membound_kernels as K
    assert _analysis(K.argmax_case(np.random.default_rng(0), 64, 1024, 1024, np.float16)).packing is not None


def test_the_first_row_is_loaded_only_by_programs_inside_the_grid():
    """Found by the H200 sanitizer sweep (initcheck, cumsum_rows_kernel and the softmax example): a packed block's
    warps past the grid loaded a row beyond the last before the row loop's test -- a read past the array."""
    import scan_kernels
    x = np.zeros(7 * 100, np.float32)
    src = scan_kernels.cumsum_rows_kernel.cuda_source(x, np.zeros_like(x), 100, BLOCK=128, REVERSE=False)
    assert "program_slot" in src and "row_ahead" in src     # packed, and the next row loaded one row ahead
    head = src[src.index("const int row_start"):src.index("for (int row_1 = row_start")]
    assert "const bool row_start_in_grid = row_start < n_rows;" in head
    assert re.search(r"&& row_start_in_grid;", head), head
