"""Kernels written as Triton users write them (`tests/unseen_kernels.py`): NVRTC compiles every one for sm_80
and sm_90a without warnings or spills, the interpreter matches NumPy, the generated CUDA spells what the
kernel asked for, and what the compiler does not support fails with a TranspilerError naming it."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.errors import CompileTimeError, DTypeError, UnsupportedSyntaxError
from transpiler.language.extra import libdevice
from transpiler.runtime.compiler import compile_offline, nvrtc_available
from unseen_kernels import all_cases, check, launch_options, libdevice_cases, print_kernel

CASES = all_cases(np.random.default_rng(3))
LIBDEVICE_CASES = libdevice_cases(np.random.default_rng(4))
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def _source(case):
    return case["kernel"].cuda_source(*case["args"], **launch_options(case), **case["constexprs"])


def _interpret(case):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, **launch_options(case), **case["constexprs"])
    check(case, args)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_unseen_kernel_compiles_without_spills(name, case, arch):
    result = compile_offline(_source(case), arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


@needs_nvrtc
@pytest.mark.parametrize("name,case", LIBDEVICE_CASES, ids=[c[0] for c in LIBDEVICE_CASES])
def test_every_libdevice_function_compiles(name, case):
    result = compile_offline(_source(case), "sm_80")
    assert result.spill_bytes == 0 and not result.warnings, result.log


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_unseen_kernel_interpreted_matches_numpy(name, case):
    _interpret(case)


@pytest.mark.parametrize("name,case", LIBDEVICE_CASES, ids=[c[0] for c in LIBDEVICE_CASES])
def test_libdevice_interpreted_matches_numpy(name, case):
    _interpret(case)


# ---- what the generated CUDA says -------------------------------------------------------------------------

def _case(name):
    return dict(CASES)[name]


def test_libdevice_functions_are_cuda_math_calls():
    src = _source(_case("float_math"))
    for call in ("powf(", "log1pf(", "expm1f(", "tanhf(", "atan2f(", "sinhf(", "truncf(", "roundf(", "__expf(",
                 "rsqrtf(", "expf("):
        assert call in src, call
    assert "rintf(" in _source(_case("quantize_int8"))


def test_early_return_puts_the_rest_of_the_kernel_in_the_else_branch():
    src = _source(_case("cross_entropy"))
    body = src[src.index("if target == ignore_index"):]
    assert "} else {" in body
    # the vocabulary loop runs only in the branch that did not return
    assert body.index("} else {") < body.index("for (int start = 0; start < n_vocab;")
    assert "return;" not in body


def test_dot_T_is_a_transpose():
    src = _source(_case("shapes"))
    assert "x.T" in src          # the Python line is there; the value is stored through the transposed tile


def test_print_with_a_leading_string_uses_it_as_prefix():
    x = np.arange(64, dtype=np.float32)
    assert '"x' in print_kernel.cuda_source(x, 64, BLOCK=64)


# ---- clear errors for what the compiler does not support ------------------------------------------------

@transpiler.jit
def _split_wide(X, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a, b = tl.split(tl.reshape(tl.load(X + o), (BLOCK // 4, 4)))
    tl.store(X + tl.arange(0, BLOCK // 4), a + b)


@transpiler.jit
def _cat_2d(X, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.reshape(tl.load(X + o), (BLOCK // 2, 2))
    tl.store(X + o, tl.reshape(tl.cat(x, x, can_reorder=True), (BLOCK * 2,)))


@pytest.mark.parametrize("kernel,message", [(_split_wide, "tl.split needs a last dimension of size 2"),
                                            (_cat_2d, "tl.cat needs two 1-D blocks")])
def test_shape_function_misuse_is_reported(kernel, message):
    from transpiler.errors import ShapeError
    with pytest.raises(ShapeError, match=message):
        kernel.cuda_source(np.zeros(128, np.float32), BLOCK=64)
    with pytest.raises(ShapeError, match=message.split(" needs")[0]):
        kernel.interpret[(1,)](np.zeros(128, np.float32), BLOCK=64)


def test_flip_swaps_halves_with_xor_reductions():
    src = _source(_case("flip_fp32"))
    assert "tp::bitcast<int>" in src and "tp::combine_xor" in src


@transpiler.jit
def _tanh_fp16(X, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(X + o, libdevice.tanh(tl.load(X + o)))


def test_libdevice_rejects_fp16_as_triton_does():
    x = np.ones(64, np.float16)
    with pytest.raises(DTypeError, match=r"libdevice.tanh takes operands of types \(fp32\); \(fp64\), not \(fp16\)"):
        _tanh_fp16.cuda_source(x, BLOCK=64)
    with pytest.raises(DTypeError, match="libdevice.tanh"):
        _tanh_fp16.interpret[(1,)](x, BLOCK=64)


@transpiler.jit
def _return_in_loop(X, N, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    for i in range(N):
        if i > 3:
            return
        tl.store(X + o, tl.load(X + o) + 1)


@transpiler.jit
def _return_value(X, N, BLOCK: tl.constexpr):
    if N > 3:
        return 1
    tl.store(X + tl.arange(0, BLOCK), 0.0)


def test_return_inside_a_loop_is_reported():
    with pytest.raises(UnsupportedSyntaxError, match="return inside a loop"):
        _return_in_loop.cuda_source(np.zeros(64, np.float32), 9, BLOCK=64)


def test_a_value_returned_on_one_path_of_a_runtime_if_is_reported():
    with pytest.raises(CompileTimeError, match="returned on one path of this if but not on the other"):
        _return_value.cuda_source(np.zeros(64, np.float32), 9, BLOCK=64)


def test_rtz_downcasts_round_toward_zero_in_cuda():
    src = _source(_case("store_casts"))
    assert "__float2half_rz(" in src and "__float2bfloat16_rz(" in src


def test_early_exit_guards_the_rest_of_the_kernel():
    src = _source(_case("early_exit"))
    body = src[src.index("if pid * BLOCK >= N"):]
    assert "= !ge;" in body and "} else {" not in body


def test_values_only_assume_and_device_assert_read_are_not_computed():
    src = _source(_case("early_exit"))
    assert ">= 0" not in src          # tl.device_assert(offs >= 0) compiles to nothing, its operand too
    assert "N > 0" not in src          # tl.assume(N > 0)


@transpiler.jit
def _rtz_int(X, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(X + o, tl.load(X + o).to(tl.int32, fp_downcast_rounding="rtz"))


def test_rtz_on_a_non_narrowing_float_conversion_is_an_error():
    from transpiler.errors import CompileTimeError
    with pytest.raises(CompileTimeError, match="fp_downcast_rounding applies only to narrowing float"):
        _rtz_int.cuda_source(np.zeros(64, np.float32), BLOCK=64)


def test_none_for_a_pointer_is_none_in_the_kernel_and_a_null_slot_at_launch():
    from transpiler.runtime import launch_key
    from unseen_kernels import optional_affine_kernel
    key, values, _, _ = launch_key.launch_facts((False, False), (None, 5), ("B", "N"), "k")
    assert key[0] == ("none",) and values == [0, 5]
    x = np.ones((2, 8), np.float32)
    variant = optional_affine_kernel.compiled_variant(x, None, x[0], x, 8, BLOCK=8)
    # every runtime parameter keeps its slot (W's is a null pointer); W's load is folded away
    assert variant.slot_kinds == ["ptr", "ptr", "ptr", "ptr", "int32"]
    assert "W + " not in variant.source and "B + " in variant.source


def test_parameters_named_like_cuda_keywords_or_template_counters_are_renamed():
    src = _source(_case("lerp_scalar_params_w_r"))
    assert "float w_," in src and "float r_," in src
    assert "* r_;" in src            # not `* r`, the register counter of the loop around it
    assert "do_" in _source(_case("fused_recurrent_bwd"))


@transpiler.jit
def _scaled_copy(X, Y, scale, BLOCK: tl.constexpr):
    tl.static_assert(scale.dtype == tl.float32)
    o = tl.arange(0, BLOCK)
    tl.store(Y + o, tl.load(X + o) * scale)


def test_a_numpy_float64_scalar_is_fp32_in_the_interpreter_and_the_compiler_as_in_triton():
    x = np.arange(64, dtype=np.float16)
    scale = np.float64(1) / np.sqrt(np.float64(3))      # how attention wrappers often compute sm_scale
    assert "float scale)" in _scaled_copy.cuda_source(x, np.zeros(64, np.float32), scale, BLOCK=64)
    y = np.zeros(64, np.float32)
    _scaled_copy.interpret[(1,)](x, y, scale, BLOCK=64)
    np.testing.assert_allclose(y, x.astype(np.float32) * np.float32(scale), rtol=1e-6)


@transpiler.jit
def _none_set_in_loop(X, N, BLOCK: tl.constexpr):
    acc = None
    for i in range(N):
        acc = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), acc)


def test_a_variable_that_is_none_before_a_loop_and_set_in_it_is_reported():
    from transpiler.errors import CompileTimeError
    with pytest.raises(CompileTimeError, match="'acc' is None before the loop and changes in it"):
        _none_set_in_loop.cuda_source(np.zeros(64, np.float32), 3, BLOCK=64)


def test_a_loop_invariant_dot_operand_is_written_to_shared_memory_once_before_its_loops():
    src = _source(_case("attention_causal"))
    # q is written once, before the first key loop; the second loop (on the diagonal) reads the same tile
    assert src.count("dot operands the loop does not change") == 1
    assert src.count("dot operands: registers to shared memory") == 2      # only p, once per loop
    branchy = _source(_case("shared_query_both_loops"))
    # the first loop is under a runtime branch: the tile is written once before the branch, and the loop after
    # it reads the same tile (analysis/invariant_operands.py operands_of_inner_loops)
    assert branchy.count("dot operands the loop does not change") == 1
    body = branchy.split("__global__", 1)[1]
    assert body.index("dot operands the loop does not change") < body.index("if (", body.index("// if use_first"))
    assert "dot operands: registers to shared memory" not in branchy


@transpiler.jit
def _offset_from_end(X, Y, total, N, BLOCK: tl.constexpr):
    """`total - offs` with total past int32: Triton types the argument int64, so the difference is negative
    for offs > total and the mask excludes it (a uint32 argument would wrap it to a huge positive value)."""
    offs = tl.arange(0, BLOCK)
    dist = total - offs - 2147483600
    tl.store(Y + offs, dist.to(tl.float32), mask=(dist > 0) & (offs < N))


def test_an_int_argument_past_int32_is_int64_in_the_interpreter_and_the_compiler_as_in_triton():
    y = np.full(64, -1.0, np.float32)
    total = 2**31 + 5                   # int64 under Triton (its launch typing has no uint32)
    assert "long long total," in _offset_from_end.cuda_source(np.zeros(64, np.float32), y, total, 64, BLOCK=64)
    _offset_from_end.interpret[(1,)](np.zeros(64, np.float32), y, total, 64, BLOCK=64)
    dist = total - np.arange(64) - 2147483600
    np.testing.assert_array_equal(y, np.where(dist > 0, dist, -1).astype(np.float32))
