"""The row ring (analysis/row_loop.py's ring plan, analysis/row_ring.py, emit_cuda/rules/row_ring.py): which row
loops keep their rows ahead in shared memory and how deep, the order of copies, commits, waits and reads in the
source (NVRTC on sm_80 and sm_90a: no spills, no warnings, cp.async in the PTX), the shared memory it plans, the
launcher's choice between one wave and every program, and the cross-warp combine of reductions.
Results on a GPU: tests/test_gpu_row_ring.py."""
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
    """The cases are named by the warps they run on: neither packed nor launched on fewer warps."""
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")
    monkeypatch.setenv("TRANSPILER_PROGRAM_WARPS", "0")


def _analysis(case):
    return analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])[1]


def _source(case):
    return source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])


def _rng():
    return np.random.default_rng(0)


# name -> (case, ring depth with TRANSPILER_ROW_RING=1 (0: no ring), ring depth with TRANSPILER_ROW_RING=2)
CASES = {
    "softmax_fp32_4096_w16": (lambda: K.softmax_case(_rng(), 64, 4000, 4096, num_warps=16), 1, 1),
    "softmax_fp32_1024_w4": (lambda: K.softmax_case(_rng(), 64, 1000, 1024), 1, 1),
    "softmax_fp16_8192_w16": (lambda: K.softmax_case(_rng(), 64, 8190, 8192, np.float16, num_warps=16), 1, 1),
    "softmax_fp32_ragged_w16": (lambda: K.softmax_case(_rng(), 64, 4093, 4096, num_warps=16), 1, 1),
    # 16 bytes a thread: the register fold's by default; with every row in the ring, 4 slots of 8 KiB
    "softmax_fp16_4096_w16": (lambda: K.softmax_case(_rng(), 64, 4000, 4096, np.float16, num_warps=16), 0, 3),
    "argmax_fp16_1024_w4": (lambda: K.argmax_case(_rng(), 64, 1024, 1024, np.float16), 0, 3),
    # a weight row every program reads: no ring (loop-invariant once folded)
    "norm_fp32_1024_w4": (lambda: K.norm_case(_rng(), 64, 1000, 1024), 0, 0),
    # 2-byte runs (an odd row stride of halves): no cp.async, no ring
    "softmax_fp16_odd_stride": (lambda: K.softmax_case(_rng(), 64, 1000, 1003, np.float16), 0, 0),
}


