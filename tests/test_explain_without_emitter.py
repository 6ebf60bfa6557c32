"""CPU: `explain` reports shared memory from analysis alone (issue 15 item 3): the scratch uses (layout conversions,
dot operand tiles held in registers, atomics' old values, gathers' sources) are planned by
analysis/scratch_plan.py before anything is spelled. Over kernels of every kind of buffer, the report is written
with the emitter unable to run, its figure is the one the emitted kernel declares, and the emitter spelled every
scratch use analysis planned and no other (an unplanned one is an internal error in the emitter)."""
import re

import numpy as np
import pytest

import atomic_kernels as A
import gather_kernels as G
import transpiler.emit_cuda as emit_cuda
import transpiler.emit_cuda.emitter as emitter_module
from example_specs import BY_NAME, analysis_of
from transpiler.emit_cuda import emit_kernel
from transpiler.explain import explain_ir

SPECS = ["matmul_fp16_128x128x64", "matmul_fp16_128x128x64_sm90a", "attention_fp16_d128_causal_sm90a",
         "softmax_fp32_4000", "giou_loss_fp32", "cumsum_rows_fp32_1000", "histogram_int32"]


def _tickets():
    case = A.case_tickets(np.random.default_rng(5))
    return case["kernel"].analysis(*case["args"], num_warps=case["num_warps"], **case["constexprs"])


def _gather():
    x, idx = np.zeros((64, 128), np.float32), np.zeros((64, 128), np.int32)
    return G.gather_2d.analysis(x, idx, np.zeros_like(x), 60, 120, AXIS=1, BLOCK_M=64, BLOCK_N=128)


def _scaled_operand_dot(arch):
    from test_dot_operand_scratch import scaled_operand_dot_kernel
    args = (np.zeros((74, 34), np.float16), np.zeros((38, 34), np.float16), np.zeros((74, 38), np.float32),
            74, 38, 34)
    return scaled_operand_dot_kernel.analysis(*args, arch=arch, BM=64, BN=32, BK=64)


CASES = {name: (lambda name=name: analysis_of(BY_NAME[name])) for name in SPECS}
CASES.update(tickets_old_values=_tickets, gather=_gather, dot_operand_tiles=lambda: _scaled_operand_dot(None),
             register_a_conversion_sm90a=lambda: _scaled_operand_dot("sm_90a"))


def _refuse_to_emit(*args, **kwargs):
    raise AssertionError("explain ran the emitter")


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_reports_the_emitted_kernels_shared_memory_without_emitting(name, monkeypatch):
    ir, analysis = CASES[name]()
    with monkeypatch.context() as m:
        m.setattr(emitter_module.Emitter, "__init__", _refuse_to_emit)
        m.setattr(emit_cuda, "emit_kernel", _refuse_to_emit)
        text = explain_ir(ir, analysis)
    reported = int(re.search(r"shared memory: (\d+) bytes per program", text).group(1))
    emitted = emit_kernel(ir, analysis)
    assert reported == emitted.shared_bytes
    declared = re.search(r"extern __shared__ .*tp_smem\[\]", emitted.source)
    assert (declared is not None) == (reported > 0)
    assert emitted.unspelled_scratch == ()      # the plan holds no use the rules did not spell


def test_the_kernels_cover_every_kind_of_scratch_use():
    kinds = set()
    for make in CASES.values():
        _, analysis = make()
        kinds |= {key[0] for key in analysis.shared_memory.scratch_uses}
    assert kinds == {"convert", "dot", "atomic", "gather"}


def test_an_unplanned_conversion_is_an_internal_error_in_the_emitter():
    ir, analysis = analysis_of(BY_NAME["giou_loss_fp32"])
    plan = analysis.shared_memory
    conversion = next(key for key in plan.scratch_uses if key[0] == "convert")
    del plan.scratch_uses[conversion]
    with pytest.raises(AssertionError, match="no scratch shared memory planned"):
        emit_kernel(ir, analysis)
