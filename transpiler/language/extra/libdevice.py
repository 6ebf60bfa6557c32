"""`libdevice` math functions, as Triton users import them (`from triton.language.extra import libdevice`).

`SIGNATURES` is the catalogue, one row per function as Triton 3.6's CUDA libdevice declares it: for each
accepted tuple of operand types, the CUDA math-library call spelling it (`{0}`, `{1}` ... are the operands)
and the result type. `dispatch` chooses the row as Triton's `extern_elementwise` does, for the compiler's
typing rule (`parse/semantic_libdevice.py`), the emitter (`emit_cuda/libdevice.py`) and the interpreter
(which runs the typing rule and evaluates its op with `numerics/libdevice.py`, the NumPy evaluation of every
row) alike. `REFUSED` names Triton functions with no CUDA math call: calling one is an error that says so.
`fmax`, `fmin` and `fabs` are extras (CUDA has them; Triton's libdevice does not).
"""
from __future__ import annotations

import inspect
from functools import reduce

from ... import dtypes
from ..core import builtin

_F, _D = "fp32", "fp64"
_ROUNDINGS = ("rn", "rz", "rd", "ru")


def _float_family(name, arity=1, fp32=None, fp64=None):
    """`name` on fp32 (C's `namef`) and fp64 (C's `name`), the result of the operands' type."""
    args = ", ".join(f"{{{i}}}" for i in range(arity))
    return {(_F,) * arity: (f"{fp32 or name + 'f'}({args})", _F), (_D,) * arity: (f"{fp64 or name}({args})", _D)}


def _one(operands, call, result):
    return {tuple(operands): (call, result)}


SIGNATURES: dict = {}
for _name in ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt",
              "sin", "cos", "tan", "sinpi", "cospi", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
              "acosh", "atanh", "erf", "erfc", "erfinv", "erfcinv", "erfcx", "normcdf", "normcdfinv", "lgamma",
              "tgamma", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "logb", "j0", "j1", "y0", "y1",
              "cyl_bessel_i0", "cyl_bessel_i1", "fabs"):
    SIGNATURES[_name] = _float_family(_name)
for _name in ("atan2", "hypot", "rhypot", "fmod", "remainder", "copysign", "fdim", "nextafter", "fmax", "fmin"):
    SIGNATURES[_name] = _float_family(_name, 2)
SIGNATURES["fma"] = _float_family("fma", 3)
SIGNATURES["norm3d"] = _float_family("norm3d", 3)
SIGNATURES["rnorm3d"] = _float_family("rnorm3d", 3)
SIGNATURES["norm4d"] = _float_family("norm4d", 4)
SIGNATURES["rnorm4d"] = _float_family("rnorm4d", 4)
SIGNATURES["pow"] = {**_float_family("pow", 2), (_F, "int32"): ("pow({0}, {1})", _F), (_D, "int32"): ("pow({0}, {1})", _D)}
SIGNATURES["ldexp"] = {(_F, "int32"): ("ldexpf({0}, {1})", _F), (_D, "int32"): ("ldexp({0}, {1})", _D)}
SIGNATURES["scalbn"] = {(_F, "int32"): ("scalbnf({0}, {1})", _F), (_D, "int32"): ("scalbn({0}, {1})", _D)}
SIGNATURES["jn"] = {("int32", _F): ("jnf({0}, {1})", _F), ("int32", _D): ("jn({0}, {1})", _D)}
SIGNATURES["yn"] = {("int32", _F): ("ynf({0}, {1})", _F), ("int32", _D): ("yn({0}, {1})", _D)}
SIGNATURES["abs"] = {("int32",): ("abs({0})", "int32"), ("int64",): ("llabs({0})", "int64"),
                     (_F,): ("fabsf({0})", _F), (_D,): ("fabs({0})", _D)}
