"""Interpreter rules of the atomics: `tl.atomic_add/max/min/and/or/xor/xchg` and `tl.atomic_cas`.

Programs run one after another, so an atomic is a read-modify-write of the buffer: each active element (mask
true, or no mask), in row-major lane order, reads the current value, returns it and writes the combination.
Elements that hit the same address see each other's updates in that order (a histogram's bins count every
lane). Lanes are applied in rounds that each touch an address at most once, so the work is vectorized.
Masked-off elements do nothing and return 0. fp32/fp64 max and min compare the bits as Triton's pair of
integer atomics does (which decides NaN and -0.0), and compare-and-swap compares bits, as the hardware does.
Which element types each operation takes, and the `sem`/`scope` names, come from `transpiler/atomics.py`,
shared with the compiler; `sem` and `scope` do not change what a sequential run computes.
"""
from __future__ import annotations

import numpy as np

from .. import atomics
from .. import dtypes as dt
from ..errors import CompileTimeError, DTypeError
from . import numeric
from .location import error
from .pointers import Pointer, _mask_tensor, _no_blocks_with_scalar_pointer, check_bounds, require_pointer
from .registry import rule
from .shapes import fit_to_shape
from .tensor import Tensor, is_python_number, scalar_tensor, to_tensor, unwrap


def _check_ordering(sem, scope):
    for value, check in ((sem, atomics.semantic_or_error), (scope, atomics.scope_or_error)):
        _, why = check(unwrap(value))
        if why:
            raise error(CompileTimeError, why)


def _operand(x, ptr: Pointer, what: str) -> Tensor:
    """A value operand fitted to the pointer's shape; Python numbers take the element type."""
    x = unwrap(x)
    if isinstance(x, Pointer):
        raise error(DTypeError, f"{what} cannot be a pointer")
    elem = ptr.dtype.element_ty
    t = scalar_tensor(x, elem) if is_python_number(x) else to_tensor(x, what)
    _no_blocks_with_scalar_pointer(ptr, t, what)
    return fit_to_shape(t, ptr.shape, what)


def _float_minmax(cur, v, dtype, op):
    """Triton's rule: for a value whose sign bit is clear, a signed integer max (min) of the bits; for one whose
    sign bit is set, an unsigned integer min (max)."""
    s_cur, s_v = numeric.signed_view(cur, dtype), numeric.signed_view(v, dtype)
    u_cur, u_v = numeric.to_bits(cur, dtype), numeric.to_bits(v, dtype)
    if op == "max":
        signed, unsigned = np.maximum(s_cur, s_v), np.minimum(u_cur, u_v)
    else:
        signed, unsigned = np.minimum(s_cur, s_v), np.maximum(u_cur, u_v)
    return numeric.from_bits(np.where(s_v >= 0, signed.astype(u_cur.dtype), unsigned), dtype)


def _add(cur, v, dtype):
    if dtype is dt.bfloat16:
        return numeric.finish(cur + v, dtype)      # fp32 sum of two bf16, rounded once to bf16
    return cur + v                                  # integers wrap; fp16 rounds once (NumPy adds via fp32)


_COMBINE = {
    "add": _add,
    "max": lambda cur, v, dtype: (_float_minmax(cur, v, dtype, "max") if dtype.is_floating()
                                  else np.maximum(cur, v)),
    "min": lambda cur, v, dtype: (_float_minmax(cur, v, dtype, "min") if dtype.is_floating()
                                  else np.minimum(cur, v)),
    "and": lambda cur, v, dtype: cur & v,
    "or": lambda cur, v, dtype: cur | v,
    "xor": lambda cur, v, dtype: cur ^ v,
    "xchg": lambda cur, v, dtype: v,
}


def _rounds(addresses: np.ndarray) -> np.ndarray:
    """For each lane, how many earlier lanes hit the same address: lanes of equal rank touch distinct addresses."""
    order = np.argsort(addresses, kind="stable")
    ordered = addresses[order]
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(ordered)), 0))
    rank = np.empty(len(ordered), dtype=np.int64)
    rank[order] = np.arange(len(ordered)) - group_start
    return rank


def _apply(ptr: Pointer, mask, combine, operands, what: str) -> Tensor:
    """Run `combine(current, *operands)` element by element (row-major lane order); return the old values."""
    elem = ptr.dtype.element_ty
    if mask is not None:
        _no_blocks_with_scalar_pointer(ptr, mask, f"the mask of {what}")
        mask = fit_to_shape(mask, ptr.shape, f"the mask of {what}").data
    check_bounds(ptr.buffer, ptr.data, mask, what)
    memory = ptr.buffer.values
    flat_active = np.ones(ptr.data.size, bool) if mask is None else np.ravel(mask)
    lanes = np.flatnonzero(flat_active)
    addresses = np.ravel(ptr.data)[lanes]
    values = [np.ravel(np.broadcast_to(o.data, ptr.shape))[lanes] for o in operands]
    old = np.zeros(ptr.data.size, dtype=numeric.storage_dtype(elem))
    rank = _rounds(addresses)
    for k in range(int(rank.max()) + 1 if len(rank) else 0):
        sel = rank == k
        current = memory[addresses[sel]]
        old[lanes[sel]] = current
        memory[addresses[sel]] = combine(current, *(v[sel] for v in values))
    ptr.buffer.mark_written()
    return Tensor(old.reshape(ptr.shape), elem)


def _rmw(op):
    def apply(pointer, val, mask=None, sem=None, scope=None):
        what = f"tl.atomic_{op}"
        ptr = require_pointer(pointer, what)
        elem = ptr.dtype.element_ty
        why = atomics.rmw_dtype_error(op, elem)
        if why:
            raise error(DTypeError, why)
        _check_ordering(sem, scope)
        v = _operand(val, ptr, f"the value of {what}")
        v = Tensor(numeric.cast(v.data, v.dtype, elem), elem)
        m = _mask_tensor(mask, what)
        return _apply(ptr, m, lambda cur, x: _COMBINE[op](cur, x, elem), [v], what)
    apply.__name__ = f"atomic_{op}"
    return apply


for _op in atomics.RMW_OPS:
    rule(f"atomic_{_op}")(_rmw(_op))


@rule("atomic_cas")
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    ptr = require_pointer(pointer, "tl.atomic_cas")
    elem = ptr.dtype.element_ty
    why = atomics.cas_dtype_error(elem)
    if why:
        raise error(DTypeError, why)
    _check_ordering(sem, scope)
    operands = []
    for x, what in ((cmp, "cmp of tl.atomic_cas"), (val, "val of tl.atomic_cas")):
        t = _operand(x, ptr, what)
        if t.dtype is not elem:
            raise error(DTypeError, f"{what} is {t.dtype!r} but the pointer's elements are {elem!r}",
                        hint=f"convert it first: x.to({elem!r})")
        operands.append(t)

    def swap(cur, c, v):
        return np.where(numeric.to_bits(cur, elem) == numeric.to_bits(c, elem), v, cur)
    return _apply(ptr, None, swap, operands, "tl.atomic_cas")
