"""How CUDA C++ spells types, constants and elementwise functions: tables, not logic.

Everything that depends on the C++ spelling of an element type lives here, so a rule that lowers an op asks
"what is `exp` on fp16?" instead of knowing. Half-precision math runs in float and rounds back once (Triton
does the same); `+ - *` and comparisons use the native half operators.
"""
from __future__ import annotations

import math
import re

import numpy as np

from .. import dtypes
from ..language import catalogue

HALF_TYPES = (dtypes.float16, dtypes.bfloat16)


def ctype(dt) -> str:
    if dt.is_ptr():
        return f"{ctype(dt.element_ty)}*"
    return dt.c_name


accumulate_type = dtypes.accumulate_type   # a typing decision, kept under its old name for the rules


def literal(value, dt) -> str:
    if dt.kind is dtypes.Kind.BOOL:
        return "true" if value else "false"
    if dt.kind is dtypes.Kind.FLOAT:
        if dt is not dtypes.float64 and math.isfinite(value):
            # spelled as a C float: a literal beyond float's range is inf in the block's type, as in Triton
            # (NVRTC refuses such a constant), one below it is 0; others keep their shortest spelling
            with np.errstate(over="ignore", under="ignore"):
                single = float(np.float32(value))
            if math.isinf(single) or single == 0.0:
                value = single
        if math.isnan(value):
            core = "tp::nan<float>()" if dt is not dtypes.float64 else "tp::nan<double>()"
        elif math.isinf(value):
            core = ("-" if value < 0 else "") + ("tp::inf<double>()" if dt is dtypes.float64 else "tp::inf<float>()")
        elif dt is dtypes.float64:
            core = repr(float(value))
        else:
            text = repr(float(value))
            core = text + ("f" if ("." in text or "e" in text) else ".0f")
        if dt in HALF_TYPES:
            return f"tp::cast<{dt.c_name}>({core})"
        if dt.is_fp8():
            return f"{dt.c_name}({core})"
        return core
    if dt.bits == 64:
        if value == -2**63:       # 9223372036854775808LL does not fit long long: negating it is no literal
            return "(-9223372036854775807LL - 1)"
        return f"{value}{'ULL' if not dt.signed else 'LL'}"
    if not dt.signed:
        return f"{value}u"
    if value == -2**31:
        return "(-2147483647 - 1)"
    return str(value)


# Elementwise functions: the C expression over operands a, b, c, by element-type family.
_FLOAT_MATH = {
    # fp32 spelling, fp64 spelling; the math functions' rows come from their catalogue (language/catalogue.py)
    **{f.name: (f.fp32, f.fp64) for f in catalogue.FUNCTIONS},
    "fma": ("fmaf({a}, {b}, {c})", "fma({a}, {b}, {c})"),
    # a * b - c and c - a * b fused (analysis/fp_contraction.py): exact negations inside one fma
    "fms": ("fmaf({a}, {b}, -({c}))", "fma({a}, {b}, -({c}))"),
    "fnma": ("fmaf(-({a}), {b}, {c})", "fma(-({a}), {b}, {c})"),
    # `/` on fp32 is div.full.f32, as in Triton (2 ulp at most, no slow path); tl.math.div_rn is IEEE.
    "truediv": ("tp::div_full({a}, {b})", "{a} / {b}"),
    "div_rn": ("__fdiv_rn({a}, {b})", "__ddiv_rn({a}, {b})"),
    "mod": ("fmodf({a}, {b})", "fmod({a}, {b})"),
    "min": ("fminf({a}, {b})", "fmin({a}, {b})"),
    "max": ("fmaxf({a}, {b})", "fmax({a}, {b})"),
    "min_nan": ("tp::min_propagate_nan({a}, {b})", "tp::min_propagate_nan({a}, {b})"),
    "max_nan": ("tp::max_propagate_nan({a}, {b})", "tp::max_propagate_nan({a}, {b})"),
    # Triton's `-x` is `0 - x` (its semantic.minus): +0.0 stays +0.0, where C's `-x` would give -0.0
    "neg": ("0.0f - {a}", "0.0 - {a}"),
}

