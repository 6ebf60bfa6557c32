"""The interpreter's evaluation of IR ops: what each op the typing rules make computes, on NumPy arrays.

`EVALUATE[kind](attrs, result_type, operands)` gives the result's array (and, for a pointer, its buffer) of one
op of `kind` (`parse/ir.py` `OpKind`) whose operands are `eager.Evaluated` values. The op was made, checked and
typed by the one semantics (`parse/semantic*.py`), so nothing here checks types or broadcasts: it only computes
with the GPU's arithmetic. Integers wrap and divide toward zero (C), `>>` of a signed type fills with the sign,
shifts by the width or more give 0 (or the sign); floats round once to their type (fp16/bf16 computed in fp32,
as the emitted CUDA does); math functions are the catalogue's float64 evaluation (`language/catalogue.py`)
rounded to the operand's type. An elementwise `fn` the table lacks is refused as not supported yet, never
guessed. Kinds not yet evaluated here are still interpreted by the builtin rules of the other modules.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as dt
from ..errors import NOT_YET, DTypeError, InterpreterError, UnsupportedSyntaxError
from ..language import catalogue, core
from ..parse.ir import OpKind
from . import numeric
from .libdevice_numeric import EXACT, FLOAT64
from .location import error


def round_from_wide(values, dtype: dt.dtype) -> np.ndarray:
    """float64 results to `dtype`: one rounding to float32 (fp64 stays), then to fp16/bf16 if needed."""
    values = np.asarray(values, dtype=np.float64)
    if dtype is dt.float64:
        return values
    return numeric.finish(values.astype(np.float32), dtype)


# ---- elementwise functions: fn -> f(result dtype, operand dtype, attrs, *operand arrays) -------------------

def _arithmetic(fn):
    def apply(out, dtype, attrs, a, b):
        return numeric.finish_arithmetic(fn(numeric.arithmetic_view(a, dtype), numeric.arithmetic_view(b, dtype)),
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
    bits = numeric.unsigned_view(a, dtype)
    amounts, in_range = _shift_amounts(b, dtype.bits)
    shifted = np.left_shift(bits, np.where(in_range, amounts, 0).astype(bits.dtype))
    return numeric.from_bits(np.where(in_range, shifted, np.zeros_like(bits)), dtype)


def _shift_right(arithmetic):
    """`>>`: sign-filling for a signed type ("shr") or for the signed block of an unsigned result ("ashr")."""
    def apply(out, dtype, attrs, a, b):
        nbits = dtype.bits
        amounts, in_range = _shift_amounts(b, nbits)
        if arithmetic or dtype.is_int_signed():
            values = numeric.signed_view(a, dtype)
            # Shifting by the width or more leaves only copies of the sign bit.
            shifted = np.right_shift(values, np.clip(amounts, 0, nbits - 1).astype(values.dtype))
            bits = numeric.to_bits(shifted, dt.by_name(f"int{nbits}")) if nbits > 1 else shifted
        else:
            values = numeric.unsigned_view(a, dtype)
            shifted = np.right_shift(values, np.where(in_range, amounts, 0).astype(values.dtype))
            bits = np.where(in_range, shifted, np.zeros_like(values))
        return numeric.from_bits(bits, dtype)
    return apply


def _neg(out, dtype, attrs, a):
    if dtype is dt.int1:
        return a                     # 1-bit two's complement: -b == b
    if dtype.is_floating():          # Triton's `-x` is `0 - x`: the negation of +0.0 is +0.0
        return numeric.finish(np.subtract(np.zeros_like(a), a), dtype)
    return numeric.finish(np.negative(a), dtype)


def _min_max(nan_losing, nan_winning):
    """NaN handling of `tl.PropagateNan`: NONE is C's fmin/fmax (a NaN loses to a number), ALL gives NaN."""
    def apply(out, dtype, attrs, a, b):
        fn = nan_winning if dtype.is_floating() and attrs.get("propagate_nan") else nan_losing
        return numeric.finish(fn(a, b), dtype)
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
    ua, ub = numeric.unsigned_view(a, dtype), numeric.unsigned_view(b, dtype)
    high = (ua.astype(np.uint64) * ub.astype(np.uint64)) >> np.uint64(32) if dtype.bits == 32 else \
        _high_product_64(ua, ub)
    return numeric.from_bits(high, dtype)


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


