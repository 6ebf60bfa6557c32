"""Typing rules of the reductions: `sum`, `max`, `min`, `argmax`, `argmin`, `xor_sum`, `reduce_or` and `tl.reduce`.

Every reduction becomes one `reduce` op over one or more same-shaped operands along one axis. Built-in
combiners are named by `combine` (`add`, `max`, `min`, `xor`, `argmax`, `argmin`) so the lowering can use
fast helpers; a user `combine_fn` becomes the op's region (its scalar arguments are the two partial results).
Result dtypes follow Triton: narrow integers sum as 32-bit (booleans as uint32); bf16 reduces as fp32; `max`/`min` without indices widen inputs
narrower than 32 bits to int32 / float32.
"""
from __future__ import annotations

from .. import dtypes
from ..dtypes import Kind
from ..errors import NOT_YET, DTypeError, ShapeError
from .ir import OpKind, Region, Type, Value
from .semantic import RULES, cast, const_value, expand_dims, is_const, rule, splat, to_value
from .semantic_shapes import _reshape


def normalize_axis(b, axis, rank):
    axis = const_value(b, axis, "the reduction axis")
    if not isinstance(axis, int):
        raise b.error(ShapeError, f"the reduction axis must be an int or None, not {axis!r}")
    if not -rank <= axis < rank:
        raise b.error(ShapeError, f"reduction axis {axis} is out of range for a block of rank {rank}",
                      hint=f"use an axis in [{-rank}, {rank - 1}]")
    return axis % rank


def combine_result(b, result, dtype, what):
    """One result of a combine function (`tl.reduce`, `tl.associative_scan`): of the operand's type, as
    Triton's compiler requires (it refuses a combine of int32 values that returns fp32); a number takes it."""
    v = to_value(b, result, dtype)
    if v.dtype is not dtype:
        raise b.error(DTypeError, f"{what} returned {v.dtype!r} for an operand of {dtype!r}: it must return its "
                      "operands' types (Triton's rule)", hint=f"convert the result: .to({dtype!r})")
    return v


def reduce_values(b, values, axis, combine, keep_dims=False, region=None, result_dtypes=None):
    """Emit one `reduce` over `values` (a list of same-shaped blocks); returns the list of results."""
    values = [to_value(b, v) for v in values]
    if not values[0].shape:
        raise b.error(ShapeError, "cannot reduce a scalar", hint="reductions take blocks")
    if any(v.dtype.is_fp8() for v in values):
        raise b.error(DTypeError, "reducing fp8 values", hint="convert them first, e.g. x.to(tl.float32)",
                      refusal=NOT_YET)
    keep_dims = bool(const_value(b, keep_dims, "keep_dims"))
    if axis is None:
        rank = len(values[0].shape)         # keep_dims gives back one size-1 axis per axis of the input
        flat = (values[0].type.numel,)
        values = [_reshape(b, v, *flat) for v in values]
        results = reduce_values(b, values, 0, combine, False, region, result_dtypes)
        if keep_dims:
            results = [_expand_all(b, r, rank) for r in results]
        return results
    rank = len(values[0].shape)
    axis = normalize_axis(b, axis, rank)
    shape = values[0].shape[:axis] + values[0].shape[axis + 1:]
    result_dtypes = result_dtypes or [v.dtype for v in values]
    op = b.emit_multi(OpKind.REDUCE, values, [Type(dt, shape) for dt in result_dtypes], axis=axis, combine=combine,
                      regions=[region] if region else [])
    results = list(op.results)
    if keep_dims:
        results = [expand_dims(b, r, axis) for r in results]
    return results


def _expand_all(b, v, rank):
    for _ in range(rank):
        v = expand_dims(b, v, 0)
    return v


@rule("sum")
def _sum(b, input, axis=None, keep_dims=False, dtype=None):
    v = to_value(b, input)
    dt = const_value(b, dtype, "dtype")
    if dt is None:
        if v.dtype.is_int() and v.dtype.bits < 32:
            # Triton counts int1 as unsigned: a sum of booleans is uint32.
            dt = dtypes.int32 if v.dtype.signed else dtypes.uint32
    if dt is not None:
        v = cast(b, v, dt)
    if v.dtype.is_ptr():
        raise b.error(DTypeError, "cannot sum pointers")
    # A sum kept in int1 (`dtype=tl.int1`) wraps modulo 2 as Triton's i1 addition does: it is the parity (xor);
    # C++ `bool + bool` would saturate to true.
    combine = "xor" if v.dtype is dtypes.int1 else "add"
    return _single(reduce_values(b, [v], axis, combine, keep_dims))


