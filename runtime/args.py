"""Launch arguments: recognise arrays from any framework, find their device and stream, pack kernel values.

Accepted: CuPy arrays, anything with `__cuda_array_interface__` (torch CUDA tensors, Numba, ...), DLPack
capsules' owners (`__dlpack__`), NumPy arrays (only for `cuda_source` and the interpreter: a GPU launch
refuses host memory), and Python / NumPy scalars.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_array_dtype

ALIGNMENT = 16


class ArrayInfo:
    """What a launch needs from one array argument."""

    __slots__ = ("ptr", "dtype", "device", "framework", "obj")

    def __init__(self, ptr, dtype, device, framework, obj):
        self.ptr = ptr
        self.dtype = dtype
        self.device = device
        self.framework = framework
        self.obj = obj


def _torch_info(t):
    if t.device.type != "cuda":
        return ArrayInfo(t.data_ptr(), from_array_dtype(t.dtype), None, "torch-cpu", t)
    return ArrayInfo(t.data_ptr(), from_array_dtype(t.dtype), t.device.index, "torch", t)


def array_info(x):
    """ArrayInfo for an array-like argument, or None for scalars."""
    mod = type(x).__module__
    if mod.startswith("cupy"):
        if hasattr(x, "data") and hasattr(x, "device"):
            return ArrayInfo(x.data.ptr, from_array_dtype(x.dtype), x.device.id, "cupy", x)
    if mod.startswith("torch"):
        return _torch_info(x)
    if isinstance(x, np.ndarray):
        return ArrayInfo(x.ctypes.data, from_array_dtype(x.dtype), None, "numpy", x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        ptr = cai["data"][0]
        return ArrayInfo(ptr, from_array_dtype(np.dtype(cai["typestr"])), _device_of_pointer(ptr), "cai", x)
    if hasattr(x, "__dlpack__"):
        import cupy
        arr = cupy.from_dlpack(x)
        return ArrayInfo(arr.data.ptr, from_array_dtype(arr.dtype), arr.device.id, "dlpack", arr)
    return None


def _device_of_pointer(ptr):
    import cupy
    attrs = cupy.cuda.runtime.pointerGetAttributes(ptr)
    return attrs.device
