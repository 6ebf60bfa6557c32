"""Features Triton accepts that were refused here, on the CPU: the interpreter against NumPy float64, the compiled
path through NVRTC (sm_80 and sm_90a, no warnings or spills), and the refusals that remain, each saying whether
the feature is "not supported yet" or "not Triton's language"."""
import math

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
import triton_frontend_kernels as fk
from feature_kernels import check
from transpiler.errors import CompileTimeError, DTypeError, UnsupportedSyntaxError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

CASES = fk.all_cases(np.random.default_rng(0))
NAMES = [c[0] for c in CASES]
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def _run_interpreted(case):
    args = [tuple(a.copy() for a in x) if isinstance(x, tuple) and x and isinstance(x[0], np.ndarray)
            else x.copy() if isinstance(x, np.ndarray) else x for x in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, **case["constexprs"])
    return args


@pytest.mark.parametrize("name", NAMES)
def test_interpreted_matches_numpy(name):
    case = dict(fk.all_cases(np.random.default_rng(1)))[name]
    check(case, _run_interpreted(case))


@needs_nvrtc
@pytest.mark.parametrize("name", NAMES)
def test_compiles_without_warnings_or_spills(name):
    case = dict(CASES)[name]
    src = case["kernel"].cuda_source(*case["args"], **case["constexprs"])
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


# ---- what each feature does to the generated code ---------------------------------------------------------------

def test_tuple_leaves_are_parameters_specialized_like_arguments():
    case = dict(CASES)["tuple_sum"]
    src = case["kernel"].cuda_source(*case["args"], **case["constexprs"])
    assert "Xs_0 ptr<fp32> (16-byte aligned)" in src and "Xs_2 ptr<fp32>" in src and "weights_1 fp32" in src
    one = fk.case_tuple_sum(np.random.default_rng(2), 1, False)
    src = one["kernel"].cuda_source(*one["args"], **one["constexprs"])
    assert "Xs_1" not in src and "Bias" in src     # None keeps its slot, as for any pointer


def test_heuristics_set_num_warps_and_the_block():
    small = fk.case_heuristic(np.random.default_rng(3), 700)
    large = fk.case_heuristic(np.random.default_rng(3), 3001)
    assert "__launch_bounds__(64" in fk.heuristic_scale_kernel.cuda_source(*small["args"])
    assert "__launch_bounds__(256" in fk.heuristic_scale_kernel.cuda_source(*large["args"])
    assert "BLOCK = 256" in fk.heuristic_scale_kernel.cuda_source(*large["args"])


def test_types_of_block_pointers_are_triton_types():
    seen = {}

    @transpiler.jit
    def probe(X, N, BLOCK: tl.constexpr):
        p = tl.make_block_ptr(X, (N,), (1,), (0,), (BLOCK,), (0,))
        x = tl.load(p, boundary_check=(0,))
        tl.static_assert(isinstance(x, tl.tensor) and isinstance(p, tl.tensor) and not isinstance(BLOCK, tl.tensor))
        tl.static_assert(p.dtype.is_ptr() and p.dtype.element_ty.is_block() and not x.dtype.is_block())
        tl.static_assert(p.type == tl.pointer_type(tl.block_type(tl.float16, [BLOCK])))
        tl.static_assert(x.type.numel == BLOCK and x.type.get_block_shapes() == (BLOCK,))
        tl.store(X + tl.arange(0, BLOCK), x, mask=tl.arange(0, BLOCK) < N)

    x = np.random.default_rng(4).standard_normal(64).astype(np.float16)
    probe.cuda_source(x, 64, BLOCK=64)
    probe.interpret[(1,)](x, 64, BLOCK=64)
    assert not seen


# ---- f-strings -----------------------------------------------------------------------------------------------

@transpiler.jit
def _failing_fstring(X, BLOCK: tl.constexpr, NAME: tl.constexpr):
    tl.static_assert(BLOCK < 16, f"{NAME!r}: BLOCK={BLOCK:>5} {{literal}} {BLOCK=} of {X.dtype.element_ty}")


@transpiler.jit
def _runtime_fstring(X, BLOCK: tl.constexpr):
    x = tl.load(X)
    tl.static_assert(BLOCK < 16, f"x is {x}")