@rule("xor_sum")
def _xor_sum(b, input, axis=None, keep_dims=False):
    v = to_value(b, input)
    if not v.dtype.is_int():
        raise b.error(DTypeError, f"xor_sum needs integers, not {v.dtype!r}")
    return _single(reduce_values(b, [v], axis, "xor", keep_dims))


@rule("reduce_or")
def _reduce_or(b, input, axis, keep_dims=False):
    v = to_value(b, input)
    if not v.dtype.is_int():
        raise b.error(DTypeError, f"tl.reduce_or needs integers, not {v.dtype!r}")
    return _single(reduce_values(b, [v], axis, "or", keep_dims))


def _single(results):
    (r,) = results
    return r


def _index_block(b, v, axis):
    """int32 indices along `axis`, broadcast to v's shape."""
    rank = len(v.shape)
    axis = normalize_axis(b, axis, rank)
    idx = b.emit(OpKind.ARANGE, [], Type(dtypes.int32, (v.shape[axis],)), start=0)
    for d in range(rank):
        if d != axis:
            idx = expand_dims(b, idx, d)
    if idx.shape != v.shape:
        idx = b.emit(OpKind.BROADCAST, [idx], Type(dtypes.int32, v.shape))
    return idx


def _min_max(which):
    def apply(b, input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
        v = to_value(b, input)
        if v.dtype.is_ptr():
            raise b.error(DTypeError, f"cannot take the {which} of pointers")
        if v.dtype.is_fp8():
            raise b.error(DTypeError, "reducing fp8 values", hint="convert them first, e.g. x.to(tl.float32)",
                          refusal=NOT_YET)
        if v.dtype is dtypes.bfloat16:
            v = cast(b, v, dtypes.float32)      # Triton reduces bf16 as fp32, with or without indices
        if const_value(b, return_indices, "return_indices"):
            if axis is None:
                raise b.error(ShapeError, f"tl.{which} with return_indices needs an axis")
            idx = _index_block(b, v, axis)
            val, index = reduce_values(b, [v, idx], axis, f"arg{which}", keep_dims)
            return val, index
        if v.dtype.bits < 32:
            v = cast(b, v, dtypes.float32 if v.dtype.kind is Kind.FLOAT else dtypes.int32)
        return _single(reduce_values(b, [v], axis, which, keep_dims))
    return apply


RULES["max"] = _min_max("max")
RULES["min"] = _min_max("min")


def _arg(which):
    def apply(b, input, axis, tie_break_left=True, keep_dims=False):
        _, index = RULES[which](b, input, axis, True, tie_break_left, keep_dims)
        return index
    return apply


RULES["argmax"] = _arg("max")
RULES["argmin"] = _arg("min")


@rule("reduce")
def _reduce(b, input, axis, combine_fn, keep_dims=False):
    inputs = list(input) if isinstance(input, (tuple, list)) else [input]
    inputs = [to_value(b, v) for v in inputs]
    shape = inputs[0].shape
    for v in inputs[1:]:
        if v.shape != shape:
            raise b.error(ShapeError, f"tl.reduce operands must have one shape, got {list(shape)} and "
                          f"{list(v.shape)}")
    region = Region(args=[Value(Type(v.dtype), name=f"{side}{i}") for side in ("a", "b")
                          for i, v in enumerate(inputs)])
    b.inline_into_region(combine_fn, region, "tl.reduce's combine_fn", [v.dtype for v in inputs])
    dts = [v.dtype for v in inputs]
    out = reduce_values(b, inputs, axis, "custom", keep_dims, region=region, result_dtypes=dts)
    return out[0] if not isinstance(input, (tuple, list)) else tuple(out)


__all__ = ["reduce_values", "normalize_axis", "splat", "is_const"]