def _inline_asm(out, dtype, attrs, *operands):
    raise error(UnsupportedSyntaxError, "tl.inline_asm_elementwise runs PTX, which the interpreter cannot (Triton's "
                "interpreter cannot either)", hint="compile the kernel (launch it on a GPU, or kernel.cuda_source)",
                refusal=NOT_YET)


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
    "fma": _fma, "div_rn": _divide_rounded, "umulhi": _umulhi, "inline_asm": _inline_asm,
    **{f.name: _math_function(f) for f in catalogue.FUNCTIONS},
}


def _libdevice(name, result: dt.dtype, arrays):
    """A libdevice row (`libdevice_numeric.py`): float functions in float64 rounded once, the rest exactly."""
    if name == "abs" and result.is_int():
        data = EXACT["abs_int"](result, *arrays)
    elif name in EXACT:
        data = EXACT[name](result, *arrays)
    else:
        data = round_from_wide(FLOAT64[name](*[a.astype(np.float64) for a in arrays]), result)
    return np.asarray(data).astype(result.numpy, copy=False)


def _same_buffer(a, b, what):
    if a.buffer is not b.buffer:
        raise error(InterpreterError, f"{what}: the interpreter cannot combine pointers into two different arrays "
                    f"('{a.buffer.name}' and '{b.buffer.name}') in one block", refusal=NOT_YET)
    return a.buffer


def _elementwise(attrs, result_type, operands):
    fn = attrs["fn"]
    rule = ELEMENTWISE.get(fn)
    if rule is not None:
        return rule(result_type.dtype, operands[-1].dtype, attrs, *(v.data for v in operands)), None
    if fn == "select":
        cond, a, b = operands
        chosen = np.where(cond.data, a.data, b.data)
        return chosen, (_same_buffer(a, b, "tl.where") if a.buffer is not None else None)
    if fn.startswith("libdevice."):
        return _libdevice(fn[len("libdevice."):], result_type.dtype, [v.data for v in operands]), None
    raise error(UnsupportedSyntaxError, f"the interpreter cannot evaluate the elementwise '{fn}' yet",
                refusal=NOT_YET)


# ---- values, shapes, casts, pointers ----------------------------------------------------------------------

def _cast(attrs, result_type, operands):
    (v,) = operands
    src, dst = v.dtype, result_type.dtype
    if src.is_ptr() or dst.is_ptr():
        if src.is_ptr() and dst.is_ptr() and v.buffer is not None:
            return _reinterpret(v, dst.element_ty)
        raise error(DTypeError, f"the interpreter cannot convert {src!r} to {dst!r}", refusal=NOT_YET)
    return numeric.cast(v.data, src, dst, attrs.get("rounding")), None


def _bitcast(attrs, result_type, operands):
    (v,) = operands
    if v.dtype.is_ptr():
        return _cast(attrs, result_type, operands)
    return numeric.from_bits(numeric.to_bits(v.data, v.dtype), result_type.dtype), None


