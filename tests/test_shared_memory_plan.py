"""The shared-memory plan (analysis/shared_memory.py) is decided before emission, and the emitter spells it.

Checked on the examples' specializations: the buffers analysis plans (reductions' and scans' cross-warp scratch,
pipeline stage rings, loop-invariant operand tiles) have the sizes their layouts imply, sit where the plan puts
them in the emitted `.cu`, and the kernel's dynamic shared memory is the plan's total; the read-only pointer
decision is made in analysis too.
"""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from example_specs import BY_NAME, analysis_of
from transpiler.analysis.shared_memory import (PERSISTENT, SCRATCH, STAGES, SharedMemoryPlan, WGMMA_ALIGN,
                                               plan_shared_memory)
from transpiler.emit_cuda import emit_kernel
from transpiler.dtypes import float32


def _declared_offsets(source):
    """{C name: offset expression} of every `T* name = reinterpret_cast<T*>(tp_smem + offset);`."""
    return dict(re.findall(r"\* (\w+) = reinterpret_cast<[^>]+>\(tp_smem \+ ([^)]+)\);", source))


def test_softmax_plans_one_cross_warp_buffer_per_reduction_from_its_layout():
    ir, analysis = analysis_of(BY_NAME["softmax_fp32_4000"])
    plan = analysis.shared_memory
    persistent = [b for b in plan.buffers if b.kind == PERSISTENT]
    # Two reductions over 4096 elements in 16 warps: 16 warp totals of fp32 each, 16-byte aligned, back to back.
    assert [(b.count, b.nbytes, b.offset) for b in persistent] == [(16, 64, "0"), (16, 64, "64")]
    emitted = emit_kernel(ir, analysis)
    assert emitted.shared_bytes == plan.total_bytes() == 128
    assert sorted(_declared_offsets(emitted.source).values()) == ["0", "64"]


@pytest.mark.parametrize("name", ["matmul_fp16_128x128x64", "matmul_fp16_128x128x64_sm90a"])
def test_pipelined_matmul_plans_its_stage_rings_before_emission(name):
    spec = BY_NAME[name]
    ir, analysis = analysis_of(spec)
    plan = analysis.shared_memory
    rings = [b for b in plan.buffers if b.kind == STAGES]
    a_tile, b_tile = 128 * 64, 64 * 128                    # BLOCK_M x BLOCK_K and BLOCK_K x BLOCK_N halves
    assert [b.count for b in rings] == [a_tile * spec.num_stages, b_tile * spec.num_stages]
    assert [b.offset for b in rings] == ["tp_smem_stage", f"tp_smem_stage + {a_tile * spec.num_stages * 2}"]
    assert plan.align == (WGMMA_ALIGN if spec.arch == "sm_90a" else 128)
    emitted = emit_kernel(ir, analysis)
    offsets = _declared_offsets(emitted.source)
    assert [offsets[n] for n in offsets if n.endswith("_stages")] == [b.offset for b in rings]
    assert all(not b.name for b in plan.buffers), "emission wrote into the analysis' plan"
    assert emitted.shared_bytes >= sum(b.nbytes for b in rings)


def test_emission_does_not_change_the_analysis_plan_and_is_repeatable():
    ir, analysis = analysis_of(BY_NAME["layernorm_fp16_4000"])
    before = [(b.kind, b.nbytes, b.offset) for b in analysis.shared_memory.buffers]
    first, second = emit_kernel(ir, analysis), emit_kernel(ir, analysis)
    assert first.source == second.source and first.shared_bytes == second.shared_bytes
    assert [(b.kind, b.nbytes, b.offset) for b in analysis.shared_memory.buffers] == before