_OPERATORS = {
    "add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "floordiv": "{a} / {b}", "mod": "{a} % {b}",
    "and": "{a} & {b}", "or": "{a} | {b}", "xor": "{a} ^ {b}", "shl": "{a} << {b}", "shr": "{a} >> {b}",
    "lt": "{a} < {b}", "le": "{a} <= {b}", "gt": "{a} > {b}", "ge": "{a} >= {b}", "eq": "{a} == {b}",
    "ne": "{a} != {b}", "neg": "-{a}", "invert": "~{a}", "select": "{a} ? {b} : {c}",
}

_INT_FUNCS = {
    "min": "min({a}, {b})", "max": "max({a}, {b})", "umulhi": "tp::mulhi({a}, {b})",
    "floordiv": "{a} / {b}", "mod": "{a} % {b}",
    **{f.name: f.integer for f in catalogue.FUNCTIONS if f.integer},
}

# int1 is LLVM's i1, whose arithmetic wraps modulo 2 (Triton types int1 `+`, `-`, `*` with int1 as int1): C's
# `bool + bool` is an int, 2 for true + true, converted back to true. Spelled as logic instead: `+` and `-` are
# xor, `*` is and, `-x` (0 - x) is x, `~x` (x ^ 1) is not. `//` and `%` need no entry (C's int results of 0/1
# operands are already 0 or 1).
_BOOL_OPERATORS = {
    "add": "{a} != {b}", "sub": "{a} != {b}", "mul": "{a} && {b}", "and": "{a} && {b}", "or": "{a} || {b}",
    "xor": "{a} != {b}", "neg": "{a}", "invert": "!{a}",
}

# Integer operators that can overflow: spelled as device.cuh's wrapping helpers for signed and narrow types.
_WRAPPING = {"add", "sub", "mul", "shl", "neg"}

# Integer operators whose C result (int, for 8- and 16-bit operands) can leave the operands' range.
_NARROWED = {"add", "sub", "mul", "shl", "neg", "invert"}

# Operators the 16-bit float types support natively (cuda_fp16.hpp / cuda_bf16.hpp).
_HALF_NATIVE = {"add", "sub", "mul", "lt", "le", "gt", "ge", "eq", "ne", "select"}

# Fused multiply-adds of 16-bit floats: one rounding in the element type (fma.rn.f16 / fma.rn.bf16), as
# Triton's `tl.fma` and its LLVM's contraction of `a * b + c` (analysis/fp_contraction.py) compute them; through
# fp32 the sum would be rounded twice.
_HALF_FUSED = {"fma": "__hfma({a}, {b}, {c})", "fms": "__hfma({a}, {b}, __hneg({c}))",
               "fnma": "__hfma(__hneg({a}), {b}, {c})"}


def called_functions() -> set:
    """Names of the unqualified C functions the elementwise spellings call: generated names must avoid them."""
    spellings = [s for pair in _FLOAT_MATH.values() for s in pair if s] + list(_INT_FUNCS.values())
    return {name for s in spellings for name in re.findall(r"(?<![\w:])([A-Za-z_]\w*)\(", s)}


