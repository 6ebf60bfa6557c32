"""Triton's operator semantics on Tensors: operand type checking, promotion, broadcasting, and C results.

`check_types` is Triton's `binary_op_type_checking_impl`: Python numbers become scalars typed by
`dtypes.python_scalar_dtype`, pointer operands are checked, both sides are converted to
`dtypes.computation_type` (the single promotion table the compiler also uses) and broadcast. The operators
then compute with C semantics: integers wrap, `//` and `%` truncate toward zero, `>>` is arithmetic or
logical by signedness, and shifts by the bit width or more give 0 (or the sign) as the GPU's shifts do.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError
from . import numeric
from .location import error
from .shapes import broadcast_pair
from .tensor import Tensor, is_python_number, scalar_tensor, to_tensor, unwrap


def _operand(value, op: str):
    """(Tensor, the Python number it came from or None)."""
    value = unwrap(value)
    if isinstance(value, Tensor):
        return value, None
    if is_python_number(value):
        return scalar_tensor(value), value
    raise error(DTypeError, f"unsupported operand for {op}: {type(value).__name__} {value!r}")


def _check_pointer_operand(a: dt.dtype, b: dt.dtype, allowed: bool, op: str):
    """Triton's `check_ptr_type_impl`: where a pointer may appear and what it may meet."""
    if not a.is_ptr():
        return
    if not allowed:
        raise error(DTypeError, f"operator {op} is not defined for {a!r} and {b!r}")
    if b.is_ptr() and a is not b:
        raise error(DTypeError, f"operator {op} cannot combine different pointer types {a!r} and {b!r}")
    if b.is_floating():
        raise error(DTypeError, f"operator {op} cannot combine a pointer with a floating-point value "
                    f"({a!r} and {b!r}); pointer offsets must be integers")


def _check_scalar_fits(value, target: dt.dtype, op: str):
    """A Python integer must be representable in the integer type it is converted to (as Triton checks)."""
    if value is None or not target.is_int() or isinstance(value, (float, np.floating)):
        return
    if value < 0 and target.is_int_unsigned():
        raise error(DTypeError, f"operator {op}: cannot combine an unsigned {target!r} block with the negative "
                    f"number {value}", hint="cast one of them explicitly")
    lo, hi = numeric.int_range(target)
    if not lo <= value <= hi:
        raise error(DTypeError, f"operator {op}: the number {value} is out of range for {target!r}")


def promote(a: dt.dtype, a_is_scalar: bool, b: dt.dtype, b_is_scalar: bool, op: str,
            div_or_mod: bool = False) -> dt.dtype:
    try:
        return dt.computation_type(a, a_is_scalar, b, b_is_scalar, div_or_mod)
    except TypeError as exc:
        raise error(DTypeError, f"operator {op}: {exc}") from None


def cast_tensor(t: Tensor, target: dt.dtype) -> Tensor:
    """Value conversion of a non-pointer Tensor to `target`."""
    if t.dtype is target:
        return t
    return Tensor(numeric.cast(t.data, t.dtype, target), target)


def check_types(lhs, rhs, op: str, *, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic=True,
                div_or_mod=False) -> tuple[Tensor, Tensor]:
    """Both operands as Tensors of one computation type (when `arithmetic`), broadcast to one shape."""
    a, a_value = _operand(lhs, op)
    b, b_value = _operand(rhs, op)
    _check_pointer_operand(a.dtype, b.dtype, allow_lhs_ptr, op)
    _check_pointer_operand(b.dtype, a.dtype, allow_rhs_ptr, op)
    if arithmetic and not a.dtype.is_ptr() and not b.dtype.is_ptr():
        target = promote(a.dtype, a_value is not None, b.dtype, b_value is not None, op, div_or_mod)
        _check_scalar_fits(a_value, target, op)
        _check_scalar_fits(b_value, target, op)
        a = scalar_tensor(a_value, target) if a_value is not None else cast_tensor(a, target)
        b = scalar_tensor(b_value, target) if b_value is not None else cast_tensor(b, target)
    return broadcast_pair(a, b)


def _apply(fn, a: Tensor, b: Tensor) -> Tensor:
    """`fn` elementwise on two Tensors of one dtype; the result has that dtype (rounded / wrapped)."""
    dtype = computable(a, f"operator {fn.__name__}").dtype
    result = fn(numeric.arithmetic_view(a.data, dtype), numeric.arithmetic_view(b.data, dtype))
    return Tensor(numeric.finish_arithmetic(result, dtype), dtype)


# ---- arithmetic -------------------------------------------------------------------------------------------

def add(lhs, rhs) -> Tensor:
    a, b = check_types(lhs, rhs, "+", allow_lhs_ptr=True, allow_rhs_ptr=True)
    if a.dtype.is_ptr() and b.dtype.is_ptr():
        raise error(DTypeError, f"cannot add two pointers ({a.dtype!r} + {b.dtype!r})")
    if b.dtype.is_ptr():
        a, b = b, a
    if a.dtype.is_ptr():
        return a.offset_by(b)
    return _apply(np.add, a, b)


def sub(lhs, rhs) -> Tensor:
    a, b = check_types(lhs, rhs, "-", allow_lhs_ptr=True)
    if a.dtype.is_ptr():
        return a.offset_by(b, negate=True)
    return _apply(np.subtract, a, b)


def mul(lhs, rhs) -> Tensor:
    return _apply(np.multiply, *check_types(lhs, rhs, "*"))


def truediv(lhs, rhs) -> Tensor:
    a, b = check_types(lhs, rhs, "/", div_or_mod=True)
    if a.dtype.is_int():
        # Triton: int / int is computed in float32.
        a, b = cast_tensor(a, dt.float32), cast_tensor(b, dt.float32)
    return _apply(np.true_divide, a, b)


