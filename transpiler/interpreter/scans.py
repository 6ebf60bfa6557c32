"""Interpreter rules for the scans: cumsum, cumprod and `tl.associative_scan` with a user combine function.

Result types follow Triton's standard library: bf16 scans as fp32, and `cumsum` widens integers narrower
than 32 bits to (u)int32 (booleans to uint32) unless `dtype` says otherwise. Float cumsum and cumprod
accumulate in float64 and round each element once (the compiled path accumulates 16-bit floats in fp32,
in a parallel order); integers wrap in their own width. A reverse scan is the scan of the flipped block,
flipped back, so the later elements are the left operands of the combine function.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError
from . import numeric
from .location import error
from .reductions import call_combine
from .registry import rule
from .shapes import normalize_axis
from .tensor import Tensor, cast_tensor, computable, to_tensor, unwrap


def _operand(input, what: str) -> Tensor:
    x = computable(to_tensor(input, f"the input of {what}"), what)
    if not x.shape:
        raise error(ShapeError, f"{what} cannot scan a scalar")
    if x.dtype.is_ptr():
        raise error(DTypeError, f"{what} cannot scan pointers")
    return cast_tensor(x, dt.float32) if x.dtype is dt.bfloat16 else x


def _along(data: np.ndarray, axis: int, reverse, fn) -> np.ndarray:
    """`fn` applied along axis 0 of `data` moved so `axis` comes first, from the end when `reverse`."""
    moved = np.moveaxis(data, axis, 0)
    if unwrap(reverse):
        return np.moveaxis(fn(moved[::-1])[::-1], 0, axis)
    return np.moveaxis(fn(moved), 0, axis)


def _accumulate(x: Tensor, axis, reverse, ufunc, what: str) -> Tensor:
    axis = normalize_axis(axis, len(x.shape), what)
    if x.dtype.is_floating():
        values = _along(x.data.astype(np.float64), axis, reverse, lambda d: ufunc.accumulate(d, axis=0))
        return Tensor(numeric.finish(values, x.dtype), x.dtype)
    view = numeric.arithmetic_view(x.data, x.dtype)   # integers wrap in their own width
    values = _along(view, axis, reverse, lambda d: ufunc.accumulate(d, axis=0, dtype=view.dtype))
    return Tensor(numeric.finish_arithmetic(values, x.dtype), x.dtype)


@rule("cumsum")
def cumsum(input, axis=0, reverse=False, dtype=None):
    x = _operand(input, "tl.cumsum")
    out = unwrap(dtype)
    if out is not None and (not isinstance(out, dt.dtype) or out.is_ptr()):
        raise error(DTypeError, f"tl.cumsum: dtype must be an element type, got {out!r}")
    if out is None and x.dtype.is_int() and x.dtype.bits < 32:
        out = dt.int32 if x.dtype.is_int_signed() else dt.uint32
    return _accumulate(cast_tensor(x, out or x.dtype), axis, reverse, np.add, "tl.cumsum")


@rule("cumprod")
def cumprod(input, axis=0, reverse=False):
    return _accumulate(_operand(input, "tl.cumprod"), axis, reverse, np.multiply, "tl.cumprod")


def _kogge_stone(parts: list[Tensor], combine_fn, what: str) -> list[Tensor]:
    """Inclusive scan along axis 0 of every part: at distance d = 1, 2, 4, ..., element i takes
    combine(element i - d, element i). Left operands are always the earlier elements, so this is right for
    any associative combine function, in log2(n) calls on whole slices."""
    length = parts[0].shape[0]
    d = 1
    while d < length:
        left = [p._with_data(p.data[:length - d]) for p in parts]
        right = [p._with_data(p.data[d:]) for p in parts]
        combined = call_combine(combine_fn, left + right, what)
        parts = [p._with_data(np.concatenate([p.data[:d], c.data])) for p, c in zip(parts, combined)]
        d *= 2
    return parts


@rule("associative_scan")
def associative_scan(input, axis, combine_fn, reverse=False):
    raw = unwrap(input)
    single = not isinstance(raw, (tuple, list))
    tensors = [to_tensor(t, "an input of tl.associative_scan") for t in ([raw] if single else raw)]
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise error(ShapeError, f"tl.associative_scan: all inputs must have one shape, got {sorted(shapes)}")
    if not tensors[0].shape:
        raise error(ShapeError, "tl.associative_scan cannot scan a scalar")
    axis = normalize_axis(axis, len(tensors[0].shape), "tl.associative_scan")
    flip = bool(unwrap(reverse))
    parts = []
    for t in tensors:
        moved = np.moveaxis(t.data, axis, 0)
        parts.append(t._with_data(moved[::-1] if flip else moved))
    scanned = _kogge_stone(parts, unwrap(combine_fn), "tl.associative_scan")
    out = [s._with_data(np.moveaxis(s.data[::-1] if flip else s.data, 0, axis)) for s in scanned]
    return out[0] if single else tuple(out)
