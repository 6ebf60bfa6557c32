"""Argument specialization, as Triton does it: what a launch's argument values let the compiler assume.

Decides, per argument, the key part that selects a compiled variant: for pointers the element type and
whether the address is 16-byte aligned; for integers int32 or int64 by value, whether the value is 1 (then
folded to the constant 1) and whether it is divisible by 16; floats are fp32, bools int1; constexprs by
value. The runtime calls `spec_key` on every launch, so it is kept to a few cheap checks per argument.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..parse.signature import ArgSpec

ALIGNMENT = 16


def integer_dtype(value: int):
    if -2**31 <= value < 2**31:
        return dtypes.int32
    if 2**31 <= value < 2**32:
        return dtypes.uint32
    if -2**63 <= value < 2**63:
        return dtypes.int64
    return dtypes.uint64


def scalar_key(value):
    """Key part of a non-array argument."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return ("int1",)
    if isinstance(value, int):
        dt = integer_dtype(value)
        return (dt.name, value == 1, value % 16 == 0)
    if isinstance(value, float):
        return ("fp32",)
    if isinstance(value, np.generic):
        dt = dtypes.from_array_dtype(value.dtype)
        if dt.is_int():
            v = int(value)
            return (dt.name, v == 1, v % 16 == 0)
        return (dt.name,)
    raise TypeError(f"unsupported argument type {type(value).__name__}")


def arg_spec(name, key_part, constexpr_value=None, is_constexpr=False) -> ArgSpec:
    """Turn one argument's key part back into what the IR builder is told."""
    if is_constexpr:
        return ArgSpec(name, constexpr=constexpr_value, is_constexpr=True)
    kind = key_part[0]
    if kind == "ptr":
        return ArgSpec(name, dtypes.pointer_type(dtypes.by_name(key_part[1])),
                       divisibility=ALIGNMENT if key_part[2] else 1)
    dt = dtypes.by_name(kind)
    if dt.is_int() and len(key_part) == 3:
        return ArgSpec(name, dt, divisibility=16 if key_part[2] else 1, equal_to_one=key_part[1])
    return ArgSpec(name, dt)
