"""Atomics on the CPU: every atomic kernel compiles for sm_80 and sm_90a without warnings or spills; the PTX
carries the instruction, order and scope asked for (`red` when the old values are unused and the order
allows it); replicated layouts perform each element's atomic in exactly one thread; errors name the line."""
import re

import numpy as np
import pytest

import atomic_kernels as A
import transpiler
import transpiler.language as tl
from example_specs import analysis_for, source_for
from transpiler.analysis.layouts import LinearLayout
from transpiler.errors import DTypeError, ShapeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

CASES = A.all_cases(np.random.default_rng(0))


def _source(case, dtype_override=None):
    return source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"], dtype_override)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_atomic_kernel_compiles_without_warnings_or_spills(name, case, arch):
    result = compile_offline(_source(case), arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


def _case(name):
    return dict(CASES)[name]


# case -> PTX patterns that must occur, patterns that must not (sm_90a).
PTX = {
    # Old values unused, default acq_rel: red has no acq_rel form, so atom.
    "histogram": ([r"atom\.acq_rel\.gpu\.global\.add\.s32"], [r"\bred\."]),
    "split_sum_fp32": ([r"atom\.acq_rel\.gpu\.global\.add\.f32", r"red\.relaxed\.gpu\.global\.add\.s32"], []),
    "split_sum_fp64_8warps": ([r"atom\.acq_rel\.gpu\.global\.add\.f64"], []),
    # fp32 max and min are Triton's integer pairs; the relaxed min with unused results is a pair of reds.
    "minmax_fp32": ([r"atom\.acq_rel\.gpu\.global\.max\.s32", r"atom\.acq_rel\.gpu\.global\.min\.u32",
                     r"red\.relaxed\.gpu\.global\.min\.s32", r"red\.relaxed\.gpu\.global\.max\.u32"],
                    [r"\.f32 .*\[", r"max\.f32"]),
    "minmax_uint32": ([r"atom\.acq_rel\.gpu\.global\.max\.u32", r"red\.relaxed\.gpu\.global\.min\.u32"], []),
    "minmax_int64": ([r"atom\.acq_rel\.gpu\.global\.max\.s64", r"red\.relaxed\.gpu\.global\.min\.s64"], []),
    "first_writer": ([r"atom\.acq_rel\.gpu\.global\.cas\.b32", r"atom\.acquire\.gpu\.global\.cas\.b32"], []),
    "xchg_int64": ([r"atom\.acq_rel\.gpu\.global\.exch\.b64"], []),
    "add_fp16": ([r"red\.relaxed\.gpu\.global\.add\.noftz\.f16"], [r"atom\."]),
    "add_uint64": ([r"red\.relaxed\.gpu\.global\.add\.u64"], []),
    "bitwise_uint32": ([r"atom\.acq_rel\.gpu\.global\.and\.b32", r"atom\.acq_rel\.cta\.global\.or\.b32",
                        r"atom\.acq_rel\.gpu\.global\.xor\.b32"], []),
}


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(PTX))
def test_atomic_ptx_has_the_instruction_order_and_scope(name):
    ptx = compile_offline(_source(_case(name)), "sm_90a").ptx
    must, must_not = PTX[name]
    for pattern in must:
        assert re.search(pattern, ptx), pattern
    for pattern in must_not:
        assert not re.search(pattern, ptx), pattern


@needs_nvrtc
def test_bf16_atomic_add_is_one_instruction_on_sm90_and_a_cas_loop_before():
    case = _case("add_fp16")
    src = _source(case, {"P": "bf16", "X": "bf16"})
    hopper, ampere = compile_offline(src, "sm_90a"), compile_offline(src, "sm_80")
    assert re.search(r"atom\.relaxed\.gpu\.global\.add\.noftz\.bf16", hopper.ptx)
    assert not re.search(r"cas\.b16", hopper.ptx)
    assert re.search(r"atom\.relaxed\.gpu\.global\.cas\.b16", ampere.ptx)
    assert not re.search(r"add\.noftz\.bf16", ampere.ptx)
    for result in (hopper, ampere):
        assert result.spill_bytes == 0 and not result.warnings, result.log


def test_scalar_atomic_runs_in_thread_zero_and_shares_its_old_value():
    src = _source(_case("split_sum_fp32"))
    assert re.search(r"if \(threadIdx\.x == 0\) atom_add_acq_rel_gpu\(TOTAL, \w+\);", src)
    assert re.search(r"if \(threadIdx\.x == 0\) red_add_relaxed_gpu\(COUNT, 1\);", src)
    tickets = _source(_case("tickets"))
    assert re.search(r"if \(threadIdx\.x == 0\) ticket_shared\[0\] = atom_add_acq_rel_gpu\(COUNTER, 1\);\n"
                     r"\s*__syncthreads\(\);\n\s*const int ticket = ticket_shared\[0\];", tickets)


