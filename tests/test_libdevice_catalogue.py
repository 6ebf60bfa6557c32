"""Every row of the libdevice catalogue (Triton 3.6's CUDA libdevice): NVRTC compiles it for sm_80 and sm_90a
without warnings or spills, the interpreter matches an independent reference, and Triton's dispatch rules
(exact rows first, then promotion; Python numbers as int32/fp32) choose the row on both paths."""
import math
import struct

import numpy as np
import pytest

import libdevice_catalogue as cat
import transpiler
import transpiler.language as tl
from transpiler.errors import DTypeError, UnsupportedSyntaxError
from transpiler.language.extra import libdevice
from transpiler.runtime.compiler import compile_offline, nvrtc_available

GROUPS = cat.groups()
IDS = [cat.group_id(k) for k in GROUPS]
N = 300


def _case(key, rng):
    names = GROUPS[key]
    types, result, _ = key
    arrays = cat.operands(rng, key, names, N)
    out = cat.poisoned((len(names), N), result)
    fns = tuple(getattr(libdevice, n) for n in names)
    return arrays, out, dict(FNS=fns, ARITY=len(types), BLOCK=128)


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("key", list(GROUPS), ids=IDS)
def test_every_catalogue_row_compiles_without_warnings(key):
    arrays, out, constexprs = _case(key, np.random.default_rng(0))
    src = cat.group_kernel.cuda_source(*arrays, out, N, **constexprs)
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


def _float_tolerance(name, type_name):
    if name.startswith("fast_"):
        return 1e-5
    if name in ("j0", "j1", "jn", "y0", "y1", "yn", "cyl_bessel_i0", "cyl_bessel_i1"):
        return 1e-5 if type_name == "fp32" else 1e-10      # CUDA's fp32 Bessel functions: ~2e-6 absolute error
    if name in ("erfcx", "tgamma", "lgamma"):
        return 1e-6 if type_name == "fp32" else 1e-10
    return 2e-6 if type_name == "fp32" else 1e-12


def _bessel_y(n, x):
    """Y_n by its series for n = 0, 1 (Abramowitz & Stegun 9.1.13) and forward recurrence above."""
    gamma = 0.5772156649015329
    j0, j1 = cat._bessel_j(0, x), cat._bessel_j(1, x)
    h, y0_sum, y1_sum, term0, term1 = 0.0, 0.0, 0.0, 1.0, x / 2
    for k in range(1, 80):
        term0 *= -(x * x / 4) / (k * k)
        h += 1 / k
        y0_sum -= h * term0
    y0 = 2 / math.pi * ((math.log(x / 2) + gamma) * j0 + y0_sum)
    psi = lambda m: -gamma + sum(1 / i for i in range(1, m))   # noqa: E731  (digamma at integers)
    for k in range(0, 80):
        if k:
            term1 *= -(x * x / 4) / (k * (k + 1))
        y1_sum += (psi(k + 1) + psi(k + 2)) * term1
    y1 = -2 / (math.pi * x) + 2 / math.pi * math.log(x / 2) * j1 - y1_sum / math.pi
    if n == 0:
        return y0
    prev, cur = y0, y1
    for m in range(1, int(n)):
        prev, cur = cur, 2 * m / x * cur - prev
    return cur


def _expected_float(name, types, xs):
    if name in ("y0", "y1"):
        return _bessel_y(int(name[1]), xs[0])
    if name == "yn":
        return _bessel_y(xs[0], xs[1])
    return cat.FLOAT_REFERENCE[name](*xs)


def _bits(value, type_name):
    fmt = {"fp32": "<f", "fp64": "<d"}[type_name]
    return int.from_bytes(struct.pack(fmt, value), "little")


def _from_bits(bits, type_name):
    width = {"fp32": 4, "fp64": 8}[type_name]
    return struct.unpack({"fp32": "<f", "fp64": "<d"}[type_name], (bits & ((1 << 8 * width) - 1)).to_bytes(width, "little"))[0]


def _wrap(value, type_name):
    width = {"int32": 32, "uint32": 32, "int64": 64, "uint64": 64, "int1": 1}[type_name]
    if type_name == "int1":
        return bool(value)
    value = int(value) & ((1 << width) - 1)
    return value - (1 << width) if type_name.startswith("int") and value >> (width - 1) else value


_REINTERPRET = {"int_as_float", "uint_as_float", "float_as_int", "float_as_uint", "longlong_as_double",
                "double_as_longlong", "double2loint", "double2hiint", "hiloint2double"}


