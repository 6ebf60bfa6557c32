"""Interpreter rules for Triton's standard-library functions (`transpiler/language/standard.py`).

`softmax`, `ravel` and `swizzle2d` call the builtins they are made of, as the compiler's typing rules do
(`parse/semantic_standard.py`), so both paths round alike; so do `sort` and `topk`, through the one bitonic
network of `transpiler/bitonic.py` (ties and NaNs end where the compiled network, and Triton's, put them).
`flip`, `join`, `split`, `interleave`, `cat`, `histogram` and `gather` move or count elements with NumPy,
independently of the compiler's select/xor-reduction constructions.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..bitonic import merge_network, sort_network
from ..errors import DTypeError, ShapeError
from ..language import core
from .location import error
from .registry import rule
from .shapes import broadcast_pair, normalize_axis
from .tensor import Tensor, to_tensor, unwrap

_tl = core.BUILTINS


@rule("softmax")
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    dim = 0 if unwrap(dim) is None else dim
    z = x - _tl["max"](x, dim, keep_dims=keep_dims)
    num = _tl["exp"](z)
    return _tl["fdiv"](num, _tl["sum"](num, dim, keep_dims=keep_dims), ieee_rounding)


@rule("ravel")
def ravel(x, can_reorder=False):
    t = to_tensor(x, "the input of tl.ravel")
    return _tl["reshape"](t, int(np.prod(t.shape, dtype=np.int64)), can_reorder=can_reorder)


@rule("swizzle2d")
def swizzle2d(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    size_gj = size_g * size_j
    off_i = ij // size_gj * size_g
    rows = size_i - off_i
    group_rows = _tl["minimum"](rows, size_g) if isinstance(rows, Tensor) or isinstance(size_g, Tensor) \
        else min(rows, size_g)
    ij = ij % size_gj
    return off_i + ij % group_rows, ij // group_rows


@rule("flip")
def flip(x, dim=None):
    t = to_tensor(x, "the input of tl.flip")
    axis = len(t.shape) - 1 if unwrap(dim) is None else normalize_axis(unwrap(dim), len(t.shape), "tl.flip")
    n = t.shape[axis]
    if n & (n - 1):
        raise error(ShapeError, f"tl.flip needs a power-of-two dimension, got {n}")
    return t._with_data(np.flip(t.data, axis))


def _pair(a, b, what):
    x, y = (to_tensor(v, f"an input of {what}") for v in (a, b))
    if x.dtype is not y.dtype:
        raise error(ShapeError, f"{what} needs two blocks of one dtype, got {x.dtype!r} and {y.dtype!r}")
    return broadcast_pair(x, y)


@rule("join")
def join(a, b):
    x, y = _pair(a, b, "tl.join")
    return x._with_data(np.stack([x.data, y.data], axis=-1))


@rule("split")
def split(a):
    t = to_tensor(a, "the input of tl.split")
    if not t.shape or t.shape[-1] != 2:
        raise error(ShapeError, f"tl.split needs a last dimension of size 2, got shape {t.shape}")
    return t._with_data(t.data[..., 0]), t._with_data(t.data[..., 1])


@rule("interleave")
def interleave(a, b):
    x, y = _pair(a, b, "tl.interleave")
    joined = np.stack([x.data, y.data], axis=-1)
    return x._with_data(joined.reshape(joined.shape[:-2] + (-1,)) if x.shape else joined)


@rule("cat")
def cat(input, other, can_reorder=False):
    x, y = (to_tensor(v, "an input of tl.cat") for v in (input, other))
    if len(x.shape) != 1 or x.shape != y.shape or x.dtype is not y.dtype:
        raise error(ShapeError, f"tl.cat needs two 1-D blocks of one shape and dtype, got {x.shape} and {y.shape}")
    return x._with_data(np.concatenate([x.data, y.data]))


class _Ops:
    """The block operations `bitonic.sort_network` needs, as the interpreter's builtins."""

    @staticmethod
    def shape(x):
        return to_tensor(x, "the input of tl.sort").shape

    @staticmethod
    def fail(message):
        raise error(ShapeError, message)

    @staticmethod
    def reshape(x, shape):
        return _tl["reshape"](x, *shape)

    @staticmethod
    def arange(n):
        return _tl["arange"](0, n)

    @staticmethod
    def to_bits(x):
        if x.dtype is dt.int1:
            return _tl["cast"](x, dt.int8)
        return x if x.dtype.is_int() else _tl["cast"](x, _BITS[x.dtype.bits], bitcast=True)

    @staticmethod
    def from_bits(bits, like):
        if like.dtype is dt.int1:
            return _tl["cast"](bits, dt.int1)
        return bits if like.dtype.is_int() else _tl["cast"](bits, like.dtype, bitcast=True)

    xor = staticmethod(lambda x, y: x ^ y)
    xor_sum = staticmethod(lambda x, axis: _tl["xor_sum"](x, axis, keep_dims=True))
    gt = staticmethod(lambda x, y: x > y)
    ne = staticmethod(lambda x, y: x != y)
    where = staticmethod(lambda c, x, y: _tl["where"](c, x, y))
    max = staticmethod(lambda x, axis: _tl["max"](x, axis))
    min = staticmethod(lambda x, axis: _tl["min"](x, axis, propagate_nan=True))