SIGNATURES["ilogb"] = {(_F,): ("ilogbf({0})", "int32"), (_D,): ("ilogb({0})", "int32")}
SIGNATURES["llrint"] = {(_F,): ("llrintf({0})", "int64"), (_D,): ("llrint({0})", "int64")}
SIGNATURES["llround"] = {(_F,): ("llroundf({0})", "int64"), (_D,): ("llround({0})", "int64")}
# Predicates: Triton returns int1 from isnan/isinf/finitef/isfinited, int32 (0 or 1) from signbit.
SIGNATURES["isnan"] = {(_F,): ("isnan({0})", "int1"), (_D,): ("isnan({0})", "int1")}
SIGNATURES["isinf"] = {(_F,): ("isinf({0})", "int1"), (_D,): ("isinf({0})", "int1")}
SIGNATURES["finitef"] = _one([_F], "isfinite({0})", "int1")
SIGNATURES["isfinited"] = _one([_D], "isfinite({0})", "int1")
SIGNATURES["signbit"] = {(_F,): ("(signbit({0}) ? 1 : 0)", "int32"), (_D,): ("(signbit({0}) ? 1 : 0)", "int32")}
SIGNATURES["saturatef"] = _one([_F], "__saturatef({0})", _F)
SIGNATURES["rsqrt_rn"] = _one([_F], "__frsqrt_rn({0})", _F)
# Correctly rounded arithmetic in each rounding mode: CUDA's __fadd_rn / __dadd_rn ... intrinsics.
for _r in _ROUNDINGS:
    for _op, _arity in (("add", 2), ("sub", 2), ("mul", 2), ("div", 2), ("rcp", 1), ("sqrt", 1)):
        _args = ", ".join(f"{{{i}}}" for i in range(_arity))
        SIGNATURES[f"{_op}_{_r}"] = {(_F,) * _arity: (f"__f{_op}_{_r}({_args})", _F),
                                     (_D,) * _arity: (f"__d{_op}_{_r}({_args})", _D)}
    SIGNATURES[f"fma_{_r}"] = {(_F,) * 3: (f"__fmaf_{_r}({{0}}, {{1}}, {{2}})", _F),
                               (_D,) * 3: (f"__fma_{_r}({{0}}, {{1}}, {{2}})", _D)}
    # Conversions; Triton types the unsigned results as signed integers of the same width.
    for _name, _src, _dst, _c_result in (
            ("double2float", _D, _F, None), ("double2int", _D, "int32", None), ("double2uint", _D, "int32", "int"),
            ("float2int", _F, "int32", None), ("float2uint", _F, "int32", "int"), ("int2float", "int32", _F, None),
            ("uint2float", "uint32", _F, None), ("float2ll", _F, "int64", None), ("float2ull", _F, "int64", "long long"),
            ("double2ll", _D, "int64", None), ("double2ull", _D, "int64", "long long"), ("ll2float", "int64", _F, None),
            ("ull2float", "uint64", _F, None), ("ll2double", "int64", _D, None), ("ull2double", "uint64", _D, None)):
        _call = f"__{_name}_{_r}({{0}})"
        SIGNATURES[f"{_name}_{_r}"] = _one([_src], f"({_c_result})({_call})" if _c_result else _call, _dst)
SIGNATURES["int2double_rn"] = _one(["int32"], "__int2double_rn({0})", _D)
SIGNATURES["uint2double_rn"] = _one(["uint32"], "__uint2double_rn({0})", _D)
# Bit reinterpretations.
SIGNATURES["int_as_float"] = _one(["int32"], "__int_as_float({0})", _F)
SIGNATURES["uint_as_float"] = _one(["uint32"], "__uint_as_float({0})", _F)
SIGNATURES["float_as_int"] = _one([_F], "__float_as_int({0})", "int32")
SIGNATURES["float_as_uint"] = _one([_F], "(int)(__float_as_uint({0}))", "int32")
SIGNATURES["longlong_as_double"] = _one(["int64"], "__longlong_as_double({0})", _D)
SIGNATURES["double_as_longlong"] = _one([_D], "__double_as_longlong({0})", "int64")
SIGNATURES["hiloint2double"] = _one(["int32", "int32"], "__hiloint2double({0}, {1})", _D)
SIGNATURES["double2loint"] = _one([_D], "__double2loint({0})", "int32")
SIGNATURES["double2hiint"] = _one([_D], "__double2hiint({0})", "int32")
# Integer intrinsics.
SIGNATURES["clz"] = {("int32",): ("__clz({0})", "int32"), ("int64",): ("__clzll({0})", "int32")}
SIGNATURES["popc"] = {("int32",): ("__popc({0})", "int32"), ("int64",): ("__popcll({0})", "int32")}
SIGNATURES["ffs"] = {("int32",): ("__ffs({0})", "int32"), ("int64",): ("__ffsll({0})", "int32")}
SIGNATURES["brev"] = {("int32",): ("(int)(__brev({0}))", "int32"), ("int64",): ("(long long)(__brevll({0}))", "int64")}
SIGNATURES["byte_perm"] = _one(["int32"] * 3, "(int)(__byte_perm({0}, {1}, {2}))", "int32")
SIGNATURES["mulhi"] = {("int32", "int32"): ("__mulhi({0}, {1})", "int32"),
                       ("uint32", "uint32"): ("__umulhi({0}, {1})", "uint32"),
                       ("int64", "int64"): ("__mul64hi({0}, {1})", "int64"),
                       ("uint64", "uint64"): ("__umul64hi({0}, {1})", "uint64")}
