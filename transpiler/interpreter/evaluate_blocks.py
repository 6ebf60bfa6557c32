"""The interpreter's evaluation of the IR ops that work on whole blocks: `reduce`, `scan` and `dot`.

As `evaluate.py` for the elementwise ops: the typing rules (`parse/semantic_reduce.py`, `semantic_scan.py`,
`semantic_dot.py`) made and typed the op, widened its operands (a sum of int8 is made of int32) and refused
what is not Triton's or not supported yet; this module only computes. Float sums, products and dot products
accumulate in float64 and round once to the op's type; integers wrap in their own width. max/min lose a NaN to
any number (the combine is `tl.maximum`); argmax/argmin take the first of equal values. A user combine function
(the op's region) is called on whole slices: a reduction combines neighbours level by level, a scan at distances
1, 2, 4, ... (Kogge-Stone), the left operand always the earlier elements, so any associative function gives the
right answer in log2(n) calls; a function that branches on its arguments (`if a < b: return a`) runs per element.
Its results must have the operands' types (`semantic_reduce.combine_result`, as for the compiler's region).
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..parse.semantic_reduce import combine_result
from ..parse.ir import OpKind
from ..numerics import storage as numeric
from .evaluate import materialized as _materialized
from .location import error


class Combine:
    """A user combine function, as the eager builder keeps it in the op's region (`EagerBuilder.inline_into_region`)."""

    __slots__ = ("fn", "dtypes", "what")

    def __init__(self, fn, dtypes, what):
        self.fn, self.dtypes, self.what = fn, list(dtypes), what

    def _outputs(self, result, shape):
        from .eager import BUILDER, from_ir, to_ir
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(outputs) != len(self.dtypes):
            raise error(ShapeError, f"{self.what} returned {len(outputs)} values, expected {len(self.dtypes)}")
        converted = []
        for out, dtype in zip(outputs, self.dtypes):
            data = from_ir(combine_result(BUILDER, to_ir(out), dtype, self.what)).data
            if data.shape not in ((), shape):     # the compiled combine region's values are scalars
                raise error(ShapeError, f"{self.what} must return scalars")
            converted.append(np.broadcast_to(data, shape))
        return converted

    def __call__(self, left, right):
        """The combination of two lists of same-shaped arrays (operands in order), as arrays."""
        from .tensor import BlockAsScalarError, Tensor
        shape = left[0].shape
        args = [Tensor(a, d) for a, d in zip(left + right, self.dtypes * 2)]
        try:
            return self._outputs(self.fn(*args), shape)
        except BlockAsScalarError:
            if not shape:
                raise
        columns = [[] for _ in self.dtypes]
        for index in np.ndindex(*shape):
            scalars = [Tensor(a.data[index], a.dtype) for a in args]
            for column, out in zip(columns, self._outputs(self.fn(*scalars), ())):
                column.append(out)
        return [np.array(column, dtype=numeric.storage_dtype(d)).reshape(shape)
                for column, d in zip(columns, self.dtypes)]


def _tree_reduce(parts, combine):
    """Reduce axis 0 of every part, combining neighbours (0, 1), (2, 3), ... level by level."""
    while parts[0].shape[0] > 1:
        length = parts[0].shape[0]
        even = length - length % 2
        combined = combine([p[0:even:2] for p in parts], [p[1:even:2] for p in parts])
        parts = [np.concatenate([c, p[length - 1:]]) if length % 2 else c for c, p in zip(combined, parts)]
    return [p[0] for p in parts]


def _kogge_stone(parts, combine):
    """Inclusive scan along axis 0 of every part: at distance d = 1, 2, 4, ..., element i takes
    combine(element i - d, element i)."""
    length, d = parts[0].shape[0], 1
    while d < length:
        combined = combine([p[:length - d] for p in parts], [p[d:] for p in parts])
        parts = [np.concatenate([p[:d], c]) for p, c in zip(parts, combined)]
        d *= 2
    return parts


def _sum(data, dtype, axis):
    if dtype.is_floating():
        return numeric.finish(np.sum(data.astype(np.float64), axis=axis), dtype)
    view = numeric.arithmetic_view(data, dtype)
    return numeric.finish_arithmetic(np.sum(view, axis=axis, dtype=view.dtype), dtype)


