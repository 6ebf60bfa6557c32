"""CPU checks of the dtype matrix (`dtype_kernels.py`): Triton's promotion types in the IR, every kernel
compiled by NVRTC for sm_80 and sm_90a without spills or warnings, and the cases run on the interpreter
against the same NumPy references the GPU test uses (bf16 arrays held as fp32 there: NumPy has no bf16).
"""
import numpy as np
import pytest

import dtype_kernels as D
import transpiler.language as tl
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


@pytest.mark.parametrize("dt,np_float,np_bits", [(tl.float16, np.float16, np.uint16),
                                                 (tl.float32, np.float32, np.uint32),
                                                 (tl.float64, np.float64, np.uint64)])
def test_float_layout_attributes_decode_the_bits_numpy_reads(dt, np_float, np_bits):
    # Triton's dtype.primitive_bitwidth / fp_mantissa_width / exponent_bias, as user code decodes floats with them.
    rng = np.random.default_rng(dt.bits)
    values = (rng.standard_normal(64) * 10.0 ** rng.integers(-4, 4, 64)).astype(np_float)
    bits = values.view(np_bits).astype(object)
    mant, width = dt.fp_mantissa_width, dt.primitive_bitwidth
    exp_bits = width - mant - 1
    sign = [(-1) ** int(b >> (width - 1)) for b in bits]
    exponent = [int((b >> mant) & ((1 << exp_bits) - 1)) for b in bits]
    fraction = [int(b & ((1 << mant) - 1)) for b in bits]
    decoded = [s * 2.0 ** (e - dt.exponent_bias) * (1 + f / 2 ** mant) if e else s * 2.0 ** (1 - dt.exponent_bias)
               * (f / 2 ** mant) for s, e, f in zip(sign, exponent, fraction)]
    np.testing.assert_array_equal(np.array(decoded), values.astype(np.float64))
    with pytest.raises(AttributeError):
        tl.int32.fp_mantissa_width
