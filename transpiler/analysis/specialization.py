"""Argument specialization, as Triton does it: what a launch's argument values let the compiler assume.

The runtime computes, on every launch, one key part per argument (`runtime/launch_key.py`: for pointers the
element type and whether the address is 16-byte aligned; for integers their type by value, whether the value
is 1 and whether it is divisible by 16). `arg_spec` turns a key part back into what the IR builder is told:
16-byte divisibility of pointers, divisibility by 16 of integers, integers equal to one folded to a constant.
"""
from __future__ import annotations

from .. import dtypes
from ..parse.signature import ArgSpec

ALIGNMENT = 16


def arg_spec(name, key_part, constexpr_value=None, is_constexpr=False) -> ArgSpec:
    """Turn one argument's key part back into what the IR builder is told."""
    if is_constexpr:
        return ArgSpec(name, constexpr=constexpr_value, is_constexpr=True)
    kind = key_part[0]
    if kind == "none":       # None for a pointer: None in the kernel, an unused pointer parameter in C
        return ArgSpec(name, dtypes.pointer_type(dtypes.int8), constexpr=None, is_none=True)
    if kind == "ptr":
        return ArgSpec(name, dtypes.pointer_type(dtypes.by_name(key_part[1])),
                       divisibility=ALIGNMENT if key_part[2] else 1)
    dt = dtypes.by_name(kind)
    if dt.is_int() and len(key_part) == 3:
        return ArgSpec(name, dt, divisibility=16 if key_part[2] else 1, equal_to_one=key_part[1])
    return ArgSpec(name, dt)
