"""Tensor descriptors in the interpreter: `tl.make_tensor_descriptor`, `desc.load` / `desc.store`.

A `TensorDescriptor` holds the base `Pointer` and, as Python ints, the shape and strides (int64), with the
static block shape and padding. Reading or writing the block at `offsets` goes through the block-pointer
helpers (`block_pointers.py`) with every dimension bounds-checked: outside the tensor a load gives the padding
and a store writes nothing, as the compiled kernel does (`parse/semantic_tensor_desc.py`, whose argument rules
and errors these are).
"""
from __future__ import annotations

import functools

from .. import dtypes as dt
from ..errors import CompileTimeError, DTypeError, NameResolutionError, ShapeError, UnsupportedSyntaxError
from ..language import core
from . import block_pointers as bp, pointers
from .location import error
from .registry import rule
from .shapes import validate_block_shape
from .tensor import Tensor, unwrap

_NOT_YET = ("atomic_add", "atomic_and", "atomic_max", "atomic_min", "atomic_or", "atomic_xor", "gather", "scatter")
_HINT = "read a block with desc.load([offsets...]) and write one with desc.store([offsets...], value)"


class TensorDescriptor:
    __slots__ = ("_base", "_shape", "_strides", "_block_shape", "_padding")

    def __init__(self, base, shape, strides, block_shape, padding):
        self._base, self._shape, self._strides = base, shape, strides
        self._block_shape, self._padding = block_shape, padding

    def __getattr__(self, name):
        if name == "load":
            return functools.partial(core.BUILTINS["load_tensor_descriptor"], self)
        if name == "store":
            return functools.partial(core.BUILTINS["store_tensor_descriptor"], self)
        if name == "dtype":
            return self._base.buffer.element_ty
        if name == "block_shape":
            return list(self._block_shape)
        if name == "block_type":
            return dt.block_type(self._base.buffer.element_ty, self._block_shape)
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _NOT_YET:
            raise error(UnsupportedSyntaxError, f"tensor descriptor method '{name}' is not supported yet", hint=_HINT)
        raise error(NameResolutionError, f"a tensor descriptor has no attribute '{name}'", hint=_HINT)

    def block_at(self, offsets, what) -> bp.BlockPointer:
        offsets = bp._sequence(offsets)
        rank = len(self._block_shape)
        if len(offsets) != rank:
            raise error(ShapeError, f"{what} of a {rank}-D tensor descriptor needs {rank} offsets, got {len(offsets)}")
        return bp.BlockPointer(self._base, self._shape, self._strides, bp._offsets(offsets, what), self._block_shape,
                               tuple(reversed(range(rank))))

    def __repr__(self):
        return (f"tensor_descriptor(buffer='{self._base.buffer.name}', shape={self._shape}, strides={self._strides}, "
                f"block_shape={self._block_shape})")


core.TENSOR_CLASSES.append(TensorDescriptor)
core.DESCRIPTOR_CLASSES.append(TensorDescriptor)


@rule("make_tensor_descriptor")
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    base = unwrap(base)
    if not isinstance(base, pointers.Pointer) or base.shape != ():
        got = f"a block of shape {base.shape}" if isinstance(base, Tensor) else type(base).__name__
        raise error(DTypeError, f"tl.make_tensor_descriptor needs a scalar pointer as its base, not {got}",
                    hint="pass the tensor's array argument (plus a scalar offset if needed)")
    shape, strides, block_shape = bp._sequence(shape), bp._sequence(strides), bp._sequence(block_shape)
    if not len(shape) == len(strides) == len(block_shape):
        raise error(ShapeError, f"tl.make_tensor_descriptor needs one entry per dimension in shape, strides and "
                    f"block_shape, got {len(shape)}, {len(strides)} and {len(block_shape)}")
    if not 1 <= len(block_shape) <= 5:
        raise error(ShapeError, f"tensor descriptors have 1 to 5 dimensions, got {len(block_shape)}")
    if any(isinstance(s, Tensor) for s in block_shape):
        raise error(CompileTimeError, "tl.make_tensor_descriptor's block_shape must be constexprs")
    block_shape = tuple(int(s) for s in block_shape)
    validate_block_shape(block_shape, "tl.make_tensor_descriptor")
    padding = unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise error(CompileTimeError, f"padding_option must be 'zero' or 'nan', not {padding!r}")
    elem = base.buffer.element_ty
    if padding == "nan" and not elem.is_floating():
        raise error(DTypeError, f"padding_option='nan' needs a floating-point tensor, not {elem!r}")
    last = strides[-1]
    if isinstance(last, Tensor) or last != 1:
        raise error(CompileTimeError, "a tensor descriptor's last dimension must be contiguous: its stride must "
                    "be 1 at compile time (not Triton's language otherwise)",
                    hint="pass 1 (a literal, or an argument equal to 1, which is specialized)")
    if block_shape[-1] * elem.itemsize < 16:
        raise error(CompileTimeError, f"a tensor descriptor's block must hold at least 16 bytes in its last "
                    f"dimension, got {block_shape[-1]} x {elem.itemsize} bytes (not Triton's language)")
    what = "tl.make_tensor_descriptor's"
    return TensorDescriptor(base, tuple(bp._integer(s, f"{what} shape", dt.int64) for s in shape),
                            tuple(bp._integer(s, f"{what} strides", dt.int64) for s in strides), block_shape,
                            padding)


def _descriptor(desc, what) -> TensorDescriptor:
    desc = unwrap(desc)
    if not isinstance(desc, TensorDescriptor):
        got = repr(desc.dtype) if isinstance(desc, Tensor) else type(desc).__name__
        raise error(DTypeError, f"{what} needs a tensor descriptor (made by tl.make_tensor_descriptor), not {got}")
    return desc


@rule("load_tensor_descriptor")
def load_tensor_descriptor(desc, offsets):
    d = _descriptor(desc, "tl.load_tensor_descriptor")
    p = d.block_at(offsets, "desc.load")
    return bp.load(p, None, None, tuple(range(len(d._block_shape))), d._padding)


@rule("store_tensor_descriptor")
def store_tensor_descriptor(desc, offsets, value):
    d = _descriptor(desc, "tl.store_tensor_descriptor")
    p = d.block_at(offsets, "desc.store")
    bp.store(p, value, None, tuple(range(len(d._block_shape))))
