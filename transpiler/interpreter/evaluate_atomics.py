"""The interpreter's evaluation of the atomics' IR ops: `atomic_rmw` (add, max, min, and, or, xor, xchg) and
`atomic_cas`, made and typed by `parse/semantic_atomic.py` (the value already converted to the element type,
value and mask fitted to the pointer's shape, element types, `sem` and `scope` checked).

Programs run one after another, so an atomic is a read-modify-write of the buffer: each active element (mask
true, or no mask), in row-major lane order, reads the current value, returns it and writes the combination.
Elements that hit the same address see each other's updates in that order (a histogram's bins count every
lane). Lanes are applied in rounds that each touch an address at most once, so the work is vectorized.
Masked-off elements do nothing and return 0. fp32/fp64 max and min compare the bits as Triton's pair of
integer atomics does (which decides NaN and -0.0), and compare-and-swap compares bits, as the hardware does;
`sem` and `scope` do not change what a sequential run computes.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..parse.ir import OpKind
from ..numerics import storage as numeric


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


def _apply(ptr, mask, combine, operands, what: str):
    """Run `combine(current, *operands)` element by element (row-major lane order); return the old values."""
    from .pointers import check_bounds      # here: pointers.py imports tensor.py, which imports this module's user
    elem, shape = ptr.dtype.element_ty, ptr.type.shape
    offsets = np.broadcast_to(ptr.data, shape)
    mask = None if mask is None else np.broadcast_to(mask.data, shape)
    check_bounds(ptr.buffer, offsets, mask, what)
    memory = ptr.buffer.values
    flat_active = np.ones(offsets.size, bool) if mask is None else np.ravel(mask)
    lanes = np.flatnonzero(flat_active)
    addresses = np.ravel(offsets)[lanes]
    values = [np.ravel(np.broadcast_to(o.data, shape))[lanes] for o in operands]
    old = np.zeros(offsets.size, dtype=numeric.storage_dtype(elem))
    rank = _rounds(addresses)
    for k in range(int(rank.max()) + 1 if len(rank) else 0):
        sel = rank == k
        current = memory[addresses[sel]]
        old[lanes[sel]] = current
        memory[addresses[sel]] = combine(current, *(v[sel] for v in values))
    ptr.buffer.mark_written()
    return old.reshape(shape)


def _atomic_rmw(attrs, result_type, operands):
    ptr, value = operands[:2]
    mask = operands[2] if len(operands) > 2 else None
    elem, op = ptr.dtype.element_ty, attrs["op"]
    return _apply(ptr, mask, lambda cur, x: _COMBINE[op](cur, x, elem), [value], f"tl.atomic_{op}"), None


def _atomic_cas(attrs, result_type, operands):
    ptr, cmp, value = operands
    elem = ptr.dtype.element_ty

    def swap(cur, c, v):
        return np.where(numeric.to_bits(cur, elem) == numeric.to_bits(c, elem), v, cur)
    return _apply(ptr, None, swap, [cmp, value], "tl.atomic_cas"), None


EVALUATE_ATOMICS = {OpKind.ATOMIC_RMW: _atomic_rmw, OpKind.ATOMIC_CAS: _atomic_cas}
