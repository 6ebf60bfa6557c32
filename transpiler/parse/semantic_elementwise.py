"""Typing rules of the elementwise builtins: tl.where, minimum / maximum / clamp, the math catalogue's
functions (`language/catalogue.py`), fma, cdiv, div_rn / fdiv and umulhi."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import Kind
from ..errors import NOT_YET, DTypeError
from ..language import catalogue
from .ir import Value
from .semantic import (RULES, _truediv, binary_op, binary_operands, broadcast_pair, cast, const_value, elementwise,
                       is_const, no_record_operand, rule, to_bool, to_value)


@rule("where")
def _where(b, condition, x, y):
    c = to_value(b, condition)
    c = to_bool(b, c)
    if any(not is_const(v) and to_value(b, v).dtype.is_ptr() for v in (x, y)):
        raise b.error(DTypeError, "tl.where choosing between pointers", refusal=NOT_YET,
                      hint="choose between offsets and add them to one pointer: "
                           "tl.where(c, p + i, p + j) as p + tl.where(c, i, j)")
    x, y, dt = binary_operands(b, x, y)
    c, x = broadcast_pair(b, c, x)
    c, y = broadcast_pair(b, c, y)
    x, y = broadcast_pair(b, x, y)
    return elementwise(b, "select", [c, x, y], dt)


def as_tensor(b, x) -> Value:
    """Triton's `to_tensor`: a Python number becomes a scalar of its own type (int32/uint32/int64/uint64 by
    value, fp32 or fp64 by magnitude, int1), so it takes part in the promotion that follows like any scalar,
    not as the weak literal of `+` (`tl.minimum(u8, 3)` is int32, `tl.minimum(fp16, 2.0)` fp32)."""
    no_record_operand(b, x)
    return to_value(b, x)


def float32_if_bf16(b, v: Value) -> Value:
    """Triton computes min, max and clamp of bf16 operands in fp32, and the result stays fp32."""
    return cast(b, v, dtypes.float32) if v.dtype is dtypes.bfloat16 else v


def _floats_only(b, what, dt, hint):
    if not dt.is_floating():
        raise b.error(DTypeError, f"{what} is defined on floating-point values only, not {dt!r} (Triton's rule)",
                      hint=hint)


def _minmax_operands(b, *operands):
    return [float32_if_bf16(b, as_tensor(b, x)) for x in operands]


def _minmax(fn):
    def apply(b, x, y, propagate_nan=None):
        x, y, dt = binary_operands(b, *_minmax_operands(b, x, y))
        nan = const_value(b, propagate_nan, "propagate_nan") or 0
        return elementwise(b, fn, [x, y], dt, propagate_nan=bool(nan))
    return apply


RULES["minimum"] = _minmax("min")
RULES["maximum"] = _minmax("max")


@rule("clamp")
def _clamp(b, x, min, max, propagate_nan=None):
    x, lo, hi = _minmax_operands(b, x, min, max)
    # Triton's order: the bounds meet first, then x meets each bound.
    lo, hi, _ = binary_operands(b, lo, hi)
    x, lo, _ = binary_operands(b, x, lo)
    x, hi, dt = binary_operands(b, x, hi)
    _floats_only(b, "tl.clamp", dt, "use tl.minimum(tl.maximum(x, lo), hi) for integers")
    return RULES["minimum"](b, RULES["maximum"](b, x, lo, propagate_nan), hi, propagate_nan)


def _math_function(function):
    """The typing rule of a row of the math catalogue (`language/catalogue.py`), by its typing class."""
    fn, allow_int = function.name, function.typing == catalogue.FLOAT_OR_INT

    def apply(b, x):
        v = to_value(b, x)
        if v.dtype.kind is not Kind.FLOAT:
            if allow_int and v.dtype.is_int():
                return elementwise(b, fn, [v], v.dtype)
            raise b.error(DTypeError, f"tl.{fn} needs a floating-point operand, not {v.dtype!r}",
                          hint="convert first with .to(tl.float32)")
        return elementwise(b, fn, [v], v.dtype)
    return apply


for _function in catalogue.FUNCTIONS:
    RULES[_function.name] = _math_function(_function)


def _named_operator(op):
    """`tl.add(x, y, sanitize_overflow=True)` (and sub, mul): Triton's functions behind `+`, `-`, `*`.
    `sanitize_overflow` is Triton's debug-mode overflow check, which debug mode here makes for every `+`, `-`, `*`
    of int32 anyway (semantic.check_int32_overflow)."""
    def apply(b, x, y, sanitize_overflow=True):
        return binary_op(b, op, x, y)
    apply.__name__ = f"_{op}"
    return apply


for _op in ("add", "sub", "mul"):
    RULES[_op] = _named_operator(_op)


@rule("condition")
def _condition(b, arg1, disable_licm=False):
    # `while tl.condition(c, disable_licm=True):` Triton's loop condition with a hint for LLVM's invariant code
    # motion, which has no counterpart in the C we emit: the condition itself
    return arg1


@rule("fma")
def _fma(b, x, y, z):
    x, y, z = (as_tensor(b, v) for v in (x, y, z))
    # Triton's order of promotion: x with y, then z with x, then z with y; the result has x's type.
    x, y, _ = binary_operands(b, x, y)
    z, x, _ = binary_operands(b, z, x)
    z, y, dt = binary_operands(b, z, y)
    _floats_only(b, "tl.fma", dt, "write x * y + z for integers")
    x, y = broadcast_pair(b, x, y)
    y, z = broadcast_pair(b, y, z)
    x, z = broadcast_pair(b, x, z)
    x, y = broadcast_pair(b, x, y)
    return elementwise(b, "fma", [x, y, z], dt)


@rule("cdiv")
def _cdiv(b, x, div):
    if is_const(x) and is_const(div):
        return -(-x // div)
    num = binary_op(b, "add", x, binary_op(b, "sub", div, 1))
    return binary_op(b, "floordiv", num, div)


@rule("div_rn")
def _div_rn(b, x, y):
    return _truediv(b, x, y, "div_rn")


@rule("fdiv")
def _fdiv(b, x, y, ieee_rounding=False):
    return _truediv(b, x, y, "div_rn" if const_value(b, ieee_rounding, "ieee_rounding") else "truediv")


@rule("umulhi")
def _umulhi(b, x, y):
    # Triton's umulhi makes tensors of Python numbers first (`tl.umulhi(i, 0x9E3779B9)` is uint32).
    x, y, dt = binary_operands(b, as_tensor(b, x), as_tensor(b, y))
    if dt not in (dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64):
        raise b.error(DTypeError, f"tl.umulhi needs 32- or 64-bit integers, not {dt!r}")
    return elementwise(b, "umulhi", [x, y], dt)
