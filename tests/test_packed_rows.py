"""Packed rows (analysis/packed_rows.py, emitter phases and run windows): which loads stay as loaded words, which
values are re-widened and which tails run by runs, with the reasons in explain; the order of the opaque copies,
the re-widenings and the run loop in the source; NVRTC on sm_80 and sm_90a with the switch on (no spills, no
warnings, the layernorm's long rows at 64 registers); the default build untouched. Results on a GPU (the same
bits as the default build, NumPy in float64): tests/test_gpu_packed_rows.py."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import membound_kernels as K
import transpiler
import transpiler.language as tl
from example_specs import analysis_for, source_for
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import layernorm  # noqa: E402
import softmax  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@pytest.fixture(autouse=True)
def _packed_rows_on(monkeypatch):
    monkeypatch.setenv("TRANSPILER_PACKED_ROWS", "1")


def _layernorm_args(n, dtype=tl.float16):
    p, f = transpiler.StandIn(dtype), transpiler.StandIn(tl.float32)
    block = transpiler.next_power_of_2(n)
    return (p, p, p, p, f, f, n, n, n, 1e-5), dict(BLOCK=block), min(max(block // 256, 1), 8)


def _layernorm(n, dtype=tl.float16):
    args, constexprs, warps = _layernorm_args(n, dtype)
    return layernorm.layernorm_kernel.compiled_variant(*args, num_warps=warps, **constexprs)


def _layernorm_analysis(n):
    args, constexprs, warps = _layernorm_args(n)
    return analysis_for(layernorm.layernorm_kernel, args, constexprs, warps)[1]


def test_the_layernorm_row_is_packed_and_its_tail_runs_by_runs():
    plan = _layernorm_analysis(12288).packed_rows
    (root,) = plan.roots
    assert root.result.dtype.name == "fp16" and root.loc.line == 27      # x = tl.load(X + ...)
    assert len(plan.boundaries) == 2                                    # the mean's and the variance's sums
    assert {v.owner.name for v in plan.rewidened} == {"cast", "elementwise"}
    (tail,) = plan.tails.values()
    assert tail.window == 8 and tail.runs == 8
    kinds = [op.name for op in tail.ops]
    assert kinds.count("load") == 2 and kinds[-1] == "store"            # W and B, then Y
    why = [d.what for d in _layernorm_analysis(12288).decisions.for_pass("packed_rows")]
    assert any("kept as loaded words" in w for w in why) and any("8 runs" in w for w in why)


def test_off_by_default(monkeypatch):
    monkeypatch.delenv("TRANSPILER_PACKED_ROWS")
    plan = _layernorm_analysis(12288).packed_rows
    assert not plan and not plan.tails
    assert "opaque_words" not in _layernorm(12288).source


def test_the_source_copies_the_words_in_each_later_phase_and_loops_over_runs():
    src = _layernorm(12288).source
    first_sum, second_sum = (i for i in (src.index("x_sum_smem[warp] = x_sum"), src.index("mul_sum_smem[warp]")))
    tail = src.index("the tail one run of 8 registers at a time")
    copies = [i for i in range(len(src)) if src.startswith("tp::opaque_words(", i)]
    assert len(copies) == 2 and first_sum < copies[0] < second_sum < tail < copies[1]
    body = src[tail:src.index("// tl.store(Mean + row, mean)")]
    assert "for (int v = run_; v < run_ + 1; ++v)" in body                # W, B and Y one 16-byte run a turn
    assert "r < run_ * 8 + 8; r += 2) tp::opaque_words" in body
    assert body.count("tp::load<8>") == 2 and body.count("tp::store<8>") == 1


def test_a_tail_value_read_after_the_tail_keeps_the_op_by_op_order():
    @transpiler.jit
    def norm_then_sum(X, Y, W, S, N, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        valid = cols < N
        x = tl.load(X + row * N + cols, mask=valid, other=0.0).to(tl.float32)
        c = tl.where(valid, x - tl.sum(x, axis=0) / N, 0.0)
        w = tl.load(W + cols, mask=valid).to(tl.float32)
        y = c * w
        tl.store(Y + row * N + cols, y, mask=valid)
        tl.store(S + row, tl.sum(y, axis=0))          # y read after its store: no tail
    p = transpiler.StandIn(tl.float16)
    plan = analysis_for(norm_then_sum, (p, p, p, transpiler.StandIn(tl.float32), 4096), dict(BLOCK=4096), 8)[1]
    assert plan.packed_rows.roots and not plan.packed_rows.tails


def test_a_tail_in_a_2d_layout_makes_values_of_other_layouts_whole():
    case = K.tile_norm_case(_rng(), 37, 3000)
    plan = analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])[1].packed_rows
    assert len(plan.roots) == 2                      # the tile and the weight row
    (tail,) = plan.tails.values()
    assert tail.layout.rank == 2 and tail.window == 8
    src = source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    body = src[src.index("the tail one run of 8"):]
    # the bias's column mask, a 1-D value first made in the tail, is made whole; the 2-D mask one run a turn
    assert re.search(r"for \(int r = 0; r < 16; \+\+r\) lt_\d+\[r\] = cols", body)
    assert re.search(r"for \(int r = run_ \* 8; r < run_ \* 8 \+ 8; \+\+r\) \{\n\s+const int run", body)
    # the weight row (a packed root in the 1-D layout) is read as held, not re-widened in every run
    assert body.count("tp::opaque_words") == 1


def test_rows_read_in_one_phase_only_are_left_alone():
    args = (np.zeros((4, 4096), np.float16),) * 2 + (4096, 4096, 4096)
    analysis = analysis_for(softmax.softmax_kernel, args, dict(BLOCK=4096), 1)[1]
    assert not analysis.packed_rows          # one warp: no cross-warp reduction, no phase to cross


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_the_long_layernorm_rows_take_64_registers(arch, dtype):
    result = compile_offline(_layernorm(12288, dtype).source, arch)
    assert result.registers <= 64 and result.spill_bytes == 0, result.log
    assert "warning" not in result.log.lower(), result.log


def _rng():
    return np.random.default_rng(0)


KERNELS = {
    "layernorm_4096": lambda: _layernorm(4096).source,
    "layernorm_8192": lambda: _layernorm(8192).source,
    "layernorm_1000": lambda: _layernorm(1000).source,
    "layernorm_bf16_12000": lambda: _layernorm(12000, tl.bfloat16).source,
}
for _name, _case in K.all_cases(_rng()) + [("tile_norm_fp16_3000", K.tile_norm_case(_rng(), 37, 3000)),
                                          ("tile_norm_fp16_8192", K.tile_norm_case(_rng(), 19, 8192, 2))]:
    KERNELS[_name] = (lambda c=_case: source_for(c["kernel"], c["args"], c["constexprs"], c["num_warps"]))


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_compile_without_spills_or_warnings(name, arch):
    result = compile_offline(KERNELS[name](), arch)
    assert result.spill_bytes == 0, result.log
    assert "warning" not in result.log.lower(), result.log