SIGNATURES["mul24"] = {("int32", "int32"): ("__mul24({0}, {1})", "int32"),
                       ("uint32", "uint32"): ("__umul24({0}, {1})", "uint32")}
SIGNATURES["sad"] = {("int32", "int32", "uint32"): ("(int)(__sad({0}, {1}, {2}))", "int32"),
                     ("uint32", "uint32", "uint32"): ("__usad({0}, {1}, {2})", "uint32")}
SIGNATURES["hadd"] = {("int32", "int32"): ("__hadd({0}, {1})", "int32"),
                      ("uint32", "uint32"): ("__uhadd({0}, {1})", "uint32")}
SIGNATURES["rhadd"] = {("int32", "int32"): ("__rhadd({0}, {1})", "int32"),
                       ("uint32", "uint32"): ("__urhadd({0}, {1})", "uint32")}
# CUDA's fast intrinsics (fp32 only).
for _name, _call in (("fast_expf", "__expf"), ("fast_logf", "__logf"), ("fast_log2f", "__log2f"),
                     ("fast_log10f", "__log10f"), ("fast_exp10f", "__exp10f"), ("fast_sinf", "__sinf"),
                     ("fast_cosf", "__cosf"), ("fast_tanf", "__tanf")):
    SIGNATURES[_name] = _one([_F], f"{_call}({{0}})", _F)
SIGNATURES["fast_dividef"] = _one([_F, _F], "__fdividef({0}, {1})", _F)
SIGNATURES["fast_powf"] = _one([_F, _F], "__powf({0}, {1})", _F)

# Triton names with no CUDA math-library call to spell them: declared, and refused when called.
REFUSED = {"rcp64h": "CUDA's math library has no rcp64h (libdevice's __nv_rcp64h is internal to NVVM)"}

ARITY = {name: len(next(iter(rows))) for name, rows in SIGNATURES.items()}
ARITY.update(rcp64h=1)


def _promoted(names) -> str:
    """Triton's arithmetic promotion of the operands among themselves (all of them tensors by then)."""
    types = [dtypes.by_name(n) for n in names]
    return reduce(lambda a, b: dtypes.computation_type(a, False, b, False), types).name


def dispatch(name: str, operand_types) -> tuple:
    """The row of `name` for operands of `operand_types` (dtype names), as Triton's `extern_elementwise`
    chooses it: the types as they are if a row accepts them, else every operand converted to their promoted
    type. Returns `(operand types to convert to, C spelling, result type name)`; TypeError when no row fits."""
    rows = SIGNATURES[name]
    key = tuple(operand_types)
    if key not in rows:
        try:
            key = (_promoted(key),) * len(key)
        except TypeError:
            pass
    if key not in rows:
        accepted = "; ".join("(" + ", ".join(k) + ")" for k in rows)
        raise TypeError(f"libdevice.{name} takes operands of types {accepted}, not ({', '.join(operand_types)})")
    return (key,) + rows[key]


def _declare(name: str, arity: int):
    def fn(*args):
        pass

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(arity)])
    fn.__doc__ = f"CUDA libdevice `{name}` ({arity} operand{'s' if arity > 1 else ''}), elementwise."
    return builtin(fn, name=f"libdevice.{name}")


for _name, _arity in ARITY.items():
    globals()[_name] = _declare(_name, _arity)

__all__ = list(ARITY)