def _extreme_with_index(largest):
    def apply(arrays, dtypes, axis):
        values, indices = arrays
        key = values
        if dtypes[0].is_floating():
            key = np.where(np.isnan(key), -np.inf if largest else np.inf, key)
        chosen = np.expand_dims(np.argmax(key, axis=axis) if largest else np.argmin(key, axis=axis), axis)
        return [np.squeeze(np.take_along_axis(a, chosen, axis=axis), axis=axis) for a in (values, indices)]
    return apply


_REDUCE = {
    "add": lambda arrays, dtypes, axis: [_sum(arrays[0], dtypes[0], axis)],
    "max": lambda arrays, dtypes, axis: [numeric.finish(np.fmax.reduce(arrays[0], axis=axis), dtypes[0])],
    "min": lambda arrays, dtypes, axis: [numeric.finish(np.fmin.reduce(arrays[0], axis=axis), dtypes[0])],
    "xor": lambda arrays, dtypes, axis: [np.bitwise_xor.reduce(arrays[0], axis=axis)],
    "or": lambda arrays, dtypes, axis: [np.bitwise_or.reduce(arrays[0], axis=axis)],
    "argmax": _extreme_with_index(True),
    "argmin": _extreme_with_index(False),
}


def _reduce(attrs, result_types, operands, regions):
    axis, arrays, dtypes = attrs["axis"], [_materialized(v) for v in operands], [v.dtype for v in operands]
    if attrs["combine"] != "custom":
        return _REDUCE[attrs["combine"]](arrays, dtypes, axis)
    return _tree_reduce([np.moveaxis(a, axis, 0) for a in arrays], regions[0].combine)


def _accumulate(ufunc):
    def apply(data, dtype):
        if dtype.is_floating():
            return numeric.finish(ufunc.accumulate(data.astype(np.float64), axis=0), dtype)
        view = numeric.arithmetic_view(data, dtype)
        return numeric.finish_arithmetic(ufunc.accumulate(view, axis=0, dtype=view.dtype), dtype)
    return apply


_SCAN = {"add": _accumulate(np.add), "mul": _accumulate(np.multiply)}


def _scan(attrs, result_types, operands, regions):
    axis, reverse = attrs["axis"], attrs["reverse"]
    parts = [np.moveaxis(_materialized(v), axis, 0) for v in operands]
    parts = [p[::-1] for p in parts] if reverse else parts       # later elements become the left operands
    if attrs["combine"] == "custom":
        scanned = _kogge_stone(parts, regions[0].combine)
    else:
        scanned = [_SCAN[attrs["combine"]](p, v.dtype) for p, v in zip(parts, operands)]
    return [np.moveaxis(s[::-1] if reverse else s, 0, axis) for s in scanned]


def round_to_tf32(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to 10 mantissa bits (nearest, ties away from zero, as cvt.rna.tf32.f32); NaN and
    inf unchanged."""
    f32 = np.ascontiguousarray(values, dtype=np.float32)
    rounded = ((f32.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(f32), rounded, f32)


def _dot(attrs, result_type, operands):
    """`a @ w + acc` in the accumulator's type (`semantic_dot.py` decided it and the input precision: tf32
    inputs are rounded to tf32 first, as tensor cores do)."""
    a, w, acc = (_materialized(v) for v in operands)
    out = result_type.dtype
    if out.is_int():
        product = np.matmul(a.astype(np.int64), w.astype(np.int64)) + acc.astype(np.int64)
    else:
        if attrs["precision"] == "tf32":
            a, w = round_to_tf32(a), round_to_tf32(w)
        product = np.matmul(a.astype(np.float64), w.astype(np.float64)) + acc.astype(np.float64)
    return numeric.finish(product, out), None


def _gather(attrs, result_type, operands):
    """`src` picked along `axis` at `index` (semantic_standard._gather); an index outside the source gives 0."""
    src, index = (_materialized(v) for v in operands)
    axis = attrs["axis"]
    inside = (index >= 0) & (index < src.shape[axis])
    picked = np.take_along_axis(src, np.where(inside, index, 0).astype(np.int64), axis=axis)
    return np.where(inside, picked, np.zeros((), picked.dtype)), None


EVALUATE_MULTI = {OpKind.REDUCE: _reduce, OpKind.SCAN: _scan}
EVALUATE_BLOCKS = {OpKind.DOT: _dot, OpKind.GATHER: _gather}
