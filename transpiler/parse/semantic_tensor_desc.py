"""Tensor descriptors made in the kernel: `tl.make_tensor_descriptor`, `desc.load` / `desc.store` (and
`tl.load_tensor_descriptor` / `tl.store_tensor_descriptor`), as Triton 3.6 types them.

A `TensorDescriptor` record holds the base pointer, the tensor's shape and strides and the static block shape and
padding. Loading or storing the block at `offsets` is a block-pointer access of the same tensor with every
dimension bounds-checked (parse/semantic_block_ptr.py): elements outside the tensor read as the padding (zero,
or NaN) and are not written. The result is an ordinary masked pointer block, so a descriptor load that feeds a
`tl.dot` in a loop is staged by TMA on sm_90a like any affine tile (analysis/tma.py), and by cp.async or plain
loads elsewhere. Triton's rules are kept: 1 to 5 dimensions, the last stride the constant 1, at least 16 bytes
in the block's last dimension. A host `TensorDescriptor` argument (transpiler/tools/tensor_descriptor.py) is
rebuilt through the same rule by the IR builder. The descriptor atomics, gather and scatter are not supported yet.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..language import core
from ..errors import CompileTimeError, DTypeError, ShapeError
from . import semantic
from .ir import Type, Value
from .records import Record
from .semantic import const_value, is_const, rule
from .semantic_block_ptr import (_INT64, BlockPointer, _integer_leaf, _load as _block_load, _offsets, _sequence,
                                 _store as _block_store)

_PADDINGS = ("zero", "nan")
_HINT = "read a block with desc.load([offsets...]) and write one with desc.store([offsets...], value)"


@dataclass(eq=False)
class TensorDescriptor(Record):
    """Leaves: the base pointer, then per dimension the shape and the strides. Static: `block_shape`, `padding`."""

    base: Value
    shape: tuple
    strides: tuple
    block_shape: tuple
    padding: str = "zero"
    name: str | None = None

    KIND = "tensor descriptor"
    RULES = {}
    METHODS = {"load": "load_tensor_descriptor", "store": "store_tensor_descriptor"}
    ATTRIBUTES = ("dtype", "block_shape", "block_type")
    NOT_YET = ("atomic_add", "atomic_and", "atomic_max", "atomic_min", "atomic_or", "atomic_xor", "gather", "scatter")
    HINT = _HINT

    @property
    def rank(self):
        return len(self.block_shape)

    @property
    def dtype(self):
        """As in Triton: the element type."""
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        return dtypes.block_type(self.dtype, self.block_shape)

    def leaves(self):
        return (self.base,) + self.shape + self.strides

    def leaf_names(self):
        return ("base",) + tuple(f"shape{d}" for d in range(self.rank)) + tuple(f"stride{d}" for d in range(self.rank))

    def leaf_types(self):
        return (self.base.type,) + (Type(dtypes.int64),) * (2 * self.rank)

    def with_leaves(self, leaves):
        leaves, r = tuple(leaves), self.rank
        return TensorDescriptor(leaves[0], leaves[1:1 + r], leaves[1 + r:], self.block_shape, self.padding, self.name)

    def structure(self):
        return (self.base.dtype, self.block_shape, self.padding)

    def __str__(self):
        return f"a tensor descriptor of {self.dtype!r}[{'x'.join(map(str, self.block_shape))}] blocks"

    def block_at(self, b, offsets, what):
        offsets = _sequence(b, offsets, what)
        if len(offsets) != self.rank:
            raise b.error(ShapeError, f"{what} of a {self.rank}-D tensor descriptor needs {self.rank} offsets, "
                          f"got {len(offsets)}")
        return BlockPointer(self.base, self.shape, self.strides, _offsets(b, offsets, what), self.block_shape,
                            tuple(reversed(range(self.rank))), self.name)


core.DESCRIPTOR_CLASSES.append(TensorDescriptor)     # `isinstance(desc, tl.tensor_descriptor)` while compiling


@rule("make_tensor_descriptor")
def _make_tensor_descriptor(b, base, shape, strides, block_shape, padding_option="zero"):
    if is_const(base) or not base.dtype.is_ptr() or base.shape:
        got = base.type if isinstance(base, Value) else repr(base)
        raise b.error(DTypeError, f"tl.make_tensor_descriptor needs a scalar pointer as its base, not {got}",
                      hint="pass the tensor's array argument (plus a scalar offset if needed)")
    shape = _sequence(b, shape, "tl.make_tensor_descriptor's shape")
    strides = _sequence(b, strides, "tl.make_tensor_descriptor's strides")
    block_shape = tuple(const_value(b, s, "a block_shape entry")
                        for s in _sequence(b, const_value(b, block_shape, "block_shape"), "block_shape"))
    if not len(shape) == len(strides) == len(block_shape):
        raise b.error(ShapeError, f"tl.make_tensor_descriptor needs one entry per dimension in shape, strides and "
                      f"block_shape, got {len(shape)}, {len(strides)} and {len(block_shape)}")
    if not 1 <= len(block_shape) <= 5:
        raise b.error(ShapeError, f"tensor descriptors have 1 to 5 dimensions, got {len(block_shape)}")
    semantic.check_block_shape(b, block_shape)
    padding = const_value(b, padding_option, "padding_option")
    if padding not in _PADDINGS:
        raise b.error(CompileTimeError, f"padding_option must be 'zero' or 'nan', not {padding!r}")
    elem = base.dtype.element_ty
    if padding == "nan" and not elem.is_floating():
        raise b.error(DTypeError, f"padding_option='nan' needs a floating-point tensor, not {elem!r}")
    last = strides[-1]
    if not ((is_const(last) and last == 1) or semantic.is_integer_one(last)):
        raise b.error(CompileTimeError, "a tensor descriptor's last dimension must be contiguous: its stride must "
                      "be 1 at compile time (Triton's rule)",
                      hint="pass 1 (a literal, or an argument equal to 1, which is specialized)")
    if block_shape[-1] * elem.itemsize < 16:
        raise b.error(CompileTimeError, f"Descriptor block shape must have at least 16 bytes in the last dimension, "
                      f"but got {block_shape[-1]} * {elem.itemsize} = {block_shape[-1] * elem.itemsize} bytes "
                      "(Triton's rule)")
    what = "tl.make_tensor_descriptor's"
    return TensorDescriptor(base, tuple(_integer_leaf(b, s, f"{what} shape", dtypes.int64, _INT64) for s in shape),
                            tuple(_integer_leaf(b, s, f"{what} strides", dtypes.int64, _INT64) for s in strides),
                            block_shape, padding)


def _descriptor(b, desc, what):
    if not isinstance(desc, TensorDescriptor):
        got = desc.type if isinstance(desc, Value) else type(desc).__name__
        raise b.error(DTypeError, f"{what} needs a tensor descriptor (made by tl.make_tensor_descriptor), not {got}")
    return desc


@rule("load_tensor_descriptor")
def _load_tensor_descriptor_of_non_descriptor(b, desc, offsets):
    _descriptor(b, desc, "tl.load_tensor_descriptor")


@rule("store_tensor_descriptor")
def _store_tensor_descriptor_of_non_descriptor(b, desc, offsets, value):
    _descriptor(b, desc, "tl.store_tensor_descriptor")


def _descriptor_rule(name):
    def register(fn):
        TensorDescriptor.RULES[name] = fn
        return fn
    return register


@_descriptor_rule("load_tensor_descriptor")
def _load(b, desc, offsets):
    p = desc.block_at(b, offsets, "desc.load")
    return _block_load(b, p, boundary_check=tuple(range(desc.rank)), padding_option=desc.padding)


@_descriptor_rule("store_tensor_descriptor")
def _store(b, desc, offsets, value):
    p = desc.block_at(b, offsets, "desc.store")
    _block_store(b, p, value, boundary_check=tuple(range(desc.rank)))