def elementwise_expr(fn: str, operand_dt, result_dt, args, propagate_nan=False) -> str:
    """The C expression computing `fn` on operand expressions `args`."""
    if fn in ("neg", "invert") and args and (args[0][:1] in "-~+" or needs_parens(args[0])):
        args = [f"({args[0]})"]       # `-` of the literal -3 is -(-3), never the decrement --3
    a = args[0] if args else None
    b = args[1] if len(args) > 1 else None
    c = args[2] if len(args) > 2 else None
    if fn in ("min", "max") and propagate_nan and operand_dt.is_floating():
        fn = fn + "_nan"
    if fn == "select":
        return _OPERATORS["select"].format(a=a, b=b, c=c)
    dt = operand_dt
    if dt.is_floating():
        if dt in HALF_TYPES and fn in _HALF_FUSED and result_dt is dt:
            return _HALF_FUSED[fn].format(a=a, b=b, c=c)
        if dt in HALF_TYPES and fn not in _HALF_NATIVE:
            f_args = [f"tp::cast<float>({x})" for x in args]
            inner = elementwise_expr(fn, dtypes.float32, dtypes.float32, f_args, False)
            if result_dt in HALF_TYPES:
                return f"tp::cast<{result_dt.c_name}>({inner})"
            return inner
        if fn in _FLOAT_MATH:
            spelled = _FLOAT_MATH[fn][1 if dt is dtypes.float64 else 0]
            return spelled.format(a=a, b=b, c=c)
        return _OPERATORS[fn].format(a=a, b=b, c=c)
    if fn in _INT_FUNCS:
        return _INT_FUNCS[fn].format(a=a, b=b, c=c)
    if fn in _WRAPPING and dt.kind is not dtypes.Kind.BOOL and (dt.signed or dt.bits < 32):
        # Triton's integer arithmetic wraps; C's signed overflow (and 16-bit operands promoted to int) is
        # undefined, which the C compiler exploits: computed in unsigned arithmetic (device.cuh).
        return f"tp::wrap_{fn}<{dt.c_name}>({', '.join(args)})"
    if fn in _NARROWED and dt.kind is not dtypes.Kind.BOOL and dt.bits < 32:
        # C computes 8- and 16-bit operands as int; the conversion back wraps, as Triton's result does, and
        # spelled out it draws no truncation warning when both operands are constants.
        return f"static_cast<{dt.c_name}>({_OPERATORS[fn].format(a=a, b=b, c=c)})"
    if dt is dtypes.int1 and fn in _BOOL_OPERATORS:
        return _BOOL_OPERATORS[fn].format(a=a, b=b)
    if fn == "fma":
        return f"{a} * {b} + {c}"
    if fn == "ashr":
        # `>>` of a signed block promoted to an unsigned type: shift the bits as the signed type of that width.
        signed = dtypes.by_name(f"int{dt.bits}")
        return f"({dt.c_name})(({signed.c_name})({a}) >> {b})"
    return _OPERATORS[fn].format(a=a, b=b, c=c)


# Narrowing float conversions rounded toward zero (`x.to(..., fp_downcast_rounding="rtz")`). From fp64 to a
# 16-bit type the value goes through fp32, toward zero both times, which is the same as once.
_RTZ = {
    ("fp32", "fp16"): "__float2half_rz({a})",
    ("fp32", "bf16"): "__float2bfloat16_rz({a})",
    ("fp64", "fp32"): "__double2float_rz({a})",
    ("fp64", "fp16"): "__float2half_rz(__double2float_rz({a}))",
    ("fp64", "bf16"): "__float2bfloat16_rz(__double2float_rz({a}))",
}


def round_toward_zero(src, dst) -> str:
    """The C expression (over `{a}`) converting `src` to the narrower float `dst`, rounding toward zero."""
    return _RTZ[(src.name, dst.name)]     # the typing rule admits only narrowing float conversions


def needs_parens(expr: str) -> bool:
    return any(ch in expr for ch in " ?")


COMBINERS = {
    # reduce combine -> device helper updating the accumulator in place
    "add": "tp::combine_add", "max": "tp::combine_max", "min": "tp::combine_min", "xor": "tp::combine_xor", "or": "tp::combine_or",
    "argmax": "tp::combine_argmax", "argmin": "tp::combine_argmin",
}


def fp8_conversion(src, dst) -> str:
    """The C conversion between fp8 (cuda_fp8.h's __nv_fp8_e4m3 / __nv_fp8_e5m2) and another type, over `{a}`:
    from fp8 exactly through float; to fp8 by the type's constructor, which rounds to nearest even and saturates
    (Triton's cvt.rn.satfinite), from double directly (through float would round twice), else from float (exact
    for the 16-bit floats; integers saturate long before float loses precision)."""
    if src.is_fp8():
        inner = "static_cast<float>({a})"
        return f"{dst.c_name}({inner})" if dst.is_fp8() else f"tp::cast<{dst.c_name}>({inner})"
    if src is dtypes.float64:
        return f"{dst.c_name}({{a}})"
    return f"{dst.c_name}(tp::cast<float>({{a}}))"
