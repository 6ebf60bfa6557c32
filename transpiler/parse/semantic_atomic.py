"""Typing rules of the atomics: `tl.atomic_add/max/min/and/or/xor/xchg` and `tl.atomic_cas`.

Every read-modify-write becomes one `atomic_rmw` op (attribute `op`: add, max, min, and, or, xor, xchg) with
operands pointer, value and optionally mask; a compare-and-swap becomes one `atomic_cas` op with operands
pointer, cmp and value. Both carry `sem` and `scope` and give the old values, typed like the pointer's
elements and shaped like the pointer. As in Triton, the value and the mask are fitted to the pointer's shape
(a scalar splats, size-1 axes stretch) and the value is converted to the element type; which element types
each operation takes is in `transpiler/atomics.py`, shared with the interpreter.
"""
from __future__ import annotations

from .. import atomics
from ..errors import CompileTimeError, DTypeError, ShapeError
from .ir import OpKind, Type
from .semantic import RULES, broadcast_to_shape, cast, const_value, is_const, to_value
from .semantic_memory import _check_pointer, _mask_value, refuse_const_pointer


def _ordering(b, sem, scope, what):
    sem, why = atomics.semantic_or_error(const_value(b, sem, f"the sem= of {what}"))
    if why:
        raise b.error(CompileTimeError, why)
    scope, why = atomics.scope_or_error(const_value(b, scope, f"the scope= of {what}"))
    if why:
        raise b.error(CompileTimeError, why)
    return sem, scope


def _fit(b, v, pointer, what):
    """`v` (a Value) fitted to the pointer's shape the way Triton's `broadcast_impl_shape` does."""
    if v.shape and not pointer.shape:
        raise b.error(ShapeError, f"{what} of shape {list(v.shape)} cannot go with a scalar pointer",
                      hint="make the pointer a block: ptr + tl.arange(...)")
    if v.shape and (len(v.shape) != len(pointer.shape) or
                    any(s != p and s != 1 for s, p in zip(v.shape, pointer.shape))):
        raise b.error(ShapeError, f"{what} of shape {list(v.shape)} does not fit the pointer's shape "
                      f"{list(pointer.shape)}", hint="size-1 axes stretch; other axes must match")
    return broadcast_to_shape(b, v, pointer.shape) if pointer.shape else v


def _operand(b, x, pointer, what):
    """A value operand: Python numbers take the element type; blocks must not be pointers."""
    elem = pointer.dtype.element_ty
    v = to_value(b, x, elem if is_const(x) else None)
    if v.dtype.is_ptr():
        raise b.error(DTypeError, f"{what} cannot be a pointer", hint="pass the values, e.g. tl.load(Q)")
    return _fit(b, v, pointer, what)


def _rmw(op):
    def apply(b, pointer, val, mask=None, sem=None, scope=None):
        what = f"tl.atomic_{op}"
        _check_pointer(b, pointer, what)
        refuse_const_pointer(b, pointer, what)
        elem = pointer.dtype.element_ty
        why = atomics.rmw_dtype_error(op, elem)
        if why:
            raise b.error(DTypeError, why)
        sem, scope = _ordering(b, sem, scope, what)
        operands = [pointer, cast(b, _operand(b, val, pointer, f"the value of {what}"), elem)]
        if mask is not None:
            m = _mask_value(b, mask, what)
            if m is not None:
                operands.append(_fit(b, m, pointer, f"the mask of {what}"))
        return b.emit(OpKind.ATOMIC_RMW, operands, Type(elem, pointer.shape), op=op, sem=sem, scope=scope)
    return apply


for _op in atomics.RMW_OPS:
    RULES[f"atomic_{_op}"] = _rmw(_op)


def _cas_operand(b, x, pointer, what):
    """Triton does not convert cmp and val: a block must already have the element type (numbers take it)."""
    v = _operand(b, x, pointer, what)
    elem = pointer.dtype.element_ty
    if v.dtype is not elem:
        raise b.error(DTypeError, f"{what} is {v.dtype!r} but the pointer's elements are {elem!r}",
                      hint=f"convert it first: x.to({elem!r})")
    return v


def _atomic_cas(b, pointer, cmp, val, sem=None, scope=None):
    _check_pointer(b, pointer, "tl.atomic_cas")
    elem = pointer.dtype.element_ty
    why = atomics.cas_dtype_error(elem)
    if why:
        raise b.error(DTypeError, why)
    sem, scope = _ordering(b, sem, scope, "tl.atomic_cas")
    operands = [pointer, _cas_operand(b, cmp, pointer, "cmp of tl.atomic_cas"),
                _cas_operand(b, val, pointer, "val of tl.atomic_cas")]
    return b.emit(OpKind.ATOMIC_CAS, operands, Type(elem, pointer.shape), sem=sem, scope=scope)


RULES["atomic_cas"] = _atomic_cas
