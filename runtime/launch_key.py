"""The specialization key of one launch, computed in one pass over the arguments and cheap enough to run on
every launch.

Decides, per argument, the key part that selects a compiled variant, as Triton does: for pointers the element
type and whether the address is 16-byte aligned; for integers int32 / uint32 / int64 / uint64 by value,
whether the value is 1 (then folded to the constant 1) and whether it is divisible by 16; Python floats are
fp32, bools int1; NumPy scalars keep their type; constexprs by value. The same pass collects what the launch
needs: the value of each runtime parameter slot (an address or a scalar), the device holding the arrays and
which frameworks they come from. `analysis/specialization.py` turns the key parts back into what the IR
builder is told.

Speed: the parts are shared tuples made once (no allocation per argument), and the common argument types
(CuPy arrays, torch tensors, Python ints and floats) are recognised by `type(x) is ...` before anything
general runs. Everything else goes through `args.array_info`, slower and general.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import LaunchError
from ..language.core import constexpr
from .args import ALIGNMENT, array_info

# Framework bits of a launch: they choose the stream (torch's current stream when any tensor is a torch one).
TORCH, CUPY, FOREIGN, HOST = 1, 2, 4, 8

NO_DEVICE = -1

FP32 = ("fp32",)
INT1 = ("int1",)
_INT_PARTS = {}          # (dtype name, equal to one, divisible by 16) -> the one shared tuple
_PTR_PARTS = {}          # array dtype object (NumPy, torch) -> (unaligned part, aligned part)
_PTR_BY_NAME = {}        # our dtype name -> the same pair


def int_part(name: str, value: int):
    part = (name, value == 1, value % 16 == 0)
    return _INT_PARTS.setdefault(part, part)


_I32_PLAIN, _I32_ONE, _I32_DIV16 = int_part("int32", 3), int_part("int32", 1), int_part("int32", 16)


def integer_dtype(value: int):
    if -2**31 <= value < 2**31:
        return dtypes.int32
    if 2**31 <= value < 2**32:
        return dtypes.uint32
    if -2**63 <= value < 2**63:
        return dtypes.int64
    return dtypes.uint64


def scalar_key(value):
    """Key part of a non-array argument (TypeError for anything that is not a scalar)."""
    if isinstance(value, (bool, np.bool_)):
        return INT1
    if isinstance(value, int):
        return int_part(integer_dtype(value).name, value)
    if isinstance(value, float):
        return FP32
    if isinstance(value, np.generic):
        dt = dtypes.from_array_dtype(value.dtype)
        if dt.is_int():
            return int_part(dt.name, int(value))
        return (dt.name,)
    raise TypeError(f"unsupported argument type {type(value).__name__}")


def pointer_parts(array_dtype):
    """(unaligned, aligned) key parts for arrays of `array_dtype` (a NumPy or torch dtype, or ours)."""
    if isinstance(array_dtype, dtypes.dtype):
        return _by_name(array_dtype.name)
    parts = _PTR_PARTS.get(array_dtype)
    if parts is None:
        parts = _PTR_PARTS[array_dtype] = _by_name(dtypes.from_array_dtype(array_dtype).name)
    return parts


def _by_name(name):
    parts = _PTR_BY_NAME.get(name)
    if parts is None:
        parts = _PTR_BY_NAME[name] = (("ptr", name, False), ("ptr", name, True))
    return parts


def constexpr_key(value):
    """Key part of a constexpr: the value itself for ints and strings (the usual BLOCK sizes and flags), a
    tagged tuple otherwise so that 1, True and 1.0 select different variants."""
    t = type(value)
    if t is int or t is str:
        return value
    if t is bool or t is float:
        return (t.__name__, value)
    if isinstance(value, (list, tuple)):
        return tuple(constexpr_key(v) for v in value)
    if isinstance(value, dtypes.dtype):
        return ("dtype", value.name)
    if value is None:
        return None
    return (type(value).__name__, repr(value))


class _NeverAType:
    """Stands for CuPy's ndarray and torch's Tensor until one is seen, so nothing imports them early."""


_cupy_ndarray = _NeverAType
_torch_tensor = _NeverAType


def _learn_type(value):
    """Remember CuPy's / torch's array type the first time one is passed (for the `type(x) is` tests)."""
    global _cupy_ndarray, _torch_tensor
    t = type(value)
    mod = t.__module__
    if mod.startswith("cupy") and t.__name__ == "ndarray":
        _cupy_ndarray = t
    elif mod.startswith("torch") and t.__name__ == "Tensor":
        _torch_tensor = t


def launch_facts(constexpr_mask, args, names, kernel_name, host_ok=False):
    """One pass over the arguments (in parameter order): `(key parts, slot values, device, framework bits)`.

    `key parts` is a list with one part per parameter; `slot values` one value per runtime parameter (an
    address for arrays); `device` is the device holding the arrays (NO_DEVICE when there are none). Arrays on
    two devices, or in host memory when `host_ok` is false, raise `LaunchError` here, before any launch.
    """
    key = []
    values = []
    device = NO_DEVICE
    first_array = -1
    frameworks = 0
    for index, (is_constexpr, v) in enumerate(zip(constexpr_mask, args)):
        t = type(v)
        if is_constexpr:
            if t is constexpr:
                v = v.value
                t = type(v)
            key.append(v if t is int or t is str else constexpr_key(v))
            continue
        if t is int:
            if -2147483648 <= v <= 2147483647:
                key.append(_I32_ONE if v == 1 else (_I32_DIV16 if v & 15 == 0 else _I32_PLAIN))
            else:
                key.append(scalar_key(v))
            values.append(v)
            continue
        if t is float:
            key.append(FP32)
            values.append(v)
            continue
        if t is _cupy_ndarray:
            mem = v.data
            ptr = mem.ptr
            dev = mem.device_id
            parts = _PTR_PARTS.get(v.dtype) or _parts(v.dtype, names[index], kernel_name)
            frameworks |= CUPY
        elif t is _torch_tensor:
            ptr = v.data_ptr()
            dev = v.get_device()
            if dev < 0:
                if not host_ok:
                    raise _host_error(kernel_name, names[index], "torch-cpu")
                frameworks |= HOST
            else:
                frameworks |= TORCH
            parts = _PTR_PARTS.get(v.dtype) or _parts(v.dtype, names[index], kernel_name)
        elif t is bool or isinstance(v, np.generic):
            key.append(_scalar_part(v, names[index], kernel_name))
            values.append(v)
            continue
        else:
            info = _general(v, names[index], kernel_name)
            if info is None:
                raise LaunchError(f"argument '{names[index]}' has unsupported type {t.__name__}", kernel=kernel_name)
            ptr, dev, parts = info.ptr, info.device, _parts(info.dtype, names[index], kernel_name)
            if dev is None:
                if not host_ok:
                    raise _host_error(kernel_name, names[index], info.framework)
                frameworks |= HOST
                dev = NO_DEVICE
            else:
                frameworks |= TORCH if info.framework == "torch" else FOREIGN
        key.append(parts[ptr % ALIGNMENT == 0])
        values.append(ptr)
        if dev != device and dev != NO_DEVICE:
            if device != NO_DEVICE:
                raise LaunchError(
                    f"arguments live on different devices: '{names[first_array]}' on device {device}, "
                    f"'{names[index]}' on device {dev}", kernel=kernel_name, hint="copy them to one device first")
            device, first_array = dev, index
    return key, values, device, frameworks


def _general(v, name, kernel_name):
    _learn_type(v)
    try:
        return array_info(v)
    except TypeError as e:
        raise LaunchError(f"argument '{name}': {e}", kernel=kernel_name) from None


def _parts(array_dtype, name, kernel_name):
    try:
        return pointer_parts(array_dtype)
    except TypeError as e:
        raise LaunchError(f"argument '{name}': {e}", kernel=kernel_name) from None


def _scalar_part(v, name, kernel_name):
    try:
        return scalar_key(v)
    except TypeError:
        raise LaunchError(f"argument '{name}' has unsupported type {type(v).__name__}", kernel=kernel_name) from None


def _host_error(kernel_name, name, framework):
    return LaunchError(f"argument '{name}' is in host memory ({framework}); a GPU launch needs device arrays",
                       kernel=kernel_name,
                       hint="move it with cupy.asarray(...) or tensor.cuda(), or run kernel.interpret[grid](...)")
