"""Pointer values and memory access: pointer arithmetic, masked `tl.load`/`tl.store` and bounds checks.

A kernel's array argument becomes a `Buffer` (the argument's memory as a flat host NumPy array of the
element type's storage) and a scalar `Pointer` to its element 0. A `Pointer` is a Tensor whose elements are
int64 element offsets into one buffer; `ptr + offsets` broadcasts like any arithmetic. Every active lane
(mask true or no mask) of a load or store must address `[0, len(buffer))`; otherwise the access raises
InterpreterError naming the offsets, the buffer size and the kernel line.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, InterpreterError, ShapeError
from . import numeric
from .location import error, program_text
from .shapes import fit_to_shape
from .tensor import Tensor, is_python_number, to_tensor, unwrap

_SHOWN_OFFSETS = 5  # how many offending offsets an out-of-bounds message lists


class Buffer:
    """The host memory behind one array argument, seen as a flat array of `element_ty` storage."""

    def __init__(self, name: str, element_ty: dt.dtype, values: np.ndarray):
        self.name = name
        self.element_ty = element_ty
        self.values = values  # 1-D, storage dtype of element_ty; written in place by stores
        self.written = False

    def __len__(self):
        return self.values.shape[0]


class Pointer(Tensor):
    """A block (or scalar) of pointers: int64 element offsets into `buffer`."""

    __slots__ = ("buffer",)

    def __init__(self, offsets, buffer: Buffer):
        super().__init__(np.asarray(offsets, dtype=np.int64), dt.pointer_type(buffer.element_ty))
        self.buffer = buffer

    @classmethod
    def to_start_of(cls, buffer: Buffer) -> "Pointer":
        return cls(np.int64(0), buffer)

    def _with_data(self, data) -> "Pointer":
        return Pointer(data, self.buffer)

    def offset_by(self, offsets: Tensor, negate: bool = False) -> "Pointer":
        """`self + offsets` (or `- offsets`); `offsets` is an integer Tensor already broadcast to our shape."""
        if not offsets.dtype.is_int():
            raise error(DTypeError, f"pointer arithmetic needs integer offsets, got {offsets.dtype!r}")
        delta = offsets.data.astype(np.int64)
        return Pointer(self.data - delta if negate else self.data + delta, self.buffer)

    def __str__(self):
        return f"<pointers into '{self.buffer.name}' at offsets {self.data}>"

    def __repr__(self):
        return f"pointer(buffer='{self.buffer.name}', offsets={self.data!r}, dtype={self.dtype!r})"


def same_buffer(a: Pointer, b: Pointer, what: str) -> Buffer:
    """The buffer two pointer blocks share; the interpreter cannot mix buffers in one pointer block."""
    if a.buffer is not b.buffer:
        raise error(InterpreterError, f"{what}: the interpreter cannot combine pointers into two different arrays "
                    f"('{a.buffer.name}' and '{b.buffer.name}') in one block")
    return a.buffer


def require_pointer(pointer, what: str) -> Pointer:
    pointer = unwrap(pointer)
    if not isinstance(pointer, Pointer):
        got = repr(pointer.dtype) if isinstance(pointer, Tensor) else type(pointer).__name__
        raise error(DTypeError, f"{what} needs a pointer (an array argument plus offsets), got {got}")
    return pointer


def _lane_mask(mask, shape: tuple, what: str):
    """The mask as a bool array of `shape`, or None when every lane is active."""
    mask = unwrap(mask)
    if mask is None:
        return None
    mask = to_tensor(mask, f"the mask of {what}")
    if mask.dtype is not dt.int1:
        raise error(DTypeError, f"the mask of {what} must be a boolean block (int1), got {mask.dtype!r}",
                    hint="compare to build it, e.g. mask=offs < n")
    if shape == () and mask.shape != ():
        raise error(ShapeError, f"{what}: a mask of shape {mask.shape} cannot go with a scalar pointer")
    return fit_to_shape(mask, shape, f"the mask of {what}").data


def _check_bounds(ptr: Pointer, active, what: str):
    size = len(ptr.buffer)
    bad = (ptr.data < 0) | (ptr.data >= size)
    if active is not None:
        bad = bad & active  # masked-off lanes may point anywhere
    if not bad.any():
        return
    lanes = np.argwhere(bad) if ptr.shape else np.zeros((1, 0), dtype=np.int64)
    shown = ", ".join(f"{int(ptr.data[tuple(lane)])} (lane {tuple(int(i) for i in lane)})"
                      for lane in lanes[:_SHOWN_OFFSETS])
    more = f" and {len(lanes) - _SHOWN_OFFSETS} more" if len(lanes) > _SHOWN_OFFSETS else ""
    raise error(InterpreterError,
                f"out-of-bounds {what} through '{ptr.buffer.name}'{program_text()}: offsets {shown}{more} "
                f"are outside the buffer of {size} elements (valid offsets 0..{size - 1})",
                hint="mask the access (mask=offs < n) or check the offset arithmetic")


def load(pointer, mask=None, other=None) -> Tensor:
    """Masked gather through `pointer`; masked-off lanes read `other` (0 when None)."""
    ptr = require_pointer(pointer, "tl.load")
    elem = ptr.buffer.element_ty
    active = _lane_mask(mask, ptr.shape, "tl.load")
    _check_bounds(ptr, active, "load")
    values = ptr.buffer.values
    if active is None:
        return Tensor(values[ptr.data], elem)
    fill = _fill_value(other, elem, ptr.shape)
    gathered = values[np.where(active, ptr.data, 0)] if len(values) else fill
    return Tensor(np.where(active, gathered, fill), elem)


def _fill_value(other, elem: dt.dtype, shape: tuple) -> np.ndarray:
    other = unwrap(other)
    if other is None:
        return np.zeros(shape, dtype=numeric.storage_dtype(elem))
    if isinstance(other, Pointer):
        raise error(DTypeError, "tl.load: `other` cannot be a pointer")
    value = to_tensor(other, "`other` of tl.load")
    value = fit_to_shape(value, shape, "`other` of tl.load")
    return numeric.cast(value.data, value.dtype, elem)


def store(pointer, value, mask=None) -> None:
    """Masked scatter of `value` (broadcast to the pointer's shape, cast to the element type)."""
    ptr = require_pointer(pointer, "tl.store")
    value = unwrap(value)
    if isinstance(value, Pointer):
        raise error(DTypeError, f"tl.store cannot store pointers into '{ptr.buffer.name}' "
                    f"({ptr.dtype.element_ty!r} elements)")
    if not isinstance(value, Tensor) and not is_python_number(value):
        raise error(DTypeError, f"tl.store needs a block or a number to store, got {type(value).__name__}")
    value = to_tensor(value, "the value of tl.store")
    if ptr.shape == () and value.shape != ():
        raise error(ShapeError, f"tl.store: a value of shape {value.shape} cannot be stored through a scalar pointer")
    value = fit_to_shape(value, ptr.shape, "the value of tl.store")
    elem = ptr.buffer.element_ty
    data = numeric.cast(value.data, value.dtype, elem)
    active = _lane_mask(mask, ptr.shape, "tl.store")
    _check_bounds(ptr, active, "store")
    offsets = ptr.data
    if active is not None:
        offsets, data = offsets[active], np.broadcast_to(data, ptr.shape)[active]
    # Fancy assignment writes lanes in order: for duplicate offsets the last lane wins.
    ptr.buffer.values[np.ravel(offsets)] = np.ravel(data)
    ptr.buffer.written = True
