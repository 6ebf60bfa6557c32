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