_BITS = {8: dt.int8, 16: dt.int16, 32: dt.int32, 64: dt.int64}


@rule("sort")
def sort(x, dim=None, descending=False):
    return sort_network(_Ops, to_tensor(x, "the input of tl.sort"), dim=unwrap(dim),
                        descending=bool(unwrap(descending)))


@rule("topk")
def topk(x, k, dim=None):
    return sort_network(_Ops, to_tensor(x, "the input of tl.topk"), k=unwrap(k), dim=unwrap(dim),
                        descending=True)


@rule("bitonic_merge")
def bitonic_merge(x, dim=None, descending=0):
    return merge_network(_Ops, to_tensor(x, "the input of tl.bitonic_merge"), dim=unwrap(dim),
                         descending=bool(unwrap(descending)))


@rule("histogram")
def histogram(input, num_bins, mask=None):
    t = to_tensor(input, "the input of tl.histogram")
    if len(t.shape) != 1 or not t.dtype.is_int() or t.dtype is dt.int1:
        raise error(DTypeError, f"tl.histogram needs a 1-D block of integers, got {t.dtype!r} {t.shape}")
    num_bins = int(unwrap(num_bins))
    values = t.data.astype(np.int64)
    keep = (values >= 0) & (values < num_bins)
    if mask is not None:
        keep &= np.broadcast_to(to_tensor(mask, "the mask of tl.histogram").data.astype(bool), values.shape)
    return Tensor(np.bincount(values[keep], minlength=num_bins).astype(np.int32), dt.int32)


@rule("gather")
def gather(src, index, axis):
    s, i = to_tensor(src, "the source of tl.gather"), to_tensor(index, "the index of tl.gather")
    if not i.dtype.is_int() or i.dtype is dt.int1:
        raise error(DTypeError, f"tl.gather's index must be integers, got {i.dtype!r}")
    if len(i.shape) != len(s.shape) or not s.shape:
        raise error(ShapeError, f"tl.gather needs a source and an index block of one rank, got {s.shape} and {i.shape}")
    axis = normalize_axis(unwrap(axis), len(s.shape), "tl.gather")
    for d, (a, c) in enumerate(zip(s.shape, i.shape)):
        if d != axis and a != c:
            raise error(ShapeError, f"tl.gather: the index's dimension {d} ({c}) must equal the source's ({a})")
    idx = i.data.astype(np.int64)
    inside = (idx >= 0) & (idx < s.shape[axis])
    picked = np.take_along_axis(s.data, np.where(inside, idx, 0), axis)
    return s._with_data(np.where(inside, picked, np.zeros((), s.data.dtype)))   # outside: 0, as compiled
