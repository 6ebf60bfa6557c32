"""Launch arguments on the general path: what an array argument is (`array_info`), and the words of a refusal of
host memory or of arrays on several devices (`check_devices`). The launch binder (`launch_key.py`) recognises
CuPy arrays, torch tensors and Python numbers itself and comes here for everything else.

Accepted: CuPy arrays, anything with `__cuda_array_interface__` (torch CUDA tensors, Numba, ...), DLPack
capsules' owners (`__dlpack__`), NumPy arrays (only for `cuda_source` and the interpreter: a GPU launch
refuses host memory), `StandIn`s (a dtype with no NumPy equivalent, such as bfloat16, for `cuda_source`), and
Python / NumPy scalars.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import from_array_dtype
from ..errors import HostMemoryError, LaunchError



class ArrayInfo:
    """What a launch needs from one array argument."""

    __slots__ = ("ptr", "dtype", "device", "framework", "obj")

    def __init__(self, ptr, dtype, device, framework, obj):
        self.ptr = ptr
        self.dtype = dtype
        self.device = device
        self.framework = framework
        self.obj = obj


class StandIn:
    """A pointer argument of a given element dtype that holds no data: `kernel.cuda_source(StandIn(tl.bfloat16),
    ...)` produces the source of a specialization without any array (16-byte aligned unless told otherwise)."""

    def __init__(self, dtype, aligned=True):
        self.dtype = dtype
        self.aligned = aligned

    def __repr__(self):
        return f"StandIn({self.dtype!r})"


class TensorWrapper:
    """Triton's `TensorWrapper`: the memory of array `base` seen by a kernel as elements of `dtype` (a tl dtype
    of the same width, such as `tl.float8e4nv` over a uint8 tensor). Made by `reinterpret`."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.shape = tuple(base.shape)

    def data_ptr(self):
        return array_info(self.base).ptr

    def stride(self, *dim):
        return self.base.stride(*dim)

    @property
    def device(self):
        return self.base.device

    def numel(self):
        return int(np.prod(self.shape))

    def element_size(self):
        return self.dtype.itemsize

    def __repr__(self):
        return f"TensorWrapper[{self.dtype!r}]({self.base!r})"


def reinterpret(tensor, dtype):
    """Triton's `triton.reinterpret`: `tensor` as elements of `dtype` (same width), or the base array back when
    `dtype` is its own element type."""
    if isinstance(tensor, TensorWrapper):
        if dtype == from_array_dtype(tensor.base.dtype):
            return tensor.base
        tensor = tensor.base
    info = array_info(tensor)
    if info is None:
        raise TypeError(f"cannot reinterpret a {type(tensor).__name__}: it is not an array")
    if dtype.bits != info.dtype.bits:
        raise TypeError(f"reinterpret needs an element type of the array's width ({info.dtype.bits} bits), "
                        f"not {dtype!r}")
    return TensorWrapper(tensor, dtype)


class FakeTensorArgument(LaunchError):
    """An argument that stands for a value torch.compile is tracing: a FakeTensor (its tracing, a custom op's
    fake run, see `torch_ops.py`), a functional wrapper of one, a meta tensor, or a symbolic size (`SymInt`).
    A FakeTensor's `data_ptr()` is 0 (with a warning), so a launch on one must never be made."""

    def __init__(self, value, name=None, kernel=None):
        what = f"argument '{name}'" if name else "an argument"
        device = getattr(value, "device", None)
        where = f" on device {device}" if device is not None else ""
        super().__init__(f"{what} is a {type(value).__name__}{where}, which stands for a value torch.compile is "
                         "tracing (no memory, no number): no kernel can run on it", kernel=kernel,
                         hint="register the host wrapper with transpiler.custom_op(...) (docs/torch.md): "
                              "torch.compile then calls it on real tensors")
        self.tensor = value


def _is_fake(t):
    device = getattr(t, "device", None)
    if device is None:                   # SymInt, SymFloat, SymBool: symbolic scalars of a trace
        return type(t).__name__.startswith("Sym")
    if device.type == "meta":
        return True
    if type(t).__name__ == "Tensor":
        return False
    try:
        from torch._subclasses.fake_tensor import is_fake
    except ImportError:          # a torch without fake tensors
        return False
    return is_fake(t)


def _torch_info(t):
    if _is_fake(t):
        raise FakeTensorArgument(t)
    if t.device.type != "cuda":
        return ArrayInfo(t.data_ptr(), from_array_dtype(t.dtype), None, "torch-cpu", t)
    return ArrayInfo(t.data_ptr(), from_array_dtype(t.dtype), t.device.index, "torch", t)


def array_info(x):
    """ArrayInfo for an array-like argument, or None for scalars."""
    if isinstance(x, TensorWrapper):
        info = array_info(x.base)
        return ArrayInfo(info.ptr, x.dtype, info.device, info.framework, info.obj)
    mod = type(x).__module__
    if mod.startswith("cupy"):
        if hasattr(x, "data") and hasattr(x, "device"):
            return ArrayInfo(x.data.ptr, from_array_dtype(x.dtype), x.device.id, "cupy", x)
    if mod.startswith("torch"):
        return _torch_info(x)
    if isinstance(x, np.ndarray):
        return ArrayInfo(x.ctypes.data, from_array_dtype(x.dtype), None, "numpy", x)
    if isinstance(x, StandIn):
        return ArrayInfo(0 if x.aligned else 1, x.dtype, None, "stand-in", x)   # 1: alignment unknown
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


def check_devices(kernel_name, names, infos):
    """The one device all array arguments live on (None when there are no arrays); LaunchError for host
    memory or for arrays on several devices. `infos[i]` is the ArrayInfo of parameter `names[i]`, or None.
    (The launch binder, `launch_key.py`, finds the device itself; it comes here only to word a refusal.)"""
    device = None
    for info in infos:
        if info is None:
            continue
        if info.device is None or (device is not None and info.device != device):
            raise device_error(kernel_name, [(n, i) for n, i in zip(names, infos) if i is not None])
        device = info.device
    return device


def device_error(kernel_name, named_infos):
    """The LaunchError for these (name, ArrayInfo) arrays: every one in host memory, else where each lives."""
    host = [(n, i) for n, i in named_infos if i.device is None]
    if host:
        names = ", ".join(f"'{n}' ({i.framework})" for n, i in host)
        subject = f"arguments {names} are" if len(host) > 1 else f"argument {names} is"
        return HostMemoryError(f"{subject} in host memory; a GPU launch needs device arrays",
                           kernel=kernel_name,
                           hint="move arrays with cupy.asarray(...) or tensor.cuda(), or run kernel.interpret[grid](...) "
                                "on the CPU")
    where = ", ".join(f"'{n}' on device {i.device}" for n, i in named_infos)
    return LaunchError(f"the array arguments live on different devices: {where}", kernel=kernel_name,
                       hint="copy them to one device first (cupy.asarray under cupy.cuda.Device(n), "
                            "or tensor.to('cuda:n'))")
