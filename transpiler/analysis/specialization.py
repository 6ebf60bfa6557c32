"""Argument specialization, as Triton does it: what a launch's argument values let the compiler assume.

The runtime computes, on every launch, one key part per argument (`runtime/launch_key.py`: for pointers the
element type and the address's alignment, 1 to 16 bytes; for integers their type by value, whether the value
is 1 and the largest of 1, 2, 4, 8, 16 dividing it). `arg_spec` turns a key part back into what the IR builder
is told: the alignment of pointers in bytes, the divisibility of integers in elements, integers equal to one
folded to a constant. Axis info carries these through address arithmetic, so a row stride known to be a
multiple of 4 makes every row of an fp32 block 16-byte aligned.
"""
from __future__ import annotations

from .. import dtypes
from ..parse.signature import ArgSpec


def arg_spec(name, key_part, constexpr_value=None, is_constexpr=False) -> ArgSpec:
    """Turn one argument's key part back into what the IR builder is told."""
    if is_constexpr:
        return ArgSpec(name, constexpr=constexpr_value, is_constexpr=True)
    kind = key_part[0]
    if kind == "none":       # None for a pointer: None in the kernel, an unused pointer parameter in C
        return ArgSpec(name, dtypes.pointer_type(dtypes.int8), constexpr=None, is_none=True)
    if kind == "ptr":
        return ArgSpec(name, dtypes.pointer_type(dtypes.by_name(key_part[1])),
                       divisibility=key_part[2])
    dt = dtypes.by_name(kind)
    if dt.is_int() and len(key_part) == 3:
        return ArgSpec(name, dt, divisibility=key_part[2], equal_to_one=key_part[1])
    return ArgSpec(name, dt)
