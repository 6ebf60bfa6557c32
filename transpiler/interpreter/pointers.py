"""Pointer values and memory access: pointer arithmetic, masked `tl.load`/`tl.store` and bounds checks.

A kernel's array argument becomes a `Buffer` (the argument's memory as a flat host NumPy array of the
element type's storage) and a scalar `Pointer` to its element 0. A `Pointer` is a Tensor whose elements are
int64 element offsets into one buffer; `ptr + offsets` broadcasts like any arithmetic (unsigned offsets are
zero-extended, as Triton's addptr does). Every active lane
(mask true or no mask) of a load or store must address `[0, len(buffer))`; otherwise the access raises
InterpreterError naming the offsets, the buffer size and the kernel line.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, InterpreterError, ShapeError
from . import numeric
from .location import error, program_text
from .shapes import broadcast_pair, fit_to_shape
from .tensor import Tensor, is_python_number, to_tensor, unwrap

_SHOWN_OFFSETS = 5  # how many offending offsets an out-of-bounds message lists


class Buffer:
    """The host memory behind one array argument, seen as a flat array of `element_ty` storage."""

    def __init__(self, name: str, element_ty: dt.dtype, values: np.ndarray, parent: "Buffer | None" = None):
        self.name = name
        self.element_ty = element_ty
        self.values = values  # 1-D, storage dtype of element_ty; written in place by stores
        self.written = False
        self.parent = parent  # the buffer this one reinterprets (a pointer cast), sharing its memory
        self._views = {}

    def __len__(self):
        return self.values.shape[0]

    def mark_written(self):
        self.written = True
        if self.parent is not None:
            self.parent.mark_written()

    def viewed_as(self, element_ty: dt.dtype) -> "Buffer":
        """The same memory seen as `element_ty` elements (one Buffer per type, so its pointers combine)."""
        if element_ty not in self._views:
            size = element_ty.numpy.itemsize
            count = self.values.nbytes // size
            whole = self.values.view(np.uint8)[:count * size]
            self._views[element_ty] = Buffer(self.name, element_ty, whole.view(element_ty.numpy), parent=self)
        return self._views[element_ty]


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


def require_pointer(pointer, what: str) -> Pointer:
    pointer = unwrap(pointer)
    if not isinstance(pointer, Pointer):
        got = repr(pointer.dtype) if isinstance(pointer, Tensor) else type(pointer).__name__
        raise error(DTypeError, f"{what} needs a pointer (an array argument plus offsets), got {got}")
    return pointer


def _mask_tensor(mask, what: str) -> Tensor | None:
    """The mask as an int1 Tensor, or None when every lane is active."""
    mask = unwrap(mask)
    if mask is None:
        return None
    mask = to_tensor(mask, f"the mask of {what}")
    if mask.dtype is not dt.int1:
        raise error(DTypeError, f"the mask of {what} must be a boolean block (int1), got {mask.dtype!r}",
                    hint="compare to build it, e.g. mask=offs < n")
    return mask


def _no_blocks_with_scalar_pointer(ptr: Pointer, value, what: str):
    if ptr.shape == () and value is not None and value.shape != ():
        raise error(ShapeError, f"{what} of shape {value.shape} cannot go with a scalar pointer")


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
    """Masked gather through `pointer`; masked-off lanes read `other` (0 when None).

    As in Triton, the pointer block broadcasts with `mask` and with `other` (both ways), so a row of
    pointers loaded under a 2-D mask gives a 2-D block."""
    ptr = require_pointer(pointer, "tl.load")
    elem = ptr.buffer.element_ty
    mask = _mask_tensor(mask, "tl.load")
    other = _other_tensor(other) if mask is not None else None  # without a mask `other` is never read
    for operand, what in ((mask, "tl.load: a mask"), (other, "tl.load: `other`")):
        _no_blocks_with_scalar_pointer(ptr, operand, what)
        if operand is not None:
            ptr, _ = broadcast_pair(ptr, operand)
    if mask is None:
        _check_bounds(ptr, None, "load")
        return Tensor(ptr.buffer.values[ptr.data], elem)
    active = fit_to_shape(mask, ptr.shape, "the mask of tl.load").data
    _check_bounds(ptr, active, "load")
    if other is None:
        fill = np.zeros(ptr.shape, dtype=numeric.storage_dtype(elem))
    else:
        fill = numeric.cast(fit_to_shape(other, ptr.shape, "`other` of tl.load").data, other.dtype, elem)
    values = ptr.buffer.values
    gathered = values[np.where(active, ptr.data, 0)] if len(values) else fill
    return Tensor(np.where(active, gathered, fill), elem)


def _other_tensor(other) -> Tensor | None:
    other = unwrap(other)
    if other is None:
        return None
    if isinstance(other, Pointer):
        raise error(DTypeError, "tl.load: `other` cannot be a pointer")
    return to_tensor(other, "`other` of tl.load")


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
    mask = _mask_tensor(mask, "tl.store")
    _no_blocks_with_scalar_pointer(ptr, value, "tl.store: a value")
    _no_blocks_with_scalar_pointer(ptr, mask, "tl.store: a mask")
    # Unlike load, store fits the value and the mask to the pointer's shape (one-way, as Triton does).
    value = fit_to_shape(value, ptr.shape, "the value of tl.store")
    elem = ptr.buffer.element_ty
    data = numeric.cast(value.data, value.dtype, elem)
    active = None if mask is None else fit_to_shape(mask, ptr.shape, "the mask of tl.store").data
    _check_bounds(ptr, active, "store")
    offsets = ptr.data
    if active is not None:
        offsets, data = offsets[active], np.broadcast_to(data, ptr.shape)[active]
    # Fancy assignment writes lanes in order: for duplicate offsets the last lane wins.
    ptr.buffer.values[np.ravel(offsets)] = np.ravel(data)
    ptr.buffer.mark_written()
