"""Interpreter rules for Triton's standard-library functions (`transpiler/language/standard.py`).

`softmax`, `ravel` and `swizzle2d` call the builtins they are made of, as the compiler's typing rules do
(`parse/semantic_standard.py`), so both paths round alike. `flip`, `join`, `split`, `interleave` and `cat`
move elements with NumPy, independently of the compiler's select/xor-reduction constructions.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..language import core
from .location import error
from .math_rules import _broadcast_all
from .registry import rule
from .shapes import normalize_axis
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
    return _broadcast_all(x, y)


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
