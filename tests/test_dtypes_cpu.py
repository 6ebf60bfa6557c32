"""CPU checks of the dtype matrix (`dtype_kernels.py`): Triton's promotion types in the IR, every kernel
compiled by NVRTC for sm_80 and sm_90a without spills or warnings, and the cases run on the interpreter
against the same NumPy references the GPU test uses (bf16 arrays held as fp32 there: NumPy has no bf16).
"""
import numpy as np
import pytest

import dtype_kernels as D
from example_specs import analysis_for, source_for
from transpiler.runtime.compiler import compile_offline, nvrtc_available

CASES = D.all_cases(np.random.default_rng(0))
IDS = [c[0] for c in CASES]
TL_NAME = {v.name: k for k, v in D.TL.items()}


@pytest.mark.parametrize("a,b,expected", D.PROMOTIONS, ids=[f"{a}+{b}" for a, b, _ in D.PROMOTIONS])
def test_add_is_typed_with_tritons_promotion(a, b, expected):
    case = dict(CASES)[f"add_{a}_{b}"]
    ir, _ = analysis_for(case["kernel"], D.stand_in_args(case), case["constexprs"],
                         dtype_override=D.bf16_override(case))
    adds = [op for op in ir.walk() if op.name == "elementwise" and op.attrs.get("fn") == "add"
            and op.result.name != "offs"]
    assert len(adds) == 1, [str(op.result.type) for op in adds]
    assert TL_NAME[adds[0].result.dtype.name] == expected


@pytest.mark.parametrize("name", [d for d in D.ALL], ids=D.ALL)
def test_reductions_are_typed_as_triton_types_them(name):
    case = dict(CASES)[f"reduce_{name}"]
    ir, _ = analysis_for(case["kernel"], D.stand_in_args(case), case["constexprs"],
                         dtype_override=D.bf16_override(case))
    reduces = [op for op in ir.walk() if op.name == "reduce"]
    by_combine = {op.attrs["combine"]: TL_NAME[op.results[0].dtype.name] for op in reduces}
    sum_t, minmax_t = D.reduce_types(name)
    assert by_combine["add"] == sum_t
    assert by_combine["max"] == minmax_t and by_combine["min"] == minmax_t


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", IDS)
def test_dtype_kernel_compiles_without_spills_or_warnings(name, arch):
    case = dict(CASES)[name]
    src = source_for(case["kernel"], D.stand_in_args(case), case["constexprs"], case.get("num_warps", 4),
                     D.bf16_override(case))
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log
    assert len(result.cubin) > 0


@pytest.mark.parametrize("name", IDS)
def test_dtype_case_on_interpreter_matches_numpy(name):
    case = dict(D.all_cases(np.random.default_rng()))[name]
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, num_warps=case.get("num_warps", 4), **case["constexprs"])
    D.check(case, args)