@pytest.mark.parametrize("mode", ["1", "2"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_which_row_loops_get_a_ring_and_how_deep(name, mode, monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", mode)
    make, default_depth, all_depth = CASES[name]
    depth = default_depth if mode == "1" else all_depth
    analysis = _analysis(make())
    ring = analysis.row_ring
    assert (ring.depth if ring else 0) == depth
    if ring:
        (d,) = analysis.decisions.for_pass("row_ring")
        assert d.what.startswith(f"rows ahead in shared memory: a ring of {depth + 1} slots")
        assert "no barrier" in d.why
        (loop,) = analysis.decisions.for_pass("row_loop")
        assert "shared-memory slots a program" in loop.why


def test_the_depth_follows_the_shared_memory_budget(monkeypatch):
    """4 programs of 512 threads per SM: 128 KiB gives each 32 KiB, two 16 KiB slots; 192 KiB three; 64 KiB
    none (a ring needs two slots)."""
    monkeypatch.setenv("TRANSPILER_ROW_RING", "2")
    make = CASES["softmax_fp32_4096_w16"][0]
    for budget, depth in (("131072", 1), ("196608", 2), ("65536", 0)):
        monkeypatch.setenv("TRANSPILER_ROW_RING_BYTES", budget)
        ring = _analysis(make()).row_ring
        assert (ring.depth if ring else 0) == depth, budget


def test_the_ring_is_off_by_default():
    assert _analysis(CASES["softmax_fp32_4096_w16"][0]()).row_ring is None


def test_the_ring_is_in_the_planned_shared_memory(monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", "1")
    analysis = _analysis(CASES["softmax_fp32_4096_w16"][0]())
    (ring,) = analysis.row_ring.loads
    assert ring.slots == 2 and ring.threads == 512 and ring.vec == 4 and ring.runs == 2
    assert ring.count == 2 * 8 * 512
    planned = analysis.shared_memory.planned((ring.arg, "row ring", 0))
    assert planned.nbytes == 2 * 16384 and int(planned.offset) % 128 == 0
    assert analysis.shared_memory.total_bytes() == 32768 + 128     # and the two reductions' 16 floats each


def test_copies_commits_waits_and_reads_come_in_order(monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", "2")
    src = _source(CASES["softmax_fp16_4096_w16"][0]())      # three rows ahead, a ring of 4 slots
    loop = src.index("for (int row = row_start; row < n_rows; row += row_step)")
    prologue, body = src[:loop], src[loop:]
    assert prologue.count("tp::row_ring_copy<8>") == 3 and prologue.count("tp::row_ring_commit()") == 3
    assert "int ring_read = 0, ring_write = 3;" in prologue
    copy, commit = body.index("tp::row_ring_copy<8>(dst"), body.index("tp::row_ring_commit()")
    wait, read = body.index("tp::row_ring_wait<3>()"), body.index("tp::load<8>(&this_row_L0")
    first_reduce = body.index("combine_max")
    assert copy < commit < wait < read < first_reduce
    # one run a thread: the copy of the row ahead goes to the write slot, the read comes from the read slot
    assert "(ring_write * 1" in body[:commit] and "(ring_read * 1" in body[wait:first_reduce]
    assert "__syncthreads" not in body[:first_reduce], "a thread reads only its own copies: no barrier"
    assert re.search(r"ring_read = ring_read == 3 \? 0 : ring_read \+ 1;", body)
    assert src.rstrip().endswith("tp::row_ring_wait<0>();  // no copy outlives the kernel\n}")
    assert "blockIdx.x" not in body


def test_a_ragged_run_is_read_element_by_element(monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", "1")
    src = _source(CASES["softmax_fp32_ragged_w16"][0]())
    assert "the ragged run: element by element" in src and "tp::row_ring_copy<4>" in src


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("mode", ["1", "2"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ring_row_loops_compile_without_spills_or_warnings(name, mode, arch, monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", mode)
    make, default_depth, all_depth = CASES[name]
    src = _source(make())
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0, result.log
    assert "warning" not in result.log.lower(), result.log
    ring = (default_depth if mode == "1" else all_depth) > 0
    assert ("cp.async.commit_group" in result.ptx) == ring


def test_the_launcher_takes_one_wave_only_for_short_grids():
    class Inner:
        name = "k"

        def launch(self, gx, gy, gz, values, stream):
            self.last = (gx, values[-1])
    inner = Inner()
    launcher = RowLoopLauncher(inner, 100, 1, max_waves=2)
    for grid_x, blocks in ((50, 50), (150, 100), (200, 100), (201, 201), (10**6, 10**6)):
        launcher.launch(grid_x, 1, 1, (7,), 0)
        assert inner.last == (blocks, grid_x), grid_x
    always = RowLoopLauncher(inner, 100, 1)
    always.launch(10**6, 1, 1, (), 0)
    assert inner.last == (100, 10**6)
    # every program of a grid near the int limit would overflow `row + depth x programs`: one wave instead
    near = 2**31 - 1 - 4 * 100
    launcher.launch(near, 1, 1, (), 0)
    assert inner.last == (100, near)


def test_the_ring_plan_asks_for_the_short_grid_launch(monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", "1")
    analysis = _analysis(CASES["softmax_fp32_1024_w4"][0]())
    assert analysis.row_loop.max_waves == 2 and "at most 2 waves" in analysis.row_loop.why


def test_a_reduction_whose_lanes_hold_different_results_reads_every_partial():
    """A [64, 64] tile summed over its rows on 8 warps: the low lanes run along the columns (different results),
    so exchanging partials between them would mix columns; every thread reads its column's 8 partials in warp
    order instead."""
    import transpiler
    import transpiler.language as tl

    @transpiler.jit
    def column_sums(X, OUT, BR: tl.constexpr, BC: tl.constexpr):
        r = tl.arange(0, BR)
        c = tl.arange(0, BC)
        x = tl.load(X + r[:, None] * BC + c[None, :])
        tl.store(OUT + c, tl.sum(x, axis=0))
    x, out = np.zeros((64, 64), np.float32), np.zeros(64, np.float32)
    src = column_sums.cuda_source(x, out, BR=64, BC=64, num_warps=8)
    assert "__syncthreads" in src, "the reduction crosses warps"
    assert "for (int w = 1; w < 8; ++w)" in src and "(lane & 7)" not in src