def test_scalar_atomic_in_a_while_condition_waits_for_the_last_iterations_readers():
    # The old value of the previous iteration must be read by every thread before thread 0 overwrites it.
    src = _source(_case("spin_lock"))
    assert re.search(r"while \(true\) \{\n.*\n\s*__syncthreads\(\);\n\s*if \(threadIdx\.x == 0\) \w+\[0\] = "
                     r"atom_cas_acquire_gpu\(LOCK, 0, 1\);\n\s*__syncthreads\(\);", src)
    assert re.search(r"if \(threadIdx\.x == 0\) atom_xchg_release_gpu\(LOCK, 0\);", src)


def _performed(layout: LinearLayout, lane_guard, warp_guard):
    """How many times each element is updated, from the layout and the plan's guards."""
    counts = {}
    for warp in range(layout.num_warps):
        for lane in range(32):
            if lane & lane_guard or warp & warp_guard:
                continue
            for r in range(layout.num_regs):
                c = layout.coords(r, lane, warp)
                counts[c] = counts.get(c, 0) + 1
    return counts


@transpiler.jit
def _row_sums(X, OUT, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(X + rows[:, None] * stride + cols[None, :])
    tl.atomic_add(OUT + rows, tl.sum(x, axis=1))       # a sliced layout: lanes along the columns hold copies
    tl.atomic_max(OUT + BM + rows[:, None] + cols[None, :] * 0, x)


@transpiler.jit
def _small(P, BLOCK: tl.constexpr):
    tl.atomic_add(P + tl.arange(0, BLOCK), 1.0)


@pytest.mark.parametrize("kernel,args,constexprs,num_warps", [
    (_row_sums, [np.zeros(64 * 64, np.float32), np.zeros(128, np.float32), 64], dict(BM=4, BN=64), 4),
    (_row_sums, [np.zeros(64 * 64, np.float32), np.zeros(128, np.float32), 64], dict(BM=32, BN=16), 8),
    (_small, [np.zeros(64, np.float32)], dict(BLOCK=16), 4),
    (_small, [np.zeros(64, np.float32)], dict(BLOCK=64), 8),
    (_small, [np.zeros(4096, np.float32)], dict(BLOCK=4096), 2),
], ids=["slice_4w", "slice_8w", "16_in_4w", "64_in_8w", "4096_in_2w"])
def test_each_element_of_a_block_atomic_is_performed_exactly_once(kernel, args, constexprs, num_warps):
    ir, analysis = analysis_for(kernel, args, constexprs, num_warps)
    atomics = [op for op in ir.walk() if op.name == "atomic_rmw"]
    assert atomics
    for op in atomics:
        plan = analysis.atomics[op]
        layout = analysis.layouts.layout[op.result]
        counts = _performed(layout, plan.lane_guard, plan.warp_guard)
        assert len(counts) == op.result.type.numel and set(counts.values()) == {1}, (layout.describe(), plan)


def test_atomic_decisions_say_which_instruction_and_why():
    case = _case("minmax_fp32")
    _, analysis = analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    decisions = [str(d) for d in analysis.decisions.for_pass("atomics")]
    assert any("atomic max: atom.acq_rel.gpu" in d and "red has no acq_rel form" in d for d in decisions), decisions
    assert any("atomic min: red.relaxed.gpu" in d and "old values are unused" in d for d in decisions), decisions


def test_atomic_pointer_arguments_are_not_const():
    src = _source(_case("histogram"))
    assert "const int* __restrict__ X" in src and "int* __restrict__ HIST" in src
    assert "const int* __restrict__ HIST" not in src


@transpiler.jit
def _errors(P, X, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    if CASE == "block_val_scalar_ptr":
        tl.atomic_add(P, tl.load(X + offs))
    elif CASE == "bf16_max":
        tl.atomic_max(P + offs, tl.load(X + offs))
    elif CASE == "wide_val":
        tl.atomic_add(P + offs, tl.load(X + offs[:, None] + offs[None, :]))


@pytest.mark.parametrize("case,dtype,err,words", [
    ("block_val_scalar_ptr", None, ShapeError, "scalar pointer"),
    ("bf16_max", "bf16", DTypeError, "does not support tl.bfloat16"),
    ("wide_val", None, ShapeError, "does not fit the pointer's shape"),
])
def test_atomic_errors_point_at_the_kernel_line(case, dtype, err, words):
    args = [np.zeros(256, np.float16 if dtype else np.float32), np.zeros(256, np.float16 if dtype else np.float32)]
    with pytest.raises(err, match=words) as info:
        source_for(_errors, args, dict(CASE=case), 4, {"P": dtype, "X": dtype} if dtype else None)
    assert "tl.atomic_" in str(info.value) and "test_compile_atomics.py" in str(info.value)
