"""Block pointers: `tl.make_block_ptr`, `tl.advance`, and `tl.load` / `tl.store` through one, as Triton types them.

A block pointer is a `BlockPointer` record (base pointer, shape, strides, offsets, block shape, order) that
exists only while building; no IR op holds it. A load or store through it becomes an ordinary pointer block,
as Triton's "rewrite tensor pointer" pass does for GPUs without TMA:

    base + sum_d (offset_d + arange(0, block_d))[broadcast along d] * stride_d

masked by `0 <= offset_d + i < shape_d` over the dimensions in `boundary_check`, with `other` from
`padding_option`. As in Triton, shape and strides are int64 and offsets int32, and the index arithmetic is
64-bit. Leaves known at compile time fold away: a stride equal to 1 (a literal, or an argument specialized to
1) adds the index without a product, so the axis analysis sees the contiguous run and the access vectorizes;
a constant offset needs no lower-bound check, nor an upper one when the block fits inside a constant shape.
`order` is checked and kept, but addresses do not depend on it. `tl.advance` adds to the offsets (int32);
runtime loops and branches carry the offsets that change (`records.Slots`), and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..errors import CompileTimeError, DTypeError, ShapeError
from . import semantic
from .ir import Type, Value
from .records import Record
from .semantic import binary_op, cast, const_value, is_const, logical, rule
from .semantic_memory import store_pointers

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_PADDING = {"": 0, "zero": 0, "nan": float("nan")}   # "" leaves the value undefined: zero is as good as any


@dataclass(eq=False)
class BlockPointer(Record):
    """Leaves: the scalar base pointer, then per dimension the shape, the strides and the offsets (IR values
    or Python ints). Static: the element type, `block_shape` and `order`. Only `name` (for the generated
    code) changes once it is made."""

    base: Value
    shape: tuple
    strides: tuple
    offsets: tuple
    block_shape: tuple
    order: tuple
    name: str | None = None

    KIND = "block pointer"
    RULES = {}
    METHODS = ("advance",)
    ATTRIBUTES = ("dtype", "type")
    HINT = "load the block first: tl.load(ptr, boundary_check=...); move the pointer with tl.advance"

    @property
    def rank(self):
        return len(self.block_shape)

    @property
    def element_ty(self):
        return self.base.dtype.element_ty

    @property
    def dtype(self):
        """As in Triton: a pointer to a block, `pointer_type(block_type(element, block_shape))`."""
        return dtypes.pointer_type(dtypes.block_type(self.element_ty, self.block_shape))

    type = dtype

    def leaves(self):
        return (self.base,) + self.shape + self.strides + self.offsets

    def leaf_names(self):
        dims = range(self.rank)
        return (("base",) + tuple(f"shape{d}" for d in dims) + tuple(f"stride{d}" for d in dims)
                + tuple(f"offset{d}" for d in dims))

    def leaf_types(self):
        return (self.base.type,) + (Type(dtypes.int64),) * (2 * self.rank) + (Type(dtypes.int32),) * self.rank

    def with_leaves(self, leaves):
        r = self.rank
        leaves = tuple(leaves)
        return BlockPointer(leaves[0], leaves[1:1 + r], leaves[1 + r:1 + 2 * r], leaves[1 + 2 * r:],
                            self.block_shape, self.order, self.name)

    def structure(self):
        return (self.base.dtype, self.block_shape, self.order)

    def __str__(self):
        return (f"a block pointer to {self.element_ty!r}[{'x'.join(map(str, self.block_shape))}] blocks "
                f"(order {self.order})")


def _sequence(b, value, what):
    """A constexpr sequence argument as a tuple; a single value becomes a 1-tuple (Triton's rule)."""
    if isinstance(value, Record):
        raise b.error(DTypeError, f"{what} cannot be a {value.KIND}")
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _integer_leaf(b, x, what, dt, lo_hi):
    """A shape, stride or offset entry: a Python int in range, or a scalar integer value cast to `dt`."""
    if is_const(x):
        if isinstance(x, bool) or not isinstance(x, int):
            raise b.error(DTypeError, f"{what} must be integers, got {x!r}")
        if not lo_hi[0] <= x <= lo_hi[1]:
            raise b.error(CompileTimeError, f"{what} must fit in {dt!r}, but {x} does not")
        return x
    if x.shape:
        raise b.error(ShapeError, f"{what} must be scalars, got a block of shape {list(x.shape)}")
    if not x.dtype.is_int() or x.dtype is dtypes.int1:
        raise b.error(DTypeError, f"{what} must be integers, got {x.dtype!r}",
                      hint="convert with .to(tl.int32)")
    if dt is dtypes.int32 and x.dtype.bits > 32:
        raise b.error(DTypeError, f"{what} must be 32-bit integers (Triton's block pointers use int32 offsets), "
                      f"got {x.dtype!r}", hint="convert with .to(tl.int32), or index with a block of pointers")
    return cast(b, x, dt)


def _offsets(b, offsets, what):
    return tuple(_integer_leaf(b, o, what, dtypes.int32, _INT32) for o in offsets)


@rule("make_block_ptr")
def _make_block_ptr(b, base, shape, strides, offsets, block_shape, order):
    if is_const(base) or not base.dtype.is_ptr() or base.shape:
        got = base.type if isinstance(base, Value) else repr(base)
        raise b.error(DTypeError, f"tl.make_block_ptr needs a scalar pointer as its base, not {got}",
                      hint="pass the tensor's array argument (plus a scalar offset if needed)")
    shape = _sequence(b, shape, "tl.make_block_ptr's shape")
    strides = _sequence(b, strides, "tl.make_block_ptr's strides")
    offsets = _sequence(b, offsets, "tl.make_block_ptr's offsets")
    block_shape = tuple(const_value(b, s, "a block_shape entry")
                        for s in _sequence(b, const_value(b, block_shape, "block_shape"), "block_shape"))
    order = tuple(const_value(b, o, "an order entry")
                  for o in _sequence(b, const_value(b, order, "order"), "order"))
    lengths = {"shape": len(shape), "strides": len(strides), "offsets": len(offsets),
               "block_shape": len(block_shape), "order": len(order)}
    if len(set(lengths.values())) != 1:
        raise b.error(ShapeError, "tl.make_block_ptr needs one entry per dimension in shape, strides, offsets, "
                      "block_shape and order, got " + ", ".join(f"{n}: {k}" for n, k in lengths.items()))
    semantic.check_block_shape(b, block_shape)
    if sorted(order) != list(range(len(order))):
        raise b.error(CompileTimeError, f"tl.make_block_ptr's order must be a permutation of "
                      f"{tuple(range(len(order)))}, got {order}")
    return BlockPointer(base,
                        tuple(_integer_leaf(b, s, "tl.make_block_ptr's shape", dtypes.int64, _INT64) for s in shape),
                        tuple(_integer_leaf(b, s, "tl.make_block_ptr's strides", dtypes.int64, _INT64)
                              for s in strides),
                        _offsets(b, offsets, "tl.make_block_ptr's offsets"), block_shape, order)


@rule("advance")
def _advance_non_block_pointer(b, base, offsets):
    got = base.type if isinstance(base, Value) else repr(base)
    raise b.error(DTypeError, f"tl.advance moves a block pointer (made by tl.make_block_ptr), not {got}",
                  hint="move a block of pointers with ptrs += offset")


def _block_pointer_rule(name):
    def register(fn):
        BlockPointer.RULES[name] = fn
        return fn
    return register


def _wrap_int32(x):
    return (x - _INT32[0]) % (1 << 32) + _INT32[0]


@_block_pointer_rule("advance")
def _advance(b, base, offsets):
    offsets = _sequence(b, offsets, "tl.advance's offsets")
    if len(offsets) != base.rank:
        raise b.error(ShapeError, f"tl.advance of a {base.rank}-D block pointer needs {base.rank} offsets, "
                      f"got {len(offsets)}")
    moved = []
    for old, delta in zip(base.offsets, _offsets(b, offsets, "tl.advance's offsets")):
        if is_const(delta) and delta == 0:
            moved.append(old)
        elif is_const(old) and is_const(delta):
            moved.append(_wrap_int32(old + delta))     # int32 addition, as the runtime one
        else:
            moved.append(binary_op(b, "add", old, delta))
    return BlockPointer(base.base, base.shape, base.strides, tuple(moved), base.block_shape, base.order, base.name)


def _boundary_check(b, p, boundary_check):
    dims = [const_value(b, d, "a boundary_check entry")
            for d in _sequence(b, const_value(b, boundary_check, "boundary_check"), "boundary_check")]
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < p.rank:
            raise b.error(ShapeError, f"boundary_check entries are dimensions of the {p.rank}-D block pointer "
                          f"(0 to {p.rank - 1}), got {d!r}")
    if len(set(dims)) != len(dims):
        raise b.error(CompileTimeError, f"boundary_check repeats a dimension: {tuple(dims)}")
    return sorted(dims)


def _named(p, value, suffix):
    """`value`, named after the block pointer's variable (`a_block_ptrs`) when it has one."""
    if p.name is not None:
        value.name = f"{p.name}_{suffix}"
    return value


def _indices(b, p, d):
    """`offset_d + arange(0, block_d)` as int64, shaped to broadcast along dimension d."""
    idx = cast(b, semantic.RULES["arange"](b, 0, p.block_shape[d]), dtypes.int64)
    offset = p.offsets[d]
    if not (is_const(offset) and offset == 0):
        idx = binary_op(b, "add", idx, offset)
    _named(p, idx, f"idx{d}")
    for axis in range(p.rank):
        if axis != d:
            idx = semantic.expand_dims(b, idx, axis)
    return idx


def _addresses(b, p, checked):
    """The pointer block of `p`'s current block, and its mask over the `checked` dimensions (None: none)."""
    pointer, mask = p.base, None
    for d in range(p.rank):
        idx = _indices(b, p, d)
        stride = p.strides[d]
        step = idx if is_const(stride) and stride == 1 else binary_op(b, "mul", idx, stride)
        pointer = binary_op(b, "add", pointer, step)
        if d in checked:
            mask = _and(b, mask, _in_bounds(b, idx, p.offsets[d], p.shape[d], p.block_shape[d]))
    return _named(p, pointer, "ptrs"), None if mask is None else _named(p, mask, "in_bounds")


def _in_bounds(b, idx, offset, size, block):
    """`0 <= idx < size`, without the comparisons constants already decide (None when both are)."""
    known_offset = is_const(offset)
    below = None if known_offset and offset >= 0 else binary_op(b, "ge", idx, 0)
    above = None if known_offset and is_const(size) and offset + block <= size else binary_op(b, "lt", idx, size)
    return _and(b, below, above)


def _and(b, x, y):
    if x is None or y is None:
        return x if y is None else y
    return logical(b, "and", x, y)


def _no_mask(b, mask, other, what):
    if mask is not None or other is not None:
        raise b.error(CompileTimeError, f"{what} through a block pointer takes no mask= or other=",
                      hint="use boundary_check=(dims...) and, for loads, padding_option='zero' or 'nan'")


@_block_pointer_rule("load")
def _load(b, pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
          eviction_policy="", volatile=False):
    _no_mask(b, mask, other, "tl.load")
    padding = const_value(b, padding_option, "padding_option") or ""
    if padding not in _PADDING:
        raise b.error(CompileTimeError, f"padding_option must be 'zero' or 'nan' (or '' for undefined), "
                      f"not {padding!r}")
    if padding == "nan" and not pointer.element_ty.is_floating():
        raise b.error(DTypeError, f"padding_option='nan' needs a floating-point block pointer, not "
                      f"{pointer.element_ty!r}")
    checked = _boundary_check(b, pointer, boundary_check)
    if padding and not checked:
        raise b.error(CompileTimeError, f"padding_option={padding!r} fills what boundary_check excludes, but "
                      "boundary_check is empty", hint="name the dimensions to check: boundary_check=(0, 1)")
    addresses, in_bounds = _addresses(b, pointer, checked)
    return semantic.RULES["load"](b, addresses, in_bounds, None if in_bounds is None else _PADDING[padding],
                                  (), "", cache_modifier, eviction_policy, volatile)


@_block_pointer_rule("store")
def _store(b, pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    _no_mask(b, mask, None, "tl.store")
    elem = pointer.element_ty
    value = semantic.to_value(b, value)
    if value.dtype is not elem:
        raise b.error(DTypeError, f"tl.store through a block pointer to {elem!r} needs a {elem!r} value, "
                      f"not {value.dtype!r}", hint=f"convert it first: value.to({elem!r})")
    if value.shape and value.shape != pointer.block_shape:
        raise b.error(ShapeError, f"tl.store through a block pointer needs a block of its shape "
                      f"{list(pointer.block_shape)} (or a scalar), got {list(value.shape)}")
    addresses, in_bounds = _addresses(b, pointer, _boundary_check(b, pointer, boundary_check))
    return store_pointers(b, addresses, value, in_bounds, (), cache_modifier, eviction_policy)
