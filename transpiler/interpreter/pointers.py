"""Pointer values and memory access: the buffers behind pointers, masked gathers and scatters, bounds checks.

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
from ..errors import InterpreterError
from .location import error, program_text
from .tensor import Tensor

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

    def __init__(self, offsets, buffer: Buffer, dtype: dt.pointer_type | None = None):
        # `dtype`: the pointer type the typing rules gave it (a const pointer stays const through arithmetic)
        super().__init__(np.asarray(offsets, dtype=np.int64), dtype or dt.pointer_type(buffer.element_ty))
        self.buffer = buffer

    @classmethod
    def to_start_of(cls, buffer: Buffer, const: bool = False) -> "Pointer":
        """A pointer argument: element 0 of its buffer (`const` for a parameter annotated `tl.const`)."""
        return cls(np.int64(0), buffer, dt.pointer_type(buffer.element_ty, const=const))

    def _with_data(self, data) -> "Pointer":
        return Pointer(data, self.buffer, self.dtype)

    def __bool__(self):
        """`if bias_ptr:` (vLLM's optional-bias test) is the compiled `ptr != nullptr`: a pointer into an array
        is never null, whatever its offset (the offsets here start at 0, which must not read as false). An
        absent argument is None, a compile-time value, never a Pointer."""
        self._scalar("using a block as a condition")
        return True

    def __str__(self):
        return f"<pointers into '{self.buffer.name}' at offsets {self.data}>"

    def __repr__(self):
        return f"pointer(buffer='{self.buffer.name}', offsets={self.data!r}, dtype={self.dtype!r})"


def check_bounds(buffer: Buffer, offsets, active, what: str):
    """Every active lane's offset inside `buffer`, else InterpreterError naming them (and the kernel line)."""
    size = len(buffer)
    bad = (offsets < 0) | (offsets >= size)
    if active is not None:
        bad = bad & active  # masked-off lanes may point anywhere
    if not bad.any():
        return
    offsets = np.broadcast_to(offsets, np.shape(bad))
    lanes = np.argwhere(bad) if np.ndim(offsets) else np.zeros((1, 0), dtype=np.int64)
    shown = ", ".join(f"{int(offsets[tuple(lane)])} (lane {tuple(int(i) for i in lane)})"
                      for lane in lanes[:_SHOWN_OFFSETS])
    more = f" and {len(lanes) - _SHOWN_OFFSETS} more" if len(lanes) > _SHOWN_OFFSETS else ""
    raise error(InterpreterError,
                f"out-of-bounds {what} through '{buffer.name}'{program_text()}: offsets {shown}{more} "
                f"are outside the buffer of {size} elements (valid offsets 0..{size - 1})",
                hint="mask the access (mask=offs < n) or check the offset arithmetic")


def gather(buffer: Buffer, offsets, active, fill):
    """The elements at `offsets`; where `active` (if given) is false, `fill` instead."""
    check_bounds(buffer, offsets, active, "load")
    values = buffer.values
    if active is None:
        return values[offsets]
    gathered = values[np.where(active, offsets, 0)] if len(values) else fill
    return np.where(active, gathered, fill)


def scatter(buffer: Buffer, offsets, data, active) -> None:
    """Write `data` at `offsets` (where `active`, if given); for duplicate offsets the last lane wins."""
    check_bounds(buffer, offsets, active, "store")
    if active is not None:
        offsets, data = offsets[active], np.broadcast_to(data, np.shape(offsets))[active]
    buffer.values[np.ravel(offsets)] = np.ravel(data)   # fancy assignment writes lanes in order
    buffer.mark_written()