def _check_element(name, types, result, xs, got):
    """None when `got` is right for operands `xs`, else a message."""
    if name in _REINTERPRET:
        if name == "hiloint2double":
            want = _from_bits((int(xs[0]) & 0xFFFFFFFF) << 32 | (int(xs[1]) & 0xFFFFFFFF), "fp64")
            return None if _bits(got, "fp64") == _bits(want, "fp64") else f"{got!r} != {want!r}"
        if types[0] in ("fp32", "fp64"):
            bits = _bits(xs[0], types[0])
            bits = {"double2hiint": bits >> 32, "double2loint": bits & 0xFFFFFFFF}.get(name, bits)
            want = _wrap(bits, result)
            return None if int(got) == want else f"{got} != {want}"
        want = _from_bits(int(xs[0]), result)
        return None if _bits(got, result) == _bits(want, result) else f"{got!r} != {want!r}"
    if name.endswith(("_rn", "_rz", "_rd", "_ru")) and result in ("fp32", "fp64") and name != "rsqrt_rn":
        return None if cat.exact_rounded_ok(name, types, xs, np.asarray(got, cat.NP[result])) else \
            f"{got!r} is not the {name[-2:]} rounding of {name}{tuple(xs)}"
    if name.endswith(("_rn", "_rz", "_rd", "_ru")) and name != "rsqrt_rn":   # float to integer conversions
        rounding = {"rn": round, "rz": math.trunc, "rd": math.floor, "ru": math.ceil}[name[-2:]]
        unsigned = "2u" in name
        bits = 64 if "ll" in name else 32
        lo, hi = (0, 2 ** bits - 1) if unsigned else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
        want = _wrap(min(max(rounding(xs[0]), lo), hi), result)
        return None if int(got) == want else f"{got} != {want}"
    if name in cat.INT_REFERENCE and (result not in ("fp32", "fp64")):
        want = _wrap(cat.INT_REFERENCE[name](types, *xs), result)
        return None if got == want else f"{got} != {want}"
    if name in cat.INVERSES:
        want = xs[0]
        back = cat.INVERSES[name](float(got))
        return None if math.isclose(back, want, rel_tol=1e-5 if result == "fp32" else 1e-11, abs_tol=1e-6
                                    if result == "fp32" else 1e-12) else f"{name}^-1({got}) = {back} != {want}"
    want = _expected_float(name, types, xs)
    tol = _float_tolerance(name, result)
    return None if math.isclose(float(got), want, rel_tol=tol, abs_tol=tol) else f"{got!r} != {want!r}"


@pytest.mark.parametrize("key", list(GROUPS), ids=IDS)
def test_interpreted_catalogue_matches_independent_references(key):
    rng = np.random.default_rng(1)
    arrays, out, constexprs = _case(key, rng)
    cat.group_kernel.interpret[(transpiler.cdiv(N, 128),)](*arrays, out, N, **constexprs)
    types, result, _ = key
    failures = []
    for row, name in enumerate(GROUPS[key]):
        assert out[row].dtype == cat.NP[result], name
        for i in range(0, N, 7):
            xs = [a[i].item() for a in arrays[:len(types)]]
            message = _check_element(name, types, result, xs, out[row][i].item())
            if message:
                failures.append(f"{name}{tuple(xs)}: {message}")
                break
    assert not failures, "\n".join(failures)


# ---- dispatch: Triton's rules for choosing a row ------------------------------------------------------------

@transpiler.jit
def _dispatch_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.store(OUT + offs, libdevice.pow(x, 3) + libdevice.pow(x, 0.5) + libdevice.ldexp(x, 2), mask=offs < N)


def test_python_numbers_choose_rows_as_triton_types_them():
    # pow(x, 3): (fp32, int32) is a row (powi); pow(x, 0.5): (fp32, fp32); ldexp(x, 2): (fp32, int32).
    x = np.random.default_rng(2).uniform(0.5, 2.0, 50).astype(np.float32)
    out = np.full(50, np.nan, np.float32)
    _dispatch_kernel.interpret[(1,)](x, out, 50, BLOCK=64)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out, x64 ** 3 + np.sqrt(x64) + 4 * x64, rtol=2e-6)
    src = _dispatch_kernel.cuda_source(x, out, 50, BLOCK=64)
    assert "pow(" in src and "powf(" in src and "ldexpf(" in src


@transpiler.jit
def _float_exponent_kernel(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, libdevice.ldexp(tl.load(X + offs), 2.0))


@transpiler.jit
def _rcp64h_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, libdevice.rcp64h(tl.load(X + offs)))


def test_rows_that_do_not_exist_are_dtype_errors_on_both_paths():
    x = np.ones(64, np.float32)
    with pytest.raises(DTypeError, match=r"libdevice.ldexp takes operands of types \(fp32, int32\)"):
        _float_exponent_kernel.cuda_source(x, 64, BLOCK=64)
    with pytest.raises(DTypeError, match=r"libdevice.ldexp takes operands of types \(fp32, int32\)"):
        _float_exponent_kernel.interpret[(1,)](x, 64, BLOCK=64)


def test_a_libdevice_function_without_a_cuda_call_is_refused_as_not_supported_yet():
    x = np.ones(64, np.float64)
    with pytest.raises(UnsupportedSyntaxError, match="not supported yet: libdevice.rcp64h"):
        _rcp64h_kernel.cuda_source(x, BLOCK=64)
    with pytest.raises(UnsupportedSyntaxError, match="not supported yet: libdevice.rcp64h"):
        _rcp64h_kernel.interpret[(1,)](x, BLOCK=64)
