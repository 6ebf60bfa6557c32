"""Typing rules of the builtins that make values: program ids, tl.arange, tl.full / zeros (and their
`_like`), tl.cast and tl.to_tensor."""
from __future__ import annotations

from .. import dtypes
from ..errors import NOT_YET, CompileTimeError, DTypeError, ShapeError
from .ir import OpKind, Type
from .semantic import cast, check_block_shape, const_value, constant, is_const, rule, splat, to_value


def _axis(b, axis, what):
    axis = const_value(b, axis, "the grid axis")
    if axis not in (0, 1, 2):      # Triton's words
        raise b.error(CompileTimeError, f"{what} axis must be 0, 1, or 2 but got {axis}")
    return axis


@rule("program_id")
def _program_id(b, axis=0):
    return b.emit(OpKind.PROGRAM_ID, [], Type(dtypes.int32), axis=_axis(b, axis, "program_id"))


@rule("num_programs")
def _num_programs(b, axis=0):
    return b.emit(OpKind.NUM_PROGRAMS, [], Type(dtypes.int32), axis=_axis(b, axis, "num_programs"))


def _shape_arg(b, shape):
    shape = const_value(b, shape, "a block shape")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(const_value(b, s, "a block dimension") for s in shape)
    check_block_shape(b, shape)
    return shape


@rule("arange")
def _arange(b, start, end):
    start = const_value(b, start, "tl.arange's start")
    end = const_value(b, end, "tl.arange's end")
    if not isinstance(start, int) or not isinstance(end, int):
        raise b.error(CompileTimeError, "tl.arange bounds must be integers")
    n = end - start
    if n <= 0 or n & (n - 1):
        raise b.error(CompileTimeError, f"tl.arange({start}, {end}) has {n} elements; the count must be a "
                      "power of two", hint="round up with transpiler.next_power_of_2 and mask the tail")
    check_block_shape(b, (n,))
    return b.emit(OpKind.ARANGE, [], Type(dtypes.int32, (n,)), start=start)


def _dtype_arg(b, dt, what="dtype"):
    dt = const_value(b, dt, what)
    if isinstance(dt, str):
        dt = dtypes.from_array_dtype(dt)
    if isinstance(dt, dtypes.block_type):   # `x.to(p.dtype.element_ty)` of a block pointer `p`, as in Triton
        dt = dt.scalar
    if not isinstance(dt, dtypes.dtype):
        raise b.error(DTypeError, f"{what} must be a tl dtype, not {dt!r}")
    return dt


@rule("full")
def _full(b, shape, value, dtype):
    shape = _shape_arg(b, shape)
    dt = _dtype_arg(b, dtype)
    v = cast(b, to_value(b, value, dt if is_const(value) else None), dt)
    if v.shape:
        raise b.error(ShapeError, "tl.full needs a scalar fill value")
    return splat(b, v, shape)


@rule("zeros")
def _zeros(b, shape, dtype):
    return _full(b, shape, 0, dtype)


@rule("zeros_like")
def _zeros_like(b, input):
    input = to_value(b, input)
    return _full(b, input.shape, 0, input.dtype) if input.shape else constant(b, 0, input.dtype)


@rule("full_like")
def _full_like(b, input, value, dtype=None):
    input = to_value(b, input)
    dt = _dtype_arg(b, dtype) if dtype is not None else input.dtype
    if not input.shape:
        return cast(b, to_value(b, value, dt), dt)
    return _full(b, input.shape, value, dt)


@rule("cast")
def _cast(b, input, dtype, fp_downcast_rounding=None, bitcast=False):
    dt = _dtype_arg(b, dtype)
    v = to_value(b, input, None)
    rounding = const_value(b, fp_downcast_rounding, "fp_downcast_rounding")
    if rounding not in (None, "rtne", "rtz"):
        raise b.error(CompileTimeError, f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    if rounding == "rtz" and dt.is_fp8():
        raise b.error(CompileTimeError, "fp_downcast_rounding='rtz' to fp8", refusal=NOT_YET)
    if rounding == "rtz":
        if not (v.dtype.is_floating() and dt.is_floating() and dt.bits < v.dtype.bits):
            raise b.error(CompileTimeError, "fp_downcast_rounding applies only to narrowing float conversions, "
                          f"not {v.dtype!r} to {dt!r}")
        return b.emit(OpKind.CAST, [v], v.type.with_dtype(dt), rounding="rtz")
    return cast(b, v, dt, bitcast=bool(const_value(b, bitcast, "bitcast")))


@rule("to_tensor")
def _to_tensor(b, x):
    return to_value(b, x)
