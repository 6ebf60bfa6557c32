"""Typing rules of the builtins that change a block's shape: broadcast, expand_dims, reshape / view, permute /
trans."""
from __future__ import annotations

import builtins

from ..errors import NOT_TRITON, ShapeError, UnsupportedSyntaxError
from .ir import OpKind, Type
from .semantic import (broadcast_pair, broadcast_to_shape, check_block_shape, const_value, expand_dims, rule,
                       to_value)


def _dims(b, shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(const_value(b, s, "a shape") for s in shape)


@rule("broadcast_to")
def _broadcast_to(b, input, *shape):
    shape = _dims(b, shape)
    return broadcast_to_shape(b, to_value(b, input), shape)


@rule("broadcast")
def _broadcast(b, input, other):
    return broadcast_pair(b, to_value(b, input), to_value(b, other))


@rule("expand_dims")
def _expand_dims(b, input, axis):
    v = to_value(b, input)
    axes = const_value(b, axis, "axis")
    axes = [axes] if isinstance(axes, int) else list(axes)
    rank = len(v.shape) + len(axes)
    # Axes are checked against the result's rank before they are normalized (as Triton does): -3 on a block
    # of rank 1 is an error, not axis 1; two axes naming one position are an error too.
    for a in axes:
        if not -rank <= a < rank:
            raise b.error(ShapeError, f"tl.expand_dims: invalid axis {a}. Expected {-rank} <= axis < {rank} (the "
                                      f"result's rank is {rank})")
    normalized = [a % rank for a in axes]
    if len(set(normalized)) != len(normalized):
        raise b.error(ShapeError, f"tl.expand_dims received duplicate axes, normalized axes = {normalized} "
                                  f"(from {axes})")
    for a in sorted(normalized):
        v = expand_dims(b, v, a)
    return v


@rule("reshape")
def _reshape(b, input, *shape, can_reorder=False):
    v = to_value(b, input)
    shape = _dims(b, shape)
    n = 1
    for s in shape:
        n *= s
    if n != v.type.numel:
        raise b.error(ShapeError, f"cannot reshape {list(v.shape)} ({v.type.numel} elements) to {list(shape)}")
    check_block_shape(b, shape)
    if shape == v.shape:
        return v
    return b.emit(OpKind.RESHAPE, [v], Type(v.dtype, shape))


@rule("view")
def _view(b, input, *shape):
    return _reshape(b, input, *shape)


@rule("permute")
def _permute(b, input, *dims):
    v = to_value(b, input)
    dims = _dims(b, dims)
    if sorted(dims) != list(builtins.range(len(v.shape))):
        raise b.error(ShapeError, f"permute order {list(dims)} is not a permutation of the {len(v.shape)} dims")
    if list(dims) == list(builtins.range(len(v.shape))):
        return v
    inner = getattr(v, "owner", None)
    if getattr(inner, "name", None) == OpKind.PERMUTE:
        # A permute of a permute is one permute of the first one's source (`tl.trans(tl.trans(b))` is `b`), as
        # Triton folds trans(trans(x)): the passes that look through one `tl.trans` to a dot's staged operand
        # then see the load itself.
        return _permute(b, inner.operands[0], *(inner.attrs["order"][d] for d in dims))
    return b.emit(OpKind.PERMUTE, [v], Type(v.dtype, tuple(v.shape[d] for d in dims)), order=tuple(dims))


@rule("trans")
def _trans(b, input, *dims):
    v = to_value(b, input)
    dims = _dims(b, dims)
    if not dims:
        if len(v.shape) != 2:
            raise b.error(ShapeError, f"tl.trans without dims needs a 2-D block, not shape {list(v.shape)}")
        dims = (1, 0)
    return _permute(b, v, *dims)


def index(b, value, items):
    """`x[items]` of a block, as Triton's `tensor.__getitem__`: item d is None (a size-1 axis inserted at d) or
    ':' (nothing: also past the block's rank, so `Z[None, None, :]` of a scalar is [1, 1]); a None past the rank
    is refused by expand_dims, any other index (a number, a bounded slice, `...`) as not Triton's language."""
    for dim, item in enumerate(items):
        if item is None:
            value = expand_dims(b, value, dim)
        elif not (isinstance(item, builtins.slice) and item == builtins.slice(None)):
            raise b.error(UnsupportedSyntaxError, f"unsupported tensor index {item!r}: blocks can be indexed only "
                          "with None (new axis) and ':' (keep axis), as in x[:, None]", refusal=NOT_TRITON)
    return value
