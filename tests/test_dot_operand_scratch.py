"""CPU: shared-memory reuse the H200 sanitizer sweep (racecheck) found racing, fixed in the emitter.

A dot operand computed in registers is computed completely before its shared-memory tile is written.

Found by the sanitizer sweep (racecheck) on the H200: the int4-dequantizing matmuls build their B operand with
`tl.join(lo, hi).reshape(...)`, whose layout conversions go through the same scratch bytes as the operand's
tile. The tile was claimed (with its barrier) before the operand was computed, so the conversions ran inside
it and the tile's stores overwrote a conversion's buffer while other warps still read it: a race, and wrong
results under racecheck's scheduling. Now nothing goes through shared memory between the operand tiles'
barrier and the product."""
import re

import numpy as np
import pytest

import realworld_kernels as R


def _between_operand_tiles_and_product(source):
    lines = source.splitlines()
    spans = []
    for i, line in enumerate(lines):
        if "dot operands: registers to shared memory" in line:
            j = next(k for k in range(i, len(lines)) if " product on " in lines[k])
            spans.append(lines[i:j])
    return spans


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", [R.case_int4_dot_join, R.case_awq], ids=["int4_join_dot", "awq_int4_gemm"])
def test_operand_is_computed_before_its_tile_is_claimed(case, arch):
    c = case(np.random.default_rng(0))
    source = c["kernel"].cuda_source(*c["args"], arch=arch, **c["constexprs"])
    spans = _between_operand_tiles_and_product(source)
    assert spans, "the kernel's dot reads an operand held in registers"
    for span in spans:
        assert not [line for line in span if "through shared memory" in line], "\n".join(span)


def _prologues(source):
    lines = source.splitlines()
    return [lines[max(0, i - 4):i] for i, line in enumerate(lines)
            if re.match(r"\s*for \(int stage\w* = 0; stage\w* < \d+; \+\+stage\w*\) \{", line)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_pipeline_inside_a_loop_waits_for_the_previous_iteration_s_readers(arch):
    """Also from racecheck (10000 hazards): stream-K's persistent tile loop converts each tile's accumulator
    through the bytes its pipeline's stages use; the next tile's prologue copies must wait for that reading."""
    c = R.case_streamk(np.random.default_rng(0), block=(128, 128, 32), stages=3, streamk_tiles=5)
    source = c["kernel"].cuda_source(*c["args"], arch=arch, num_warps=c["num_warps"], num_stages=c["num_stages"],
                                     **c["constexprs"])
    prologues = _prologues(source)
    assert len(prologues) >= 2, "both of stream-K's loops are pipelined"
    for before in prologues:
        assert any("__syncthreads()" in line for line in before), "\n".join(before)


# ---- register-A wgmma: A converted into the fragment layout before B's tile is written ------------------------

import transpiler  # noqa: E402
import transpiler.language as tl  # noqa: E402


@transpiler.jit
def scaled_operand_dot_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A computed in registers (scaled after its load) meets a B loaded transposed: on sm_90a A stays in
    registers (register-A wgmma) and reaches the fragment layout through shared memory, B is written to a tile."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
    bt = tl.load(B + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0)
    a = (a * 2.0).to(a.dtype)
    acc = tl.dot(a, tl.trans(bt))
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _until_the_product(source):
    """From each operand-tile marker to the first tensor-core instruction."""
    lines = source.splitlines()
    spans = []
    for i, line in enumerate(lines):
        if "dot operands: registers to shared memory" in line:
            j = next(k for k in range(i, len(lines)) if re.search(r"tp::(wgmma_m|mma_m|ldmatrix)", lines[k]))
            spans.append(lines[i:j])
    return spans


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_register_a_operand_is_converted_before_the_other_tile_is_written(arch):
    """Found by the H200 fuzzer (dot family, 3 of 45 kernels wrong): the conversion of A into the wgmma fragment
    layout ran after B's tile was written, through the same scratch bytes, so the product read a corrupted B."""
    args = (np.zeros((74, 34), np.float16), np.zeros((38, 34), np.float16), np.zeros((74, 38), np.float32),
            74, 38, 34)
    source = scaled_operand_dot_kernel.cuda_source(*args, arch=arch, BM=64, BN=32, BK=64)
    spans = _until_the_product(source)
    assert spans, "B is written to a tile from registers"
    for span in spans:
        assert not [line for line in span if "through shared memory" in line], "\n".join(span)
    if arch == "sm_90a":
        assert "wgmma_m64n32k16_f16_rs" in source     # the register-A form this test is about


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_an_accumulator_is_converted_before_the_operand_tiles_are_written(arch):
    """Found by the H200 GPU suite (chunk_fwd_h: NaN in its state output): `b_h += tl.dot(b_k, b_v)` became a dot
    accumulating into `b_h * exp(...)`, whose conversion into the product's layout ran after b_k's tile was
    written, through the same scratch bytes: the product read the accumulator's values as b_k."""
    c = R.case_fwd_h(np.random.default_rng(0))
    source = c["kernel"].cuda_source(*c["args"], arch=arch, **c["constexprs"])
    spans = _between_operand_tiles_and_product(source)
    assert spans, "the kernel's dot reads an operand held in registers"
    for span in spans:
        assert not [line for line in span if "through shared memory" in line], "\n".join(span)
    assert "b_h_2 to layout" in source, "the accumulator still needs a conversion (else the test checks nothing)"


def test_claiming_scratch_while_a_dot_s_operand_tiles_hold_it_is_an_internal_error():
    """The general guard behind the three orderings above: while a dot's operand tiles are live, no other use may
    take the scratch bytes; the emitter fails loudly instead of writing a wrong product."""
    from transpiler.analysis.shared_memory import SharedMemoryPlan
    from transpiler.dtypes import float16
    plan = SharedMemoryPlan()
    for use in ("tiles", "conversion"):
        plan.plan_scratch((use,), [(float16, 64, use, None)], in_pipeline=False)
    plan.begin_scratch(("tiles",), False)
    plan.hold_scratch("dot operand tiles")
    with pytest.raises(AssertionError, match="dot operand tiles"):
        plan.begin_scratch(("conversion",), False)
    plan.release_scratch()
    assert plan.begin_scratch(("conversion",), False)[1] is True     # a barrier: the tiles' readers may still read