def _reinterpret(v, element_ty):
    """A pointer cast: the same addresses read as another element type, as Triton's pointer bitcast; offsets
    rescale by the widths and must land on whole elements of the new type."""
    buffer = v.buffer
    if element_ty is buffer.element_ty:
        return v.data, buffer
    for t in (buffer.element_ty, element_ty):
        if t.numpy is None or buffer.values.dtype != buffer.element_ty.numpy:
            raise error(DTypeError, f"a pointer cast from {v.dtype!r} to pointer<{element_ty!r}> in the interpreter "
                        "(bf16 and fp8 elements are held as float32 copies)", refusal=NOT_YET)
    old, new = buffer.element_ty.numpy.itemsize, element_ty.numpy.itemsize
    byte_offsets = v.data * old
    if np.any(byte_offsets % new):
        raise error(InterpreterError, f"a pointer cast to pointer<{element_ty!r}> of addresses that are not "
                    f"multiples of its {new}-byte elements, in the interpreter", refusal=NOT_YET)
    return byte_offsets // new, buffer.viewed_as(element_ty)


def _addptr(attrs, result_type, operands):
    ptr, offsets = operands    # unsigned offsets are zero-extended, as Triton's addptr does
    return ptr.data + offsets.data.astype(np.int64), ptr.buffer


def _stretched(attrs, result_type, operands):
    """A splat or broadcast changes no element: the array stays as it is, NumPy's broadcasting in the ops that
    read it stretches it (a value's array is always broadcastable to its type's shape; `eager.from_ir` gives it
    that shape when it leaves the rule)."""
    (v,) = operands
    return v.data, v.buffer


def _expand_dims(attrs, result_type, operands):
    (v,) = operands
    return np.expand_dims(_materialized(v), attrs["axis"]), v.buffer


def _materialized(v):
    """`v`'s array at its type's shape (a splat or broadcast left as it was gets its shape here)."""
    return v.data if v.data.shape == v.type.shape else np.broadcast_to(v.data, v.type.shape)


def _load(attrs, result_type, operands):
    from .pointers import gather      # here: pointers.py imports tensor.py, which imports this module's user
    ptr = operands[0]
    if len(operands) == 1:
        return gather(ptr.buffer, ptr.data, None, None), None
    mask, other = operands[1:]     # broadcast by NumPy as they are (a splat `other` stays one number)
    return gather(ptr.buffer, ptr.data, mask.data, other.data), None


def _store(attrs, result_type, operands):
    from .pointers import scatter
    ptr, value = operands[:2]
    mask = _materialized(operands[2]) if len(operands) > 2 else None
    scatter(ptr.buffer, _materialized(ptr), _materialized(value), mask)
    return None, None


def _grid_value(field):
    """`program_id` / `num_programs` of the program being interpreted."""
    def apply(attrs, result_type, operands):
        return np.int32(getattr(core.current_interpreter(), field)[attrs["axis"]]), None
    return apply


EVALUATE = {
    OpKind.CONSTANT: lambda attrs, t, ops: (numeric.scalar_constant(attrs["value"], t.dtype), None),
    OpKind.SPLAT: _stretched,
    OpKind.BROADCAST: _stretched,
    OpKind.EXPAND_DIMS: _expand_dims,
    OpKind.RESHAPE: lambda attrs, t, ops: (_materialized(ops[0]).reshape(t.shape), ops[0].buffer),  # row-major
    OpKind.PERMUTE: lambda attrs, t, ops: (np.transpose(_materialized(ops[0]), attrs["order"]), ops[0].buffer),
    OpKind.HINT: lambda attrs, t, ops: (ops[0].data, ops[0].buffer),     # hints change no value
    OpKind.ARANGE: lambda attrs, t, ops: (np.arange(attrs["start"], attrs["start"] + t.shape[0], dtype=np.int32),
                                          None),
    OpKind.LOAD: _load,
    OpKind.STORE: _store,
    OpKind.PROGRAM_ID: _grid_value("program_id"),
    OpKind.NUM_PROGRAMS: _grid_value("grid"),
    OpKind.CAST: _cast,
    OpKind.BITCAST: _bitcast,
    OpKind.ADDPTR: _addptr,
    OpKind.ELEMENTWISE: _elementwise,
    OpKind.BARRIER: lambda attrs, t, ops: (None, None),     # programs run one at a time: always satisfied
}