def _c_quotient(x, y):
    """Integer division truncating toward zero (C), from NumPy's C-like remainder."""
    remainder = np.fmod(x, y)
    return np.floor_divide(x - remainder, y)  # exact division, so floor == trunc


def floordiv(lhs, rhs) -> Tensor:
    a, b = check_types(lhs, rhs, "//", div_or_mod=True)
    if not a.dtype.is_int():
        raise error(DTypeError, f"operator // is only defined on integers (got {a.dtype!r}), as in Triton",
                    hint="for floats use tl.floor(x / y)")
    return _apply(_c_quotient, a, b)


def mod(lhs, rhs) -> Tensor:
    # np.fmod is C's remainder for integers (sign of the dividend) and C's fmod for floats.
    return _apply(np.fmod, *check_types(lhs, rhs, "%", div_or_mod=True))


# ---- comparisons ------------------------------------------------------------------------------------------

_COMPARISONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
                ">=": operator.ge}


def compare(op: str, lhs, rhs) -> Tensor:
    a, b = check_types(lhs, rhs, op)
    computable(a, f"operator {op}")
    return Tensor(np.asarray(_COMPARISONS[op](a.data, b.data)), dt.int1)


# ---- bitwise ----------------------------------------------------------------------------------------------

def _bitwise_operands(lhs, rhs, op: str) -> tuple[Tensor, Tensor]:
    """Triton's `bitwise_op_type_checking_impl` (3.4+): arithmetic promotion (so `int8_block & 0xF` stays
    int8), then integers only."""
    a, b = check_types(lhs, rhs, op)
    if not a.dtype.is_int() or not b.dtype.is_int():
        raise error(DTypeError, f"invalid operands of type {a.dtype!r} and {b.dtype!r}: operator {op} needs "
                                "integer operands")
    target = dt.integer_promote(a.dtype, b.dtype)
    return cast_tensor(a, target), cast_tensor(b, target)


def and_(lhs, rhs) -> Tensor:
    return _apply(np.bitwise_and, *_bitwise_operands(lhs, rhs, "&"))


def or_(lhs, rhs) -> Tensor:
    return _apply(np.bitwise_or, *_bitwise_operands(lhs, rhs, "|"))


def xor(lhs, rhs) -> Tensor:
    return _apply(np.bitwise_xor, *_bitwise_operands(lhs, rhs, "^"))


def _shift_amounts(b: Tensor, bits: int):
    amounts = b.data.astype(np.int64)
    return amounts, (amounts >= 0) & (amounts < bits)


def shl(lhs, rhs) -> Tensor:
    a, b = _bitwise_operands(lhs, rhs, "<<")
    bits = numeric.unsigned_view(a.data, a.dtype)
    amounts, in_range = _shift_amounts(b, a.dtype.bits)
    shifted = np.left_shift(bits, np.where(in_range, amounts, 0).astype(bits.dtype))
    shifted = np.where(in_range, shifted, np.zeros_like(bits))
    return Tensor(numeric.from_bits(shifted, a.dtype), a.dtype)


def shr(lhs, rhs, arithmetic: bool) -> Tensor:
    """`>>`: sign-filling when `arithmetic` (the block operand is signed), zero-filling otherwise."""
    a, b = _bitwise_operands(lhs, rhs, ">>")
    nbits = a.dtype.bits
    amounts, in_range = _shift_amounts(b, nbits)
    if arithmetic:
        values = numeric.signed_view(a.data, a.dtype)
        # Shifting by the width or more leaves only copies of the sign bit.
        shifted = np.right_shift(values, np.clip(amounts, 0, nbits - 1).astype(values.dtype))
        bits = numeric.to_bits(shifted, dt.by_name(f"int{nbits}")) if nbits > 1 else shifted
    else:
        values = numeric.unsigned_view(a.data, a.dtype)
        shifted = np.right_shift(values, np.where(in_range, amounts, 0).astype(values.dtype))
        bits = np.where(in_range, shifted, np.zeros_like(values))
    return Tensor(numeric.from_bits(bits, a.dtype), a.dtype)


# ---- unary ------------------------------------------------------------------------------------------------

def computable(t: Tensor, what: str, fn: str = "") -> Tensor:
    """`t`, unless it holds fp8 values that `fn` cannot take (`dtypes.fp8_computable`: Triton's compiler
    lowers only selections, abs and min/max on fp8)."""
    try:
        dt.fp8_computable(fn, t.dtype, what)
    except TypeError as exc:
        raise error(DTypeError, str(exc)) from None
    return t


def neg(x) -> Tensor:
    x = computable(to_tensor(x), "unary -")
    if x.dtype.is_ptr():
        raise error(DTypeError, f"unary - is not defined on pointers ({x.dtype!r})")
    if x.dtype is dt.int1:
        return x  # 1-bit two's complement: -b == b
    if x.dtype.is_floating():
        # Triton's `-x` is `0 - x`: the negation of +0.0 is +0.0, not -0.0
        return Tensor(numeric.finish(np.subtract(np.zeros_like(x.data), x.data), x.dtype), x.dtype)
    return Tensor(numeric.finish(np.negative(x.data), x.dtype), x.dtype)


def invert(x) -> Tensor:
    x = to_tensor(x)
    if not x.dtype.is_int():
        raise error(DTypeError, f"operator ~ needs an integer operand, got {x.dtype!r}")
    return Tensor(np.invert(x.data), x.dtype)


__all__ = ["check_types", "cast_tensor", "promote", "add", "sub", "mul", "truediv", "floordiv", "mod", "compare",
           "and_", "or_", "xor", "shl", "shr", "neg", "invert"]