def test_scratch_uses_share_one_base_and_stack_within_a_use():
    plan = SharedMemoryPlan(128)
    plan.persistent(40, "x")
    a, b = plan.plan_scratch(("use", 1), [(float32, 25, "a", None), (float32, 75, "b", None)], in_pipeline=False)
    assert (a.offset, b.offset) == ("tp_smem_stage", "tp_smem_stage + 128")
    (c,) = plan.plan_scratch(("use", 2), [(float32, 250, "c", None)], in_pipeline=False)
    assert c.offset == "tp_smem_stage" and c.kind == SCRATCH
    plan.begin_pipeline()
    ring = plan.stage(5000, "ring")
    plan.end_pipeline()
    (inside,) = plan.plan_scratch(("use", 3), [(float32, 2, "inside", None)], in_pipeline=True)
    assert ring.offset == "tp_smem_stage" and inside.offset == "tp_smem_scratch_in_loop"
    # the emitter takes the uses by key; a barrier before every use but the first outside loops
    assert plan.begin_scratch(("use", 1), in_loop=False) == ([a, b], False)
    assert plan.begin_scratch(("use", 2), in_loop=False)[1] is True     # the first use's readers may still read
    with pytest.raises(AssertionError, match="no scratch shared memory planned"):
        plan.begin_scratch(("use", 4), in_loop=False)
    # stage base after the 48 persistent bytes, rounded to 128; in-loop scratch after the 5120-byte ring
    assert plan.constants() == [("tp_smem_stage", 128), ("tp_smem_scratch_in_loop", 128 + 5120)]
    assert plan.total_bytes() == 128 + 5120 + 128


@transpiler.jit
def _row_stats(X, Out, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(X + row * N + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < N, other=0.0)
    c = tl.cumsum(x, axis=0)
    tl.store(Out + row * N + tl.arange(0, BLOCK), c / tl.sum(x, axis=0), mask=tl.arange(0, BLOCK) < N)


def test_scan_and_reduction_buffers_are_planned_and_declared_at_their_offsets():
    args = (np.zeros(8, np.float32), np.zeros(8, np.float32), 1000)
    ir, analysis = _row_stats.analysis(*args, BLOCK=1024, num_warps=8)
    plan = analysis.shared_memory
    kinds = sorted(b.key[1] for b in plan.buffers)
    assert kinds == ["reduce", "scan"]
    emitted = emit_kernel(ir, analysis)
    declared = _declared_offsets(emitted.source)
    assert sorted(declared.values()) == sorted(b.offset for b in plan.buffers)
    assert emitted.shared_bytes == plan.total_bytes()
    assert {row[4] for row in emitted.shared_buffers} == {b.purpose for b in plan.buffers}


@transpiler.jit
def _copy_scaled(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.store(Y + offs, x * 2, mask=offs < N)
    tl.atomic_add(Z + offs, x, mask=offs < N)


def test_read_only_pointers_are_an_analysis_decision_the_parameters_follow():
    ir, analysis = _copy_scaled.analysis(np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(8, np.float32),
                                         100, BLOCK=256)
    assert analysis.read_only.written_args == {"Y", "Z"}
    source = emit_kernel(ir, analysis).source
    assert re.search(r"const float\* __restrict__ X\b", source)
    assert re.search(r"[^t] float\* __restrict__ Y\b", source) and re.search(r"[^t] float\* __restrict__ Z\b", source)


def test_planning_needs_no_emitter(monkeypatch):
    """The plan comes from analysis alone: with emission broken, analysis still plans the buffers."""
    import transpiler.emit_cuda.emitter as emitter_mod
    monkeypatch.setattr(emitter_mod, "LOWERINGS", {})
    ir, analysis = analysis_of(BY_NAME["softmax_fp16_4096"])
    again = plan_shared_memory(ir, analysis.layouts, analysis.pipelines, analysis.uses_wgmma)
    assert [(b.kind, b.nbytes, b.offset) for b in again.buffers] == \
        [(b.kind, b.nbytes, b.offset) for b in analysis.shared_memory.buffers]
    assert again.buffers and all(b.kind == PERSISTENT for b in again.buffers)
