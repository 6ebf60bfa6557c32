"""Shape rules shared by every rule: broadcasting, block-shape validation and axis normalisation.

Triton has two broadcasts: `broadcast_impl_value` (two operands meet, NumPy rules: missing leading axes and
size-1 axes stretch) and `broadcast_impl_shape` (a value is fitted to a given shape: same rank, size-1 axes
stretch; a scalar is splatted). Both are here, raising ShapeError with both shapes in the message.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileTimeError, ShapeError
from .location import error

MAX_NUMEL = 1 << 20  # Triton's TRITON_MAX_TENSOR_NUMEL


def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise error(ShapeError, f"incompatible shapes {a} and {b}: they do not broadcast") from None


def broadcast_pair(a, b):
    """Broadcast two Tensors against each other (Triton's `broadcast_impl_value`)."""
    if a.shape == b.shape:
        return a, b
    shape = broadcast_shapes(a.shape, b.shape)
    return a._with_data(np.broadcast_to(a.data, shape)), b._with_data(np.broadcast_to(b.data, shape))


def fit_to_shape(t, shape: tuple, what: str = "value"):
    """Broadcast Tensor `t` to exactly `shape` (Triton's `broadcast_impl_shape`: a scalar splats, a block
    must have the same rank and may only stretch size-1 axes)."""
    shape = tuple(shape)
    if t.shape == shape:
        return t
    if t.shape != ():
        if len(t.shape) != len(shape):
            raise error(ShapeError, f"cannot broadcast {what} of shape {t.shape} to shape {shape}: rank mismatch")
        for size, target in zip(t.shape, shape):
            if size != target and size != 1:
                raise error(ShapeError, f"cannot broadcast {what} of shape {t.shape} to shape {shape}")
    return t._with_data(np.broadcast_to(t.data, shape))


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def shape_argument(shape, what: str) -> tuple:
    """A shape given as `(a, b)`, `[a, b]`, `a, b` (varargs) or a single int, as a tuple of ints."""
    from .tensor import Tensor, constexpr_value, unwrap  # local: tensor imports this module
    shape = unwrap(shape)
    if isinstance(shape, tuple) and len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        shape = unwrap(shape[0])
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    dims = []
    for d in shape:
        d = constexpr_value(d)
        if isinstance(d, Tensor) or not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise error(CompileTimeError, f"{what}: shape entries must be constexpr integers, got {d!r}")
        dims.append(int(d))
    return tuple(dims)


def validate_block_shape(shape: tuple, what: str) -> tuple:
    """Every dimension a power of two and at most 2**20 elements in all (Triton's `validate_block_shape`)."""
    numel = 1
    for i, d in enumerate(shape):
        if not _is_power_of_two(d):
            raise error(CompileTimeError, f"{what}: shape element {i} of {shape} must be a power of 2, got {d}")
        numel *= d
    if numel > MAX_NUMEL:
        raise error(CompileTimeError, f"{what}: a block of {numel} elements exceeds the maximum of {MAX_NUMEL}")
    return shape


def normalize_axis(axis, ndim: int, what: str) -> int:
    """A non-negative axis for a block of rank `ndim`; ShapeError naming the axis and the rank if out of range."""
    from .tensor import constexpr_value
    axis = constexpr_value(axis)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise error(CompileTimeError, f"{what}: axis must be a constexpr integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise error(ShapeError, f"{what}: axis {axis} is out of range for a block of rank {ndim} "
                    f"(expected {-ndim} <= axis < {ndim})")
    return int(axis) % ndim
