"""The elementwise functions of the IR on NumPy arrays: `ELEMENTWISE[fn](result dtype, operand dtype, attrs,
*operand arrays)` is what an `elementwise` op of function `fn` computes, with the GPU's arithmetic.

Integers wrap and divide toward zero (C), `>>` of a signed type fills with the sign, shifts by the width or more
give 0 (or the sign); floats round once to their type (fp16/bf16 computed in fp32, as the emitted CUDA does); math
functions are the catalogue's float64 evaluation (`language/catalogue.py`) rounded to the operand's type. The
interpreter evaluates its ops with it (`interpreter/evaluate.py`) and the compiler folds constants with it
(`parse/semantic.py`), so the two cannot compute an operator differently.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as dt
from ..language import catalogue
from . import storage
from .storage import round_from_wide


def _arithmetic(fn):
    def apply(out, dtype, attrs, a, b):
        return storage.finish_arithmetic(fn(storage.arithmetic_view(a, dtype), storage.arithmetic_view(b, dtype)),
                                         dtype)
    return apply


def _c_quotient(x, y):
    """Integer division truncating toward zero (C), from NumPy's C-like remainder."""
    remainder = np.fmod(x, y)
    return np.floor_divide(x - remainder, y)  # exact division, so floor == trunc


def _compare(fn):
    return lambda out, dtype, attrs, a, b: np.asarray(fn(a, b))


def _shift_amounts(b, bits: int):
    amounts = b.astype(np.int64)
    return amounts, (amounts >= 0) & (amounts < bits)


def _shl(out, dtype, attrs, a, b):
    bits = storage.unsigned_view(a, dtype)
    amounts, in_range = _shift_amounts(b, dtype.bits)
    shifted = np.left_shift(bits, np.where(in_range, amounts, 0).astype(bits.dtype))
    return storage.from_bits(np.where(in_range, shifted, np.zeros_like(bits)), dtype)


def _shift_right(arithmetic):
    """`>>`: sign-filling for a signed type ("shr") or for the signed block of an unsigned result ("ashr")."""
    def apply(out, dtype, attrs, a, b):
        nbits = dtype.bits
        amounts, in_range = _shift_amounts(b, nbits)
        if arithmetic or dtype.is_int_signed():
            values = storage.signed_view(a, dtype)
            # Shifting by the width or more leaves only copies of the sign bit.
            shifted = np.right_shift(values, np.clip(amounts, 0, nbits - 1).astype(values.dtype))
            bits = storage.to_bits(shifted, dt.by_name(f"int{nbits}")) if nbits > 1 else shifted
        else:
            values = storage.unsigned_view(a, dtype)
            shifted = np.right_shift(values, np.where(in_range, amounts, 0).astype(values.dtype))
            bits = np.where(in_range, shifted, np.zeros_like(values))
        return storage.from_bits(bits, dtype)
    return apply


def _neg(out, dtype, attrs, a):
    if dtype is dt.int1:
        return a                     # 1-bit two's complement: -b == b
    if dtype.is_floating():          # Triton's `-x` is `0 - x`: the negation of +0.0 is +0.0
        return storage.finish(np.subtract(np.zeros_like(a), a), dtype)
    return storage.finish(np.negative(a), dtype)


def _min_max(nan_losing, nan_winning):
    """NaN handling of `tl.PropagateNan`: NONE is C's fmin/fmax (a NaN loses to a number), ALL gives NaN."""
    def apply(out, dtype, attrs, a, b):
        fn = nan_winning if dtype.is_floating() and attrs.get("propagate_nan") else nan_losing
        return storage.finish(fn(a, b), dtype)
    return apply


def _fma(out, dtype, attrs, a, b, c):
    # The product of two fp32 (or narrower) values is exact in float64, so this rounds (about) once.
    return round_from_wide(a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64), dtype)


def _divide_rounded(out, dtype, attrs, a, b):
    return round_from_wide(a.astype(np.float64) / b.astype(np.float64), dtype)


def _high_product_64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    high = np.frompyfunc(lambda p, q: (int(p) * int(q)) >> 64, 2, 1)(a, b)
    return np.asarray(high).astype(np.uint64)


def _umulhi(out, dtype, attrs, a, b):
    """The high half of the unsigned 2N-bit product (CUDA's __umulhi / __umul64hi)."""
    ua, ub = storage.unsigned_view(a, dtype), storage.unsigned_view(b, dtype)
    high = (ua.astype(np.uint64) * ub.astype(np.uint64)) >> np.uint64(32) if dtype.bits == 32 else \
        _high_product_64(ua, ub)
    return storage.from_bits(high, dtype)


_SMALLEST_NORMAL_FP32 = 2.0 ** -126


def _math_function(function):
    """A row of the math catalogue: float64 evaluation rounded once to the type; an integer operand (abs) in its
    own type, where abs(INT_MIN) wraps to INT_MIN as on the GPU. A row computed in fp32 with flush to zero
    (`flushes_subnormal_results`: tl.exp2, as the compiled kernel and Triton do) flushes below fp32's smallest
    normal for every type but fp64."""
    def apply(out, dtype, attrs, a):
        if dtype.is_int():
            return np.asarray(function.evaluate(a))
        wide = function.evaluate(a.astype(np.float64))
        if function.flushes_subnormal_results and dtype.bits < 64:
            wide = np.where(np.abs(wide) < _SMALLEST_NORMAL_FP32, 0.0 * wide, wide)
        return round_from_wide(wide, dtype)
    return apply


ELEMENTWISE = {
    "add": _arithmetic(np.add), "sub": _arithmetic(np.subtract), "mul": _arithmetic(np.multiply),
    "truediv": _arithmetic(np.true_divide), "floordiv": _arithmetic(_c_quotient),
    # np.fmod is C's remainder for integers (sign of the dividend) and C's fmod for floats.
    "mod": _arithmetic(np.fmod),
    "and": _arithmetic(np.bitwise_and), "or": _arithmetic(np.bitwise_or), "xor": _arithmetic(np.bitwise_xor),
    "shl": _shl, "shr": _shift_right(False), "ashr": _shift_right(True),
    "lt": _compare(operator.lt), "le": _compare(operator.le), "gt": _compare(operator.gt),
    "ge": _compare(operator.ge), "eq": _compare(operator.eq), "ne": _compare(operator.ne),
    "neg": _neg, "invert": lambda out, dtype, attrs, a: np.invert(a),
    "min": _min_max(np.fmin, np.minimum), "max": _min_max(np.fmax, np.maximum),
    "fma": _fma, "div_rn": _divide_rounded, "umulhi": _umulhi,
    **{f.name: _math_function(f) for f in catalogue.FUNCTIONS},
}
