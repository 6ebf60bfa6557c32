"""Interpreter rules for elementwise math: where, minimum/maximum/clamp, the float functions (exp, log,
sqrt, sin, erf, ...), abs, fma, cdiv, div_rn/fdiv and umulhi.

Float functions compute in float64 and round once to float32, then to the input type; for fp16/bf16 inputs
that is "compute in fp32, round to the input type". They reject integer inputs (DTypeError), as Triton's
math functions do. NaN handling of minimum/maximum follows `tl.PropagateNan`: NONE (the default) is C's
fmin/fmax, where a NaN loses to a number; ALL returns NaN when either input is NaN.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import CompileTimeError, DTypeError, UnsupportedSyntaxError
from ..language import PropagateNan, catalogue
from . import arith, numeric
from .arith import cast_tensor, check_types, computable
from .location import error
from .pointers import Pointer, same_buffer
from .registry import rule
from .shapes import broadcast_pair
from .tensor import Tensor, to_tensor, unwrap


def round_from_wide(values, dtype: dt.dtype) -> np.ndarray:
    """float64 results to `dtype`: one rounding to float32 (fp64 stays), then to fp16/bf16 if needed."""
    values = np.asarray(values, dtype=np.float64)
    if dtype is dt.float64:
        return values
    return numeric.finish(values.astype(np.float32), dtype)


def _require_float(t: Tensor, what: str) -> Tensor:
    computable(t, what)
    if not t.dtype.is_floating():
        raise error(DTypeError, f"{what} expects a floating-point block, got {t.dtype!r}",
                    hint="convert it first, e.g. x.to(tl.float32)")
    return t


def _broadcast_all(*tensors):
    """Broadcast any number of Tensors to one shape."""
    result = list(tensors)
    for _ in range(2):  # two passes settle every operand on the common shape
        for i in range(1, len(result)):
            result[0], result[i] = broadcast_pair(result[0], result[i])
    return result


# ---- selection and min/max --------------------------------------------------------------------------------


@rule("where")
def where(condition, x, y):
    cond = to_tensor(condition, "the condition of tl.where")
    if cond.dtype.is_ptr():
        raise error(DTypeError, "the condition of tl.where cannot be a pointer")
    cond = cast_tensor(cond, dt.int1)
    a, b = check_types(x, y, "tl.where", allow_lhs_ptr=True, allow_rhs_ptr=True)
    if a.dtype.is_ptr() != b.dtype.is_ptr():
        raise error(DTypeError, f"tl.where cannot choose between {a.dtype!r} and {b.dtype!r}")
    cond, a, b = _broadcast_all(cond, a, b)
    chosen = np.where(cond.data, a.data, b.data)
    if isinstance(a, Pointer):
        return Pointer(chosen, same_buffer(a, b, "tl.where"))
    return Tensor(chosen, a.dtype)


def _propagates_nan(propagate_nan, what: str) -> bool:
    mode = unwrap(propagate_nan)
    if mode is None or mode == PropagateNan.NONE:
        return False
    if mode == PropagateNan.ALL:
        return True
    raise error(CompileTimeError, f"{what}: propagate_nan must be tl.PropagateNan.NONE or ALL, got {mode!r}")


def _as_tensors(what: str, *operands) -> list:
    """Triton's `to_tensor` on each operand (a Python number becomes an int32/fp32/... scalar, no longer a
    weak literal), then bf16 to fp32: min, max and clamp of bf16 run in fp32 and their result stays fp32."""
    tensors = [to_tensor(x, f"an operand of {what}") for x in operands]
    return [cast_tensor(t, dt.float32) if t.dtype is dt.bfloat16 else t for t in tensors]


def _min_max(x, y, propagate_nan, what: str, nan_losing, nan_winning) -> Tensor:
    a, b = check_types(*_as_tensors(what, x, y), what)
    if a.dtype.is_fp8():
        # Triton compares fp8 values widened (exactly); the types CUDA cannot convert hold their bits here.
        cast_tensor(a, dt.float32)
    fn = nan_winning if a.dtype.is_floating() and _propagates_nan(propagate_nan, what) else nan_losing
    return Tensor(numeric.finish(fn(a.data, b.data), a.dtype), a.dtype)


@rule("minimum")
def minimum(x, y, propagate_nan=None):
    return _min_max(x, y, propagate_nan, "tl.minimum", np.fmin, np.minimum)


@rule("maximum")
def maximum(x, y, propagate_nan=None):
    return _min_max(x, y, propagate_nan, "tl.maximum", np.fmax, np.maximum)


@rule("clamp")
def clamp(x, min, max, propagate_nan=None):
    x, min, max = _as_tensors("tl.clamp", x, min, max)
    lo, hi = check_types(min, max, "tl.clamp")
    v, lo = check_types(x, lo, "tl.clamp")
    v, hi = check_types(v, hi, "tl.clamp")
    _require_float(v, "tl.clamp")
    v, lo, hi = _broadcast_all(v, cast_tensor(lo, v.dtype), cast_tensor(hi, v.dtype))
    if _propagates_nan(propagate_nan, "tl.clamp"):
        clamped = np.minimum(np.maximum(v.data, lo.data), hi.data)
    else:
        clamped = np.fmin(np.fmax(v.data, lo.data), hi.data)
    return Tensor(numeric.finish(clamped, v.dtype), v.dtype)


# ---- one-argument float functions -------------------------------------------------------------------------

_SMALLEST_NORMAL_FP32 = 2.0 ** -126


def _float_function_rule(name: str, fn, flushes_subnormal_results=False):
    def float_function(x):
        t = _require_float(to_tensor(x, f"the input of tl.{name}"), f"tl.{name}")
        wide = fn(t.data.astype(np.float64))
        if flushes_subnormal_results and t.dtype is not dt.float64:
            # computed in fp32 with flush to zero (catalogue row), as the compiled kernel and Triton do
            wide = np.where(np.abs(wide) < _SMALLEST_NORMAL_FP32, 0.0 * wide, wide)
        return Tensor(round_from_wide(wide, t.dtype), t.dtype)

    float_function.__name__ = float_function.__qualname__ = name
    float_function.__doc__ = f"tl.{name}: computed in float64, rounded to the input type."
    return rule(name)(float_function)


def _float_or_int_rule(name: str, fn):
    def float_or_int_function(x):
        t = computable(to_tensor(x, f"the input of tl.{name}"), f"tl.{name}", name)
        if t.dtype.is_ptr():
            raise error(DTypeError, f"tl.{name} is not defined on pointers")
        if t.dtype.is_fp8():    # abs: the sign bit cleared, in any fp8 format (as Triton's lowering does)
            return Tensor(numeric.from_bits(numeric.to_bits(t.data, t.dtype) & np.uint8(0x7F), t.dtype), t.dtype)
        return Tensor(fn(t.data), t.dtype)  # in the operand's type: abs(INT_MIN) wraps to INT_MIN, as on the GPU

    float_or_int_function.__name__ = float_or_int_function.__qualname__ = name
    return rule(name)(float_or_int_function)


# One rule per row of the math catalogue (language/catalogue.py), by its typing class.
for _function in catalogue.FUNCTIONS:
    if _function.typing == catalogue.FLOAT:
        _float_function_rule(_function.name, _function.evaluate, _function.flushes_subnormal_results)
    else:
        _float_or_int_rule(_function.name, _function.evaluate)


# ---- multi-argument arithmetic ----------------------------------------------------------------------------


@rule("fma")
def fma(x, y, z):
    x, y, z = (to_tensor(v, "an operand of tl.fma") for v in (x, y, z))
    a, b = check_types(x, y, "tl.fma")
    c, a = check_types(z, a, "tl.fma")
    c, b = check_types(c, b, "tl.fma")
    _require_float(a, "tl.fma")
    a, b, c = _broadcast_all(a, cast_tensor(b, a.dtype), cast_tensor(c, a.dtype))
    # The product of two fp32 (or narrower) values is exact in float64, so this rounds (about) once.
    wide = a.data.astype(np.float64) * b.data.astype(np.float64) + c.data.astype(np.float64)
    return Tensor(round_from_wide(wide, a.dtype), a.dtype)


@rule("cdiv")
def cdiv(x, div):
    x, div = unwrap(x), unwrap(div)
    if isinstance(x, int) and isinstance(div, int):
        return (x + div - 1) // div  # constexpr arithmetic stays Python arithmetic
    return arith.floordiv(arith.sub(arith.add(x, div), 1), div)


def _divide(a: Tensor, b: Tensor) -> Tensor:
    return Tensor(round_from_wide(a.data.astype(np.float64) / b.data.astype(np.float64), a.dtype), a.dtype)


@rule("div_rn")
def div_rn(x, y):
    a, b = check_types(x, y, "tl.div_rn")
    return _divide(_require_float(a, "tl.div_rn"), b)


@rule("fdiv")
def fdiv(x, y, ieee_rounding=False):
    for operand in (x, y):
        _require_float(to_tensor(operand, "an operand of tl.fdiv"), "tl.fdiv")
    return _divide(*check_types(x, y, "tl.fdiv"))


_UMULHI_TYPES = (dt.int32, dt.int64, dt.uint32, dt.uint64)


def _high_product_64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    high = np.frompyfunc(lambda p, q: (int(p) * int(q)) >> 64, 2, 1)(a, b)
    return np.asarray(high).astype(np.uint64)


@rule("inline_asm_elementwise")
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    raise error(UnsupportedSyntaxError, "tl.inline_asm_elementwise runs PTX, which the interpreter cannot (Triton's "
                "interpreter cannot either)", hint="compile the kernel (launch it on a GPU, or kernel.cuda_source)")


@rule("umulhi")
def umulhi(x, y):
    for operand in (unwrap(x), unwrap(y)):
        if isinstance(operand, Tensor) and operand.dtype not in _UMULHI_TYPES:
            raise error(DTypeError, f"tl.umulhi expects 32- or 64-bit integers, got {operand.dtype!r}")
    a, b = check_types(*_as_tensors("tl.umulhi", x, y), "tl.umulhi")
    ua, ub = numeric.unsigned_view(a.data, a.dtype), numeric.unsigned_view(b.data, b.dtype)
    # The high half of the unsigned 2N-bit product (CUDA's __umulhi / __umul64hi).
    if a.dtype.bits == 32:
        high = (ua.astype(np.uint64) * ub.astype(np.uint64)) >> np.uint64(32)
    else:
        high = _high_product_64(ua, ub)
    return Tensor(numeric.from_bits(high, a.dtype), a.dtype)


