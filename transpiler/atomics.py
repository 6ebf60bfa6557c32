"""What Triton's atomics accept: the element types of each operation, the memory orders and the scopes.

Read by the typing rules (`parse/semantic_atomic.py`), which the CPU interpreter runs too, so both reject the
same kernels with the same words. Each check returns an error message, or None when the
argument is fine; the caller raises its own error class at the kernel line.

The rules follow Triton 3.6: fp16 and bf16 only with `add`; no 8-bit, 16-bit integer or boolean elements;
`max`/`min` on 32- and 64-bit integers (signed or unsigned) and on fp32/fp64; the bitwise operations on
integers; `xchg` on any 32- or 64-bit element; `cas` on 16-, 32- and 64-bit elements.
"""
from __future__ import annotations

from . import dtypes

RMW_OPS = ("add", "max", "min", "and", "or", "xor", "xchg")

# Memory orders (PTX .sem) and scopes (PTX .scope) by their Triton names; the first is the default.
SEMANTICS = ("acq_rel", "acquire", "release", "relaxed")
SCOPES = ("gpu", "cta", "sys")


def rmw_dtype_error(op: str, elem: dtypes.dtype) -> str | None:
    """Why `tl.atomic_<op>` cannot update `elem` elements (None when it can)."""
    name = f"tl.atomic_{op}"
    if elem.is_ptr():
        return f"{name} cannot update pointers"
    if elem in (dtypes.float16, dtypes.bfloat16) and op != "add":
        return f"{name} does not support {elem!r} (of the atomics, only tl.atomic_add takes 16-bit floats)"
    if elem.bits < 32 and elem not in (dtypes.float16, dtypes.bfloat16):
        return f"{name} does not support {elem!r}: atomics need 32- or 64-bit elements (or fp16/bf16 for add)"
    if op in ("and", "or", "xor") and not elem.is_int():
        return f"{name} needs integer elements, not {elem!r}"
    return None


def cas_dtype_error(elem: dtypes.dtype) -> str | None:
    """Why `tl.atomic_cas` cannot update `elem` elements (None when it can)."""
    if elem.is_ptr() or elem.bits not in (16, 32, 64):
        return f"tl.atomic_cas needs 16-, 32- or 64-bit elements, not {elem!r}"
    return None


def semantic_or_error(sem) -> tuple[str | None, str | None]:
    """(the memory order, None) for `sem=` (None means acq_rel), or (None, why it is not one)."""
    if sem is None or sem == "":
        return SEMANTICS[0], None
    if sem not in SEMANTICS:
        return None, f"unknown memory order sem={sem!r}; use one of {', '.join(repr(s) for s in SEMANTICS)}"
    return sem, None


def scope_or_error(scope) -> tuple[str | None, str | None]:
    """(the scope, None) for `scope=` (None means gpu), or (None, why it is not one)."""
    if scope is None or scope == "":
        return SCOPES[0], None
    if scope not in SCOPES:
        return None, f"unknown scope={scope!r}; use one of {', '.join(repr(s) for s in SCOPES)}"
    return scope, None