def test_fstrings_format_constexprs_as_python_does_on_both_paths():
    expected = f"{'ab'!r}: BLOCK={64:>5} {{literal}} BLOCK={64!r} of fp32"
    x = np.zeros(4, np.float32)
    for run in (lambda: _failing_fstring.cuda_source(x, BLOCK=64, NAME="ab"),
                lambda: _failing_fstring.interpret[(1,)](x, BLOCK=64, NAME="ab")):
        with pytest.raises(CompileTimeError) as info:
            run()
        assert expected in str(info.value)


def test_fstring_of_a_runtime_value_is_not_tritons_language():
    with pytest.raises(UnsupportedSyntaxError, match="not Triton's language"):
        _runtime_fstring.cuda_source(np.zeros(4, np.float32), BLOCK=64)


# ---- numbers as scalars -------------------------------------------------------------------------------------------

@transpiler.jit
def _constexpr_methods(X, Y, N, STRIDE, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = SCALE.to(tl.float16).to(tl.float32)           # rounded through fp16
    wide = STRIDE.to(tl.int64) * offs                 # STRIDE == 1 is specialized to the constant 1
    tl.store(Y + offs, tl.load(X + wide, mask=offs < N) * s, mask=offs < N)


def test_block_methods_on_compile_time_numbers():
    x = np.random.default_rng(5).standard_normal(50).astype(np.float32)
    for run in ("interpret", "compile"):
        y = np.full(50, np.nan, np.float32)
        if run == "interpret":
            _constexpr_methods.interpret[(1,)](x, y, 50, 1, SCALE=0.1, BLOCK=64)
            np.testing.assert_allclose(y, x * np.float32(np.float16(0.1)), rtol=1e-6)
        else:
            src = _constexpr_methods.cuda_source(x, y, 50, 1, SCALE=0.1, BLOCK=64)
            assert "STRIDE int32 (== 1)" in src


# ---- helpers' constexpr parameters ------------------------------------------------------------------------------

def test_a_helpers_constexpr_parameter_takes_a_block_as_in_triton():
    case = dict(CASES)["attention_causal"]
    ir = case["kernel"].ir(*case["args"], **case["constexprs"])
    assert "exp" in str(ir)


# ---- expand_dims errors -------------------------------------------------------------------------------------------

@transpiler.jit
def _expand(X, AXES: tl.constexpr):
    tl.store(X + tl.arange(0, 16), tl.reshape(tl.expand_dims(tl.load(X + tl.arange(0, 16)), AXES), (16,)))


@pytest.mark.parametrize("axes,message", [((0, 0), r"duplicate axes, normalized axes = \[0, 0\]"),
                                         (2, "invalid axis 2"), ((0, -4), "invalid axis -4")])
def test_expand_dims_refuses_what_triton_refuses_on_both_paths(axes, message):
    x = np.zeros(16, np.float32)
    with pytest.raises(transpiler.TranspilerError, match=message):
        _expand.cuda_source(x, AXES=axes)
    with pytest.raises(transpiler.TranspilerError, match=message):
        _expand.interpret[(1,)](x, AXES=axes)


# ---- fp8 ----------------------------------------------------------------------------------------------------------

def _fp8_values(exp_bits, man_bits, bias, has_inf):
    """(code, value) of every finite non-negative fp8 code, by the format's definition."""
    out = []
    for code in range(128):
        e, f = code >> man_bits, code & ((1 << man_bits) - 1)
        if has_inf and e == (1 << exp_bits) - 1:
            continue
        if not has_inf and e == (1 << exp_bits) - 1 and f == (1 << man_bits) - 1:
            continue
        value = (f / 2 ** man_bits) * 2.0 ** (1 - bias) if e == 0 else (1 + f / 2 ** man_bits) * 2.0 ** (e - bias)
        out.append((code, value))
    return out


FP8_FORMATS = {"fp8e4nv": (tl.float8e4nv, _fp8_values(4, 3, 7, False)),
               "fp8e5": (tl.float8e5, _fp8_values(5, 2, 15, True))}


def fp8_reference(x, table):
    """The code CUDA's satfinite round-to-nearest-even gives for float `x`, by brute force over the codes."""
    if math.isnan(x):
        return None
    sign = 0x80 if math.copysign(1, x) < 0 else 0
    mag = min(abs(x), table[-1][1])
    best = min(table, key=lambda cv: (abs(cv[1] - mag), cv[0] % 2))
    return sign | best[0]


def fp8_case(rng, fmt, n=500):
    _, table = FP8_FORMATS[fmt]
    top = table[-1][1]
    x = np.concatenate([rng.uniform(-1.2 * top, 1.2 * top, n // 2), rng.standard_normal(n // 4) * 0.05,
                        [v for _, v in table[::3]], [(a[1] + b[1]) / 2 for a, b in zip(table, table[1:])][::5],
                        [np.inf, -np.inf, 0.0, -0.0]]).astype(np.float32)
    return x


@pytest.mark.parametrize("fmt", list(FP8_FORMATS))
def test_fp8_conversions_round_to_nearest_even_and_saturate_in_the_interpreter(fmt):
    dtype, table = FP8_FORMATS[fmt]
    x = fp8_case(np.random.default_rng(6), fmt)
    q, y = np.zeros(x.size, np.uint8), np.full(x.size, np.nan, np.float32)
    fk.fp8_roundtrip_kernel.interpret[(transpiler.cdiv(x.size, 128),)](x, q, y, x.size, FP8=dtype, BLOCK=128)
    values = dict(table)
    for xi, qi, yi in zip(x, q, y):
        want = fp8_reference(float(xi), table)
        assert int(qi) == want, (fmt, float(xi), hex(qi), hex(want))
        assert yi == math.copysign(values[want & 0x7F], -1 if want & 0x80 else 1)


@needs_nvrtc
@pytest.mark.parametrize("fmt", list(FP8_FORMATS))
def test_fp8_kernels_compile_with_cuda_fp8(fmt):
    x = fp8_case(np.random.default_rng(7), fmt)
    src = fk.fp8_roundtrip_kernel.cuda_source(x, np.zeros(x.size, np.uint8), x, x.size,
                                              FP8=FP8_FORMATS[fmt][0], BLOCK=128)
    assert "#include <cuda_fp8.h>" in src
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


@transpiler.jit
def _fp8_in_signature(Q, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(Q + offs, mask=offs < N).to(tl.float32), mask=offs < N)


def test_fp8_arrays_in_signatures_through_reinterpret():
    codes = np.arange(0, 126, dtype=np.uint8)      # every positive finite e4m3 code
    y = np.full(codes.size, np.nan, np.float32)
    _fp8_in_signature.interpret[(1,)](transpiler.reinterpret(codes, tl.float8e4nv), y, codes.size, BLOCK=128)
    np.testing.assert_array_equal(y, [v for _, v in FP8_FORMATS["fp8e4nv"][1]][:codes.size])
    src = _fp8_in_signature.cuda_source(transpiler.reinterpret(codes, tl.float8e4nv), y, codes.size, BLOCK=128)
    assert "Q ptr<fp8e4nv>" in src and "__nv_fp8_e4m3*" in src


@transpiler.jit
def _fp8_arith(Q, BLOCK: tl.constexpr):
    q = tl.load(Q + tl.arange(0, BLOCK))
    tl.store(Q + tl.arange(0, BLOCK), q + q)


@transpiler.jit
def _fp8_dot(Q, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    q = tl.load(Q + offs[:, None] * BLOCK + offs[None, :])
    tl.store(Q + offs[:, None] * BLOCK + offs[None, :], tl.dot(q, q).to(tl.float8e4nv))


@transpiler.jit
def _fp8_b15(X, Q, BLOCK: tl.constexpr):
    tl.store(Q + tl.arange(0, BLOCK), tl.load(X + tl.arange(0, BLOCK)).to(tl.float8e4b15))


# tl.dot takes e4nv and e5 (tests/test_wgmma_dtypes.py); the formats CUDA lacks are refused; arithmetic on one fp8
# type is refused as Triton's compiler fails on it (tests/test_fp8_compute.py has what is computed)
@pytest.mark.parametrize("kernel,n,dtype,message", [(_fp8_arith, 16, tl.float8e4nv, "Triton's compiler cannot"),
                                                    (_fp8_dot, 256, tl.float8e4b15, "not supported yet")])
def test_computing_on_fp8_is_refused_on_both_paths(kernel, n, dtype, message):
    q = transpiler.reinterpret(np.zeros(n, np.uint8), dtype)
    for run in (lambda: kernel.cuda_source(q, BLOCK=16), lambda: kernel.interpret[(1,)](q, BLOCK=16)):
        with pytest.raises(DTypeError, match=message):
            run()


def test_fp8_types_cuda_lacks_are_nameable_but_not_convertible():
    q = transpiler.reinterpret(np.zeros(16, np.uint8), tl.float8e4b15)
    x = np.ones(16, np.float32)
    for run in (lambda: _fp8_b15.cuda_source(x, q, BLOCK=16), lambda: _fp8_b15.interpret[(1,)](x, q, BLOCK=16)):
        with pytest.raises(DTypeError, match="not supported yet"):
            run()


# ---- host names --------------------------------------------------------------------------------------------------

def test_host_names_live_where_triton_keeps_them():
    import transpiler.runtime as runtime
    from transpiler.runtime.autotuner import Autotuner
    from transpiler.runtime.errors import OutOfResources
    from transpiler.runtime.jit import JITFunction, TensorWrapper
    assert runtime.Autotuner is Autotuner and runtime.JITFunction is JITFunction is transpiler.JITFunction
    assert OutOfResources is transpiler.OutOfResources and issubclass(OutOfResources, transpiler.LaunchError)
    assert isinstance(fk.attention_kernel, runtime.KernelInterface)
    assert isinstance(fk.heuristic_scale_kernel, runtime.KernelInterface)
    assert isinstance(transpiler.reinterpret(np.zeros(4, np.uint8), tl.float8e5), TensorWrapper)
    assert callable(runtime.driver.active.get_current_target) and callable(transpiler.testing.do_bench)
    err = OutOfResources(300000, 232448, "shared memory")
    assert (err.required, err.limit, err.name) == (300000, 232448, "shared memory")
    assert "out of resource: shared memory, Required: 300000, Hardware limit: 232448" in str(err)


def test_device_properties_have_tritons_keys(monkeypatch):
    from transpiler.runtime import compiler
    from transpiler.runtime.host_api import active
    attributes = {97: 232448, 12: 65536, 16: 132, 10: 32, 13: 1980000, 36: 2619000, 37: 6144, 75: 9, 76: 0}
    monkeypatch.setattr(compiler, "device_attribute", lambda attribute, device: attributes[attribute])
    monkeypatch.setattr(type(active), "get_current_device", lambda self: 0)
    props = active.utils.get_device_properties(0)
    assert props == {"max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
                     "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 6144}
    target = active.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)


def test_config_fields_are_tritons():
    hook = lambda args: None   # noqa: E731
    config = transpiler.Config({"BLOCK": 64}, num_warps=8, num_stages=2, num_ctas=1, maxnreg=128, pre_hook=hook)
    assert (config.kwargs, config.num_warps, config.num_stages, config.num_ctas, config.maxnreg,
            config.pre_hook) == ({"BLOCK": 64}, 8, 2, 1, 128, hook)
    assert config.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_ctas": 1, "num_stages": 2, "maxnreg": 128}
    assert transpiler.Config({"BLOCK": 64}).all_kwargs() == {"BLOCK": 64, "num_warps": 4, "num_ctas": 1,
                                                            "num_stages": 3}
    assert config == transpiler.Config({"BLOCK": 64}, 8, 2, 1, 128, hook) and len({config, config}) == 1
    with pytest.raises(transpiler.AutotuneError, match="not supported yet"):
        transpiler.Config({}, ir_override="k.ptx")


# ---- old import paths ------------------------------------------------------------------------------------------------

def test_old_libdevice_and_math_import_paths_are_the_same_functions():
    import transpiler.language.extra.cuda.libdevice as cuda_libdevice
    import transpiler.language.libdevice as old_libdevice
    import transpiler.language.math as tl_math
    from transpiler.language.extra import libdevice
    assert old_libdevice is cuda_libdevice is libdevice is tl.extra.libdevice is tl.extra.cuda.libdevice
    assert tl_math.exp is tl.exp and tl_math.tanh is libdevice.tanh and tl.math.llrint is libdevice.llrint
    with pytest.raises(AttributeError):
        tl_math.not_a_function


# ---- annotations -----------------------------------------------------------------------------------------------

@transpiler.jit
def _annotated(X: tl.tensor, Y: "tl.pointer_type", N: tl.int32, SCALE: "float", BLOCK: "tl.constexpr"):
    offs = tl.arange(0, BLOCK)
    tl.static_assert(isinstance(BLOCK, int))      # a string annotation ending in constexpr still marks one
    tl.store(Y + offs, tl.load(X + offs, mask=offs < N) * SCALE, mask=offs < N)


def test_any_annotation_is_accepted_and_only_constexpr_matters():
    x = np.random.default_rng(8).standard_normal(40).astype(np.float32)
    y = np.full(40, np.nan, np.float32)
    _annotated.interpret[(1,)](x, y, 40, 0.5, BLOCK=64)
    np.testing.assert_allclose(y, x * 0.5, rtol=1e-6)
    src = _annotated.cuda_source(x, y, 40, 0.5, BLOCK=64)
    assert "SCALE fp32" in src and "BLOCK = 64" in src


@transpiler.jit
def _printing(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    print(f"block of {BLOCK}:", x)
    tl.device_print(f"again {BLOCK * 2}", x)


def test_fstring_prefixes_of_prints_are_formatted_while_compiling():
    src = _printing.cuda_source(np.zeros(16, np.float32), BLOCK=16)
    assert "block of 16:" in src and "again 32" in src


@transpiler.jit
def _optional_in_tuple(Ps, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.load(Ps[0] + offs, mask=offs < N, other=0.0)
    if Ps[1] is not None:
        acc += tl.load(Ps[1] + offs, mask=offs < N, other=0.0)
    tl.store(Y + offs, acc, mask=offs < N)


@pytest.mark.parametrize("with_second", [True, False])
def test_none_inside_a_tuple_argument_is_none_in_the_kernel(with_second):
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(40).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    y = np.full(40, np.nan, np.float32)
    ps = (a, b if with_second else None)
    _optional_in_tuple.interpret[(1,)](ps, y, 40, BLOCK=64)
    np.testing.assert_allclose(y, a + b if with_second else a, rtol=1e-6)
    src = _optional_in_tuple.cuda_source(ps, y, 40, BLOCK=64)
    assert ("Ps_1 ptr<fp32>" in src) == with_second and "Ps_1" in src


@transpiler.jit
def _fp8_op(Q, Y, BLOCK: tl.constexpr, OP: tl.constexpr):
    q = tl.load(Q + tl.arange(0, BLOCK))
    if OP == "sum":
        r = tl.sum(q, 0)
    elif OP == "max":
        r = tl.max(q, 0)
    elif OP == "where":
        r = tl.where(q == q, q, q)
    elif OP == "cumsum":
        r = tl.cumsum(q, 0)
    elif OP == "neg":
        r = -q
    elif OP == "maximum":
        r = tl.maximum(q, q)
    else:
        r = tl.abs(q)
    tl.store(Y + tl.arange(0, BLOCK), r.to(tl.float32))


# tl.maximum, tl.abs and tl.where without a comparison are computed on fp8 (tests/test_fp8_compute.py)
@pytest.mark.parametrize("op", ["sum", "max", "where", "cumsum", "neg"])
def test_reductions_scans_and_arithmetic_on_fp8_are_refused(op):
    q = transpiler.reinterpret(np.arange(16).astype(np.uint8), tl.float8e4nv)
    y = np.zeros(16, np.float32)
    for run in (lambda: _fp8_op.cuda_source(q, y, BLOCK=16, OP=op), lambda: _fp8_op.interpret[(1,)](q, y, BLOCK=16, OP=op)):
        # reductions and scans: not supported yet; arithmetic and comparisons: Triton cannot lower them either
        with pytest.raises(DTypeError, match="not supported yet: |Triton's compiler cannot lower"):
            run()
