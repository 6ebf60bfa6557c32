"""Block pointers in the interpreter: `tl.make_block_ptr`, `tl.advance`, and loads and stores through them.

A `BlockPointer` holds the base `Pointer` and, as Python ints, the shape and strides (int64, as Triton has
them) and the offsets (int32: `tl.advance` wraps as the compiled addition does). A load or store computes the
block's element offsets `base + sum_d (offset_d + i_d) * stride_d` in int64, masks the dimensions named in
`boundary_check` with `0 <= offset_d + i_d < shape_d`, and goes through the masked `tl.load` / `tl.store`
(the typing rules, `eager.py`), so an unchecked access outside the array raises InterpreterError there. The argument rules (and their
errors) are those of the compiler's `parse/semantic_block_ptr.py`.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from ..errors import CompileTimeError, DTypeError, NameResolutionError, ShapeError
from ..language import core
from . import eager, numeric, pointers
from .location import error
from .registry import rule
from .shapes import validate_block_shape
from .tensor import Tensor, to_tensor, unwrap

_PADDING = {"": 0, "zero": 0, "nan": float("nan")}   # "" leaves the value undefined: zero is as good as any
_HINT = "load the block first: tl.load(ptr, boundary_check=...); move the pointer with tl.advance"


class BlockPointer:
    """A block pointer: where the `block_shape` block at `offsets` of a strided tensor lies in a buffer.

    Its fields are private (`_shape`, ...): as in a compiled kernel, `p.advance(...)` is its only attribute."""

    __slots__ = ("_base", "_shape", "_strides", "_offsets", "_block_shape", "_order")

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self._base, self._shape, self._strides, self._offsets = base, shape, strides, offsets
        self._block_shape, self._order = block_shape, order

    @property
    def _rank(self) -> int:
        return len(self._block_shape)

    def __getattr__(self, name):
        if name == "advance":   # `p.advance(offsets)`, as on Triton's tensors
            return functools.partial(core.BUILTINS["advance"], self)
        if name in ("dtype", "type"):   # as in Triton: a pointer to a block
            return dt.pointer_type(dt.block_type(self._base.buffer.element_ty, self._block_shape))
        if name.startswith("__"):
            raise AttributeError(name)
        raise error(NameResolutionError, f"a block pointer has no attribute '{name}'", hint=_HINT)

    def _no_operators(self, *args):
        raise error(DTypeError, "operators do not apply to a block pointer", hint=_HINT)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __mod__ = \
        __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __invert__ = _no_operators

    def __repr__(self):
        return (f"block_pointer(buffer='{self._base.buffer.name}', shape={self._shape}, strides={self._strides}, "
                f"offsets={self._offsets}, block_shape={self._block_shape}, order={self._order})")


core.TENSOR_CLASSES.append(BlockPointer)


def _sequence(value) -> tuple:
    value = unwrap(value)
    return tuple(unwrap(v) for v in value) if isinstance(value, (tuple, list)) else (value,)


def _integer(value, what: str, dtype: dt.dtype) -> int:
    """A shape, stride or offset entry as a Python int of `dtype`'s range."""
    if isinstance(value, Tensor):
        if value.shape != ():
            raise error(ShapeError, f"{what} must be scalars, got a block of shape {value.shape}")
        if not value.dtype.is_int() or value.dtype is dt.int1:
            raise error(DTypeError, f"{what} must be integers, got {value.dtype!r}", hint="convert with .to(tl.int32)")
        if dtype is dt.int32 and value.dtype.bits > 32:
            raise error(DTypeError, f"{what} must be 32-bit integers (Triton's block pointers use int32 offsets), "
                        f"got {value.dtype!r}", hint="convert with .to(tl.int32), or index with a block of pointers")
        return numeric.wrap_int(int(value.data), dtype)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error(DTypeError, f"{what} must be integers, got {value!r}")
    lo, hi = numeric.int_range(dtype)
    if not lo <= value <= hi:
        raise error(CompileTimeError, f"{what} must fit in {dtype!r}, but {value} does not")
    return int(value)


def _offsets(values, what: str) -> tuple:
    return tuple(_integer(v, what, dt.int32) for v in values)


@rule("make_block_ptr")
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    base = unwrap(base)
    if not isinstance(base, pointers.Pointer) or base.shape != ():
        got = f"a block of shape {base.shape}" if isinstance(base, Tensor) else type(base).__name__
        raise error(DTypeError, f"tl.make_block_ptr needs a scalar pointer as its base, not {got}",
                    hint="pass the tensor's array argument (plus a scalar offset if needed)")
    shape, strides, offsets = _sequence(shape), _sequence(strides), _sequence(offsets)
    block_shape, order = _sequence(block_shape), _sequence(order)
    lengths = {"shape": len(shape), "strides": len(strides), "offsets": len(offsets),
               "block_shape": len(block_shape), "order": len(order)}
    if len(set(lengths.values())) != 1:
        raise error(ShapeError, "tl.make_block_ptr needs one entry per dimension in shape, strides, offsets, "
                    "block_shape and order, got " + ", ".join(f"{n}: {k}" for n, k in lengths.items()))
    for entry in block_shape + order:
        if isinstance(entry, Tensor):
            raise error(CompileTimeError, "tl.make_block_ptr's block_shape and order must be constexprs")
    validate_block_shape(tuple(int(s) for s in block_shape), "tl.make_block_ptr")
    if sorted(order) != list(range(len(order))):
        raise error(CompileTimeError, f"tl.make_block_ptr's order must be a permutation of "
                    f"{tuple(range(len(order)))}, got {order}")
    return BlockPointer(base, tuple(_integer(s, "tl.make_block_ptr's shape", dt.int64) for s in shape),
                        tuple(_integer(s, "tl.make_block_ptr's strides", dt.int64) for s in strides),
                        _offsets(offsets, "tl.make_block_ptr's offsets"), tuple(int(s) for s in block_shape),
                        tuple(int(o) for o in order))


