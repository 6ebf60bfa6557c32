"""Interpreter rules for reductions: sum, max, min, argmax, argmin, xor_sum, reduce_or, and `tl.reduce` with a user
combine function.

Result types follow Triton's standard library: `sum` widens integers narrower than 32 bits to (u)int32;
`max`/`min` without indices reduce bf16, fp16 and narrow integers as fp32/int32 (so that is the result
type), with indices only bf16 is widened (to fp32). Float sums accumulate in float64 and round once; NaN
loses in max/min (fmax semantics, since the combine is `tl.maximum`). `axis=None` reduces every axis.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError
from . import numeric
from .location import error
from .registry import rule
from .shapes import fit_to_shape, normalize_axis
from .tensor import BlockAsScalarError, Tensor, cast_tensor, computable, to_tensor, unwrap


class _Reduction:
    """The data to reduce along `axis` (flattened when the user's axis is None) and how to shape results."""

    def __init__(self, input, axis, keep_dims, what: str):
        self.tensor = to_tensor(input, f"the input of {what}")
        if self.tensor.dtype.is_ptr():
            raise error(DTypeError, f"{what} cannot reduce pointers")
        self.rank = len(self.tensor.shape)
        self.all_axes = unwrap(axis) is None
        if self.all_axes:
            self.data, self.axis = self.tensor.data.reshape(-1), 0
        else:
            self.data, self.axis = self.tensor.data, normalize_axis(axis, self.rank, what)
        self.keep_dims = bool(unwrap(keep_dims))

    def shaped(self, values: np.ndarray, dtype: dt.dtype) -> Tensor:
        """A reduced array (the axis removed) as a Tensor, with size-1 axes put back under keep_dims."""
        values = np.asarray(values)
        if self.keep_dims:
            values = values.reshape((1,) * self.rank) if self.all_axes else np.expand_dims(values, self.axis)
        return Tensor(values, dtype)


def _sum_type(in_dtype: dt.dtype, requested) -> dt.dtype:
    if requested is not None:
        if not isinstance(requested, dt.dtype) or requested.is_ptr():
            raise error(DTypeError, f"tl.sum: dtype must be an element type, got {requested!r}")
        return requested
    if in_dtype.is_int() and in_dtype.bits < 32:
        return dt.int32 if in_dtype.is_int_signed() else dt.uint32
    return in_dtype


@rule("sum")
def sum_(input, axis=None, keep_dims=False, dtype=None):
    x = computable(to_tensor(input, "the input of tl.sum"), "tl.sum")
    if x.dtype.is_ptr():
        raise error(DTypeError, "tl.sum cannot reduce pointers")
    out = _sum_type(x.dtype, unwrap(dtype))
    red = _Reduction(cast_tensor(x, out), axis, keep_dims, "tl.sum")
    if out.is_floating():
        # Accumulate wide and round once, as the compiled path does.
        values = numeric.finish(np.sum(red.data.astype(np.float64), axis=red.axis), out)
    else:
        view = numeric.arithmetic_view(red.data, out)  # integers wrap in their own width
        values = numeric.finish_arithmetic(np.sum(view, axis=red.axis, dtype=view.dtype), out)
    return red.shaped(values, out)


def _widen_for_minmax(x: Tensor) -> Tensor:
    """Triton reduces narrow types as fp32/int32 when no indices are requested."""
    if x.dtype.bits < 32:
        return cast_tensor(x, dt.float32 if x.dtype.is_floating() else dt.int32)
    return x


def _extreme(input, axis, return_indices, keep_dims, largest: bool, what: str):
    x = computable(to_tensor(input, f"the input of {what}"), what)
    if x.dtype is dt.bfloat16:
        x = cast_tensor(x, dt.float32)
    if unwrap(return_indices):
        return _extreme_with_index(x, axis, keep_dims, largest, what)
    x = _widen_for_minmax(x)
    red = _Reduction(x, axis, keep_dims, what)
    reducer = np.fmax if largest else np.fmin  # a NaN loses to any number
    return red.shaped(numeric.finish(reducer.reduce(red.data, axis=red.axis), x.dtype), x.dtype)


def _extreme_with_index(x: Tensor, axis, keep_dims, largest: bool, what: str):
    red = _Reduction(x, axis, keep_dims, what)
    key = red.data
    if x.dtype.is_floating():
        # NaN loses, as in the value-only reduction.
        key = np.where(np.isnan(key), -np.inf if largest else np.inf, key)
    # np.argmax/argmin return the first occurrence: ties go to the smallest index.
    index = np.argmax(key, axis=red.axis) if largest else np.argmin(key, axis=red.axis)
    values = np.take_along_axis(red.data, np.expand_dims(index, red.axis), axis=red.axis)
    values = np.squeeze(values, axis=red.axis)
    return red.shaped(values, x.dtype), red.shaped(index.astype(np.int32), dt.int32)


@rule("max")
def max_(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _extreme(input, axis, return_indices, keep_dims, largest=True, what="tl.max")


@rule("min")
def min_(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _extreme(input, axis, return_indices, keep_dims, largest=False, what="tl.min")


@rule("argmax")
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _extreme(input, axis, True, keep_dims, largest=True, what="tl.argmax")[1]


@rule("argmin")
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _extreme(input, axis, True, keep_dims, largest=False, what="tl.argmin")[1]


@rule("xor_sum")
def xor_sum(input, axis=None, keep_dims=False):
    red = _Reduction(input, axis, keep_dims, "tl.xor_sum")
    dtype = computable(red.tensor, "tl.xor_sum").dtype
    if not dtype.is_int():
        raise error(DTypeError, f"tl.xor_sum needs integers, got {dtype!r}")
    return red.shaped(np.bitwise_xor.reduce(red.data, axis=red.axis), dtype)


@rule("reduce_or")
def reduce_or(input, axis, keep_dims=False):
    red = _Reduction(input, axis, keep_dims, "tl.reduce_or")
    dtype = computable(red.tensor, "tl.reduce_or").dtype
    if not dtype.is_int():
        raise error(DTypeError, f"tl.reduce_or needs integers, got {dtype!r}")
    return red.shaped(np.bitwise_or.reduce(red.data, axis=red.axis), dtype)


# ---- tl.reduce with a user combine function ----------------------------------------------------------------


def _combine_outputs(result, like: list[Tensor], what: str) -> list[Tensor]:
    """The combine function's results as Tensors matching the inputs' dtypes and slice shape."""
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(outputs) != len(like):
        raise error(ShapeError, f"{what}: combine_fn returned {len(outputs)} values for {len(like)} inputs")
    checked = []
    for out, ref in zip(outputs, like):
        out = to_tensor(out, f"a result of the combine_fn of {what}")
        if out.dtype is not ref.dtype:
            raise error(DTypeError, f"{what}: combine_fn returned {out.dtype!r} for an input of {ref.dtype!r}; "
                        "it must return the input types")
        checked.append(fit_to_shape(out, ref.shape, f"a result of the combine_fn of {what}"))
    return checked


def call_combine(combine_fn, args: list[Tensor], what: str) -> list[Tensor]:
    """`combine_fn(*args)` on whole slices (one call for every element pair), or, when the function needs
    scalars (an `if a <= b: return a` on its arguments, as the compiled path's combine regions allow), once
    per element pair, the results stacked back into slices."""
    like = args[:len(args) // 2]
    try:
        return _combine_outputs(combine_fn(*args), like, what)
    except BlockAsScalarError:
        if not like[0].shape:
            raise
    shape = like[0].shape
    columns = [[] for _ in like]
    for index in np.ndindex(*shape):
        scalars = [a._with_data(a.data[index]) for a in args]
        for column, out in zip(columns, _combine_outputs(combine_fn(*scalars), scalars[:len(like)], what)):
            column.append(out.data)
    return [ref._with_data(np.array(column, dtype=ref.data.dtype).reshape(shape))
            for ref, column in zip(like, columns)]


def _tree_reduce(parts: list[Tensor], combine_fn, what: str) -> list[Tensor]:
    """Reduce axis 0 of every part by combining neighbours (0,1), (2,3), ... level by level.

    Operands keep their order (the left one has the lower index), so this is right for any associative
    combine function, and it calls combine_fn only log2(n) times, each on whole slices.
    """
    while parts[0].shape[0] > 1:
        length = parts[0].shape[0]
        carry = [p._with_data(p.data[length - 1:]) for p in parts] if length % 2 else None
        even = length - length % 2
        left = [p._with_data(p.data[0:even:2]) for p in parts]
        right = [p._with_data(p.data[1:even:2]) for p in parts]
        parts = call_combine(combine_fn, left + right, what)
        if carry:
            parts = [p._with_data(np.concatenate([p.data, c.data])) for p, c in zip(parts, carry)]
    return [p._with_data(p.data[0]) for p in parts]


@rule("reduce")
def reduce(input, axis, combine_fn, keep_dims=False):
    raw = unwrap(input)
    single = not isinstance(raw, (tuple, list))
    reductions = [_Reduction(t, axis, keep_dims, "tl.reduce") for t in ([raw] if single else raw)]
    shapes = {r.tensor.shape for r in reductions}
    if len(shapes) > 1:
        raise error(ShapeError, f"tl.reduce: all inputs must have one shape, got {sorted(shapes)}")
    parts = [Tensor(np.moveaxis(r.data, r.axis, 0), r.tensor.dtype) for r in reductions]
    results = _tree_reduce(parts, unwrap(combine_fn), "tl.reduce")
    shaped = [r.shaped(t.data, t.dtype) for r, t in zip(reductions, results)]
    return shaped[0] if single else tuple(shaped)
