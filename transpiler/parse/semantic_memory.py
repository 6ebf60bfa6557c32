"""Typing rules of tl.load and tl.store through a pointer or a block of pointers: the mask and `other`, their
broadcasting with the pointer, the cache and eviction options. (Block pointers have their own rules, in
`semantic_block_ptr.py`; atomics in `semantic_atomic.py`.)"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import CompileTimeError, DTypeError, ShapeError
from .ir import OpKind, Type, Value
from .semantic import (broadcast_shapes, broadcast_to_shape, cast, const_value, constant, is_const, lift_rank, rule,
                       splat, to_value)


def _check_pointer(b, ptr, what):
    if is_const(ptr) or not ptr.dtype.is_ptr():
        raise b.error(DTypeError, f"{what} needs a pointer (or a block of pointers), not "
                      f"{ptr.type if isinstance(ptr, Value) else type(ptr).__name__}",
                      hint="pass an array argument plus offsets, e.g. X + offs")


_CACHE_MODIFIERS = {"", ".ca", ".cg", ".cs", ".cv", ".lu", ".wb", ".wt"}
_EVICTION = {"", "evict_first", "evict_last", "evict_normal"}


def _memory_attrs(b, cache_modifier, eviction_policy):
    cache_modifier = const_value(b, cache_modifier, "cache_modifier") or ""
    eviction_policy = const_value(b, eviction_policy, "eviction_policy") or ""
    if cache_modifier not in _CACHE_MODIFIERS:
        raise b.error(CompileTimeError, f"unknown cache_modifier {cache_modifier!r}; "
                      f"use one of {sorted(_CACHE_MODIFIERS - {''})}")
    if eviction_policy not in _EVICTION:
        raise b.error(CompileTimeError, f"unknown eviction_policy {eviction_policy!r}; "
                      f"use one of {sorted(_EVICTION - {''})}")
    return cache_modifier, eviction_policy


def _mask_value(b, mask, what):
    """The mask as an int1 value, or None when it is the constant True. Like Triton, a mask must be boolean."""
    if is_const(mask):
        if not isinstance(mask, (bool, np.bool_)):
            raise b.error(DTypeError, f"the mask of {what} must be boolean, not {mask!r}")
        return None if mask else constant(b, False)
    if mask.dtype is not dtypes.int1:
        raise b.error(DTypeError, f"the mask of {what} must be a boolean block (int1), not {mask.type}",
                      hint="build it with a comparison, e.g. mask=offs < n, or convert with x != 0")
    return mask


def _no_block_with_scalar_pointer(b, pointer, v, what):
    if not pointer.shape and v is not None and v.shape:
        raise b.error(ShapeError, f"{what} of shape {list(v.shape)} cannot go with a scalar pointer",
                      hint="make the pointer a block: ptr + tl.arange(...)")


def _no_block_pointer_options(b, boundary_check, padding_option, what):
    if const_value(b, boundary_check, "boundary_check") or const_value(b, padding_option, "padding_option"):
        raise b.error(CompileTimeError, f"{what}: boundary_check and padding_option apply to block pointers "
                      "(tl.make_block_ptr) only", hint="mask a block of pointers with mask= (and other=)")


@rule("load")
def _load(b, pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
          eviction_policy="", volatile=False):
    _check_pointer(b, pointer, "tl.load")
    _no_block_pointer_options(b, boundary_check, padding_option, "tl.load")
    elem = pointer.dtype.element_ty
    m = _mask_value(b, mask, "tl.load") if mask is not None else None
    o = None
    if m is not None:
        o = cast(b, to_value(b, other if other is not None else 0, elem if is_const(other) else None), elem)
    # As in Triton, the pointer broadcasts with the mask and with `other`, both ways.
    for v, what in ((m, "a mask"), (o, "`other`")):
        _no_block_with_scalar_pointer(b, pointer, v, f"tl.load: {what}")
        if v is not None and v.shape:
            shape = broadcast_shapes(b, pointer.shape, v.shape)
            pointer = broadcast_to_shape(b, lift_rank(b, pointer, len(shape)), shape) if pointer.shape \
                else splat(b, pointer, shape)
    shape = pointer.shape
    operands = [pointer]
    if m is not None:
        operands += [broadcast_to_shape(b, m, shape), broadcast_to_shape(b, o, shape)]
    cm, ev = _memory_attrs(b, cache_modifier, eviction_policy)
    return b.emit(OpKind.LOAD, operands, Type(elem, shape), cache=cm, eviction=ev,
                  volatile=bool(const_value(b, volatile, "volatile")))


def refuse_const_pointer(b, pointer, what):
    """Triton's rule: nothing is written through a const pointer (a `tl.const` parameter, a pointer computed
    from one): a store or an atomic other than `atomic_cas` (which Triton does not check) is refused."""
    if pointer.dtype.is_const():
        raise b.error(DTypeError, f"Cannot store to a constant pointer: {what} through a {pointer.dtype!r} (a "
                      "parameter annotated tl.const, or a pointer computed from one)",
                      hint="write through a parameter without the tl.const annotation")


@rule("store")
def _store(b, pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    _check_pointer(b, pointer, "tl.store")
    refuse_const_pointer(b, pointer, "tl.store")
    return store_pointers(b, pointer, value, mask, boundary_check, cache_modifier, eviction_policy)


def store_pointers(b, pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """`tl.store` through a pointer or a block of pointers, const or not: a block pointer's or a tensor
    descriptor's store comes here with the addresses it computed (Triton lets those write, whatever their
    base)."""
    _no_block_pointer_options(b, boundary_check, "", "tl.store")
    elem = pointer.dtype.element_ty
    v = to_value(b, value, elem if is_const(value) else None)
    if v.dtype.is_ptr() and not elem.is_ptr():
        raise b.error(DTypeError, f"cannot store pointers through a pointer to {elem!r}",
                      hint="store the values: tl.store(P, tl.load(Q)), or the address: (Q).to(tl.int64)")
    if v.shape and not pointer.shape:
        raise b.error(ShapeError, f"storing a block of shape {list(v.shape)} through a scalar pointer",
                      hint="make the pointer a block: ptr + tl.arange(...)")
    if v.shape and (len(v.shape) != len(pointer.shape) or
                    any(s != p and s != 1 for s, p in zip(v.shape, pointer.shape))):
        raise b.error(ShapeError, f"value shape {list(v.shape)} does not fit pointer shape {list(pointer.shape)}",
                      hint="a stored value must have the pointer block's shape (size-1 axes stretch)")
    v = cast(b, v, elem)
    shape = pointer.shape
    if v.shape != shape:
        v = broadcast_to_shape(b, v, shape)
    operands = [pointer, v]
    if mask is not None:
        m = _mask_value(b, mask, "tl.store")
        if m is not None and not m.shape and is_const(mask):
            return None                    # mask=False: nothing to store
        if m is not None:
            _no_block_with_scalar_pointer(b, pointer, m, "tl.store: a mask")
            operands.append(broadcast_to_shape(b, m, shape))
    cm, ev = _memory_attrs(b, cache_modifier, eviction_policy)
    b.emit(OpKind.STORE, operands, None, cache=cm, eviction=ev)
    return None