def _block_pointer(value, what: str) -> BlockPointer:
    value = unwrap(value)
    if not isinstance(value, BlockPointer):
        got = repr(value.dtype) if isinstance(value, Tensor) else type(value).__name__
        raise error(DTypeError, f"{what} moves a block pointer (made by tl.make_block_ptr), not {got}",
                    hint="move a block of pointers with ptrs += offset")
    return value


@rule("advance")
def advance(base, offsets):
    p = _block_pointer(base, "tl.advance")
    offsets = _sequence(offsets)
    if len(offsets) != p._rank:
        raise error(ShapeError, f"tl.advance of a {p._rank}-D block pointer needs {p._rank} offsets, "
                    f"got {len(offsets)}")
    moved = tuple(numeric.wrap_int(old + delta, dt.int32)
                  for old, delta in zip(p._offsets, _offsets(offsets, "tl.advance's offsets")))
    return BlockPointer(p._base, p._shape, p._strides, moved, p._block_shape, p._order)


def _boundary_check(p: BlockPointer, boundary_check) -> list:
    dims = _sequence(boundary_check)
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or not 0 <= d < p._rank:
            raise error(ShapeError, f"boundary_check entries are dimensions of the {p._rank}-D block pointer "
                        f"(0 to {p._rank - 1}), got {d!r}")
    if len(set(dims)) != len(dims):
        raise error(CompileTimeError, f"boundary_check repeats a dimension: {dims}")
    return sorted(int(d) for d in dims)


def _addresses(p: BlockPointer, checked):
    """The block's element pointers, and the in-bounds mask of the `checked` dimensions (None: none)."""
    offsets = np.full(p._block_shape, p._base.data, dtype=np.int64)
    mask = None
    for d in range(p._rank):
        shape = [1] * p._rank
        shape[d] = p._block_shape[d]
        idx = (p._offsets[d] + np.arange(p._block_shape[d], dtype=np.int64)).reshape(shape)
        offsets = offsets + idx * p._strides[d]
        if d in checked:
            inside = (idx >= 0) & (idx < p._shape[d])
            mask = inside if mask is None else mask & inside
    in_bounds = None if mask is None else Tensor(np.broadcast_to(mask, p._block_shape), dt.int1)
    return pointers.Pointer(offsets, p._base.buffer), in_bounds


def _no_mask(mask, other, what: str):
    if unwrap(mask) is not None or unwrap(other) is not None:
        raise error(CompileTimeError, f"{what} through a block pointer takes no mask= or other=",
                    hint="use boundary_check=(dims...) and, for loads, padding_option='zero' or 'nan'")


def load(p: BlockPointer, mask, other, boundary_check, padding_option) -> Tensor:
    """`tl.load` through a block pointer."""
    _no_mask(mask, other, "tl.load")
    padding = unwrap(padding_option) or ""
    if padding not in _PADDING:
        raise error(CompileTimeError, f"padding_option must be 'zero' or 'nan' (or '' for undefined), not {padding!r}")
    elem = p._base.buffer.element_ty
    if padding == "nan" and not elem.is_floating():
        raise error(DTypeError, f"padding_option='nan' needs a floating-point block pointer, not {elem!r}")
    checked = _boundary_check(p, boundary_check)
    if padding and not checked:
        raise error(CompileTimeError, f"padding_option={padding!r} fills what boundary_check excludes, but "
                    "boundary_check is empty", hint="name the dimensions to check: boundary_check=(0, 1)")
    addresses, in_bounds = _addresses(p, checked)
    return eager.apply_rule("load", addresses, in_bounds, None if in_bounds is None else _PADDING[padding])


def store(p: BlockPointer, value, mask, boundary_check) -> None:
    """`tl.store` through a block pointer: `value` must have its element type and block shape (or be a scalar)."""
    _no_mask(mask, None, "tl.store")
    elem = p._base.buffer.element_ty
    value = to_tensor(value, "the value of tl.store")
    if value.dtype is not elem:
        raise error(DTypeError, f"tl.store through a block pointer to {elem!r} needs a {elem!r} value, not "
                    f"{value.dtype!r}", hint=f"convert it first: value.to({elem!r})")
    if value.shape and value.shape != p._block_shape:
        raise error(ShapeError, f"tl.store through a block pointer needs a block of its shape "
                    f"{list(p._block_shape)} (or a scalar), got {list(value.shape)}")
    addresses, in_bounds = _addresses(p, _boundary_check(p, boundary_check))
    eager.apply_rule("store", addresses, value, in_bounds)
