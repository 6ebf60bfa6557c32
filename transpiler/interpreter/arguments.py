"""Kernel arguments for an interpreted launch: binding, host copies of arrays, and writing results back.

Arrays (NumPy, CuPy or anything with `__cuda_array_interface__`, torch tensors) become `Buffer`s seen
through a scalar `Pointer`; the buffer covers the argument's memory from its first to its last element, so
kernels that index with the array's strides (transposed or sliced views) see what the GPU would. Host
NumPy arrays and CPU torch tensors are used in place; device memory is copied to the host before the run
and back after it (only for arrays the kernel stored to). Numbers become 0-d Tensors typed as Triton
types them; parameters annotated `tl.constexpr` receive plain Python values. cupy and torch are imported
only when such an argument is passed.
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import dtypes as dt
from ..errors import NOT_YET, ArgumentOverflowError, LaunchError
from ..language import core
from ..numerics import storage as numeric
from ..runtime.args import TensorWrapper
from ..tools.tensor_descriptor import TensorDescriptor as HostTensorDescriptor
from .pointers import Buffer, Pointer
from .tensor import Tensor, constexpr_number, is_python_number, scalar_tensor


# ---- one array argument -----------------------------------------------------------------------------------


def _span(shape, strides_in_elements) -> int:
    """Elements from the first to the last element of a strided array (0 when it is empty)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides_in_elements))


def _element_strides(name: str, strides, itemsize: int) -> list[int]:
    if any(s < 0 or s % itemsize for s in strides):
        raise LaunchError(f"argument '{name}': arrays with negative or unaligned strides {tuple(strides)} in the "
                          "interpreter", refusal=NOT_YET)
    return [s // itemsize for s in strides]


class _ArrayArgument:
    """An array argument's memory as a flat host array (`raw`: the element type's own bits), plus the
    way to send that host array back to where the argument lives."""

    def __init__(self, name: str, element_ty: dt.dtype, raw: np.ndarray, push=None):
        self.name = name
        self.element_ty = element_ty
        self.raw = raw
        self._push = push  # None when `raw` is the argument's own memory
        self.buffer = Buffer(name, element_ty, self._to_storage(raw))

    def _to_storage(self, raw: np.ndarray) -> np.ndarray:
        if self.element_ty.numpy is None:   # bf16, fp8: NumPy has no such type; a float32 copy of the values
            return numeric.from_bits(raw.view(numeric.unsigned_storage(self.element_ty.bits)), self.element_ty)
        return raw  # same memory: stores land in the argument directly

    def reinterpreted(self, name: str, element_ty: dt.dtype) -> "_ArrayArgument":
        """The same memory seen as `element_ty` elements (Triton's `reinterpret`); written back through this one."""
        view = self.raw.view(element_ty.numpy if element_ty.numpy is not None
                             else numeric.unsigned_storage(element_ty.bits))
        push = self._push and (lambda _view: self._push(self.raw))
        return _ArrayArgument(name, element_ty, view, push=push)

    def write_back(self):
        if not self.buffer.written:
            return
        if self.buffer.values is not self.raw:
            self.raw[...] = numeric.to_bits(self.buffer.values, self.element_ty).view(self.raw.dtype)
        if self._push is not None:
            self._push(self.raw)


def _numpy_argument(name: str, array: np.ndarray) -> _ArrayArgument:
    element_ty = _element_type(name, array.dtype)
    if array.flags.c_contiguous:
        flat = array.reshape(-1)
    else:
        strides = _element_strides(name, array.strides, array.itemsize)
        flat = np.lib.stride_tricks.as_strided(array, shape=(_span(array.shape, strides),),
                                               strides=(array.itemsize,))
    push = None
    if not flat.flags.writeable:
        # A read-only array (e.g. a broadcast view) may be read; a store to it is an error at the end.
        flat, push = flat.copy(), _cannot_write_back(name, "it is a read-only NumPy array")
    if element_ty.numpy is None:
        flat = flat.view(numeric.unsigned_storage(element_ty.bits))  # e.g. ml_dtypes.bfloat16: keep the bits
    return _ArrayArgument(name, element_ty, flat, push=push)


def _torch_argument(name: str, tensor) -> _ArrayArgument:
    import torch  # only when a torch tensor is passed

    element_ty = _element_type(name, tensor.dtype)
    base = tensor.detach()
    if element_ty.numpy is None:
        base = base.view({16: torch.int16, 8: torch.uint8}[element_ty.bits])  # NumPy has no bf16, fp8: the bits
    if base.is_contiguous():
        flat = base.reshape(-1)
    else:
        strides = _element_strides(name, [s * base.element_size() for s in base.stride()], base.element_size())
        flat = torch.as_strided(base, (_span(base.shape, strides),), (1,))
    if flat.device.type == "cpu":
        return _ArrayArgument(name, element_ty, flat.numpy())
    host = flat.cpu().numpy()
    return _ArrayArgument(name, element_ty, host, push=lambda raw: flat.copy_(torch.from_numpy(raw)))


def _device_argument(name: str, array) -> _ArrayArgument:
    """CuPy arrays (through cupy when importable), or other `__cuda_array_interface__` objects that can copy
    themselves to and from the host (CuPy's get/set or Numba's copy_to_host/copy_to_device)."""
    element_ty = _element_type(name, array.dtype)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None and isinstance(array, cupy.ndarray):
        strides = _element_strides(name, array.strides, array.itemsize)
        flat = cupy.lib.stride_tricks.as_strided(array, shape=(_span(array.shape, strides),),
                                                 strides=(array.itemsize,))
        host = cupy.asnumpy(flat)
        push = lambda raw: flat.set(raw)  # noqa: E731
    elif hasattr(array, "get"):  # CuPy-like
        host = np.ascontiguousarray(array.get()).reshape(-1)
        push = (lambda raw: array.set(raw.reshape(array.shape))) if hasattr(array, "set") else None
    elif hasattr(array, "copy_to_host"):  # Numba-like
        host = np.ascontiguousarray(array.copy_to_host()).reshape(-1)
        push = (lambda raw: array.copy_to_device(raw.reshape(array.shape))) \
            if hasattr(array, "copy_to_device") else None
    else:
        raise LaunchError(f"argument '{name}': cannot copy this device array to the host (install cupy)")
    if element_ty.numpy is None:
        host = host.view(numeric.unsigned_storage(element_ty.bits))
    return _ArrayArgument(name, element_ty, host, push=push or _cannot_write_back(name, "install cupy"))


def _cannot_write_back(name: str, reason: str):
    def push(raw):
        raise LaunchError(f"argument '{name}': the kernel stored to this array, but the results cannot be written "
                          f"back ({reason})")

    return push


def _element_type(name: str, array_dtype) -> dt.dtype:
    try:
        return dt.from_array_dtype(array_dtype)
    except TypeError as exc:
        raise LaunchError(f"argument '{name}': {exc}") from None


def _is_torch_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


# ---- binding ----------------------------------------------------------------------------------------------


def _is_constexpr(param: inspect.Parameter) -> bool:
    annotation = param.annotation
    if annotation is core.constexpr:
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr"


def _bind(signature: inspect.Signature, args, kwargs) -> inspect.BoundArguments:
    """Bind keyword arguments by name and positional ones, in order, to the parameters left over.

    This accepts both a plain call and the runtime's convention (runtime arguments positionally, constexprs
    by name, even when a constexpr parameter sits between runtime ones)."""
    params = list(signature.parameters.values())
    if any(p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL) for p in params):
        return signature.bind(*args, **kwargs)
    free = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in kwargs]
    if len(args) > len(free):
        raise TypeError(f"{len(args)} positional arguments for the {len(free)} parameters {free} not given by name")
    return signature.bind(**dict(zip(free, args)), **kwargs)


def _read_only(value):
    """A pointer argument of a parameter annotated `tl.const` as a const pointer (anything else unchanged)."""
    if isinstance(value, Pointer):
        return Pointer.to_start_of(value.buffer, const=True)
    return value


class Launch:
    """The bound call of one interpreted kernel launch: converted arguments and their array buffers."""

    def __init__(self, fn, args, kwargs):
        self.arrays: dict[int, _ArrayArgument] = {}
        self.kernel_name = fn.__name__
        signature = inspect.signature(fn)
        try:
            bound = _bind(signature, args, kwargs)
        except TypeError as exc:
            raise LaunchError(f"cannot bind the arguments of kernel '{fn.__name__}': {exc}") from None
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            param = signature.parameters[name]
            if _is_constexpr(param):
                value = value.value if isinstance(value, core.constexpr) else value
                bound.arguments[name] = constexpr_number(value)
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                bound.arguments[name] = tuple(self._convert(f"{name}[{i}]", v) for i, v in enumerate(value))
            else:
                bound.arguments[name] = self._convert(name, value)
                if core.is_const_parameter(param):
                    bound.arguments[name] = _read_only(bound.arguments[name])
        self.args, self.kwargs = bound.args, bound.kwargs

    def _convert(self, name: str, value):
        if isinstance(value, core.constexpr):
            return value.value
        if value is None or isinstance(value, (Tensor, str, dt.dtype)):
            return value
        if is_python_number(value):
            try:   # typed as Triton types a launch argument (not as a literal: no uint32, np.float64 is fp32)
                return scalar_tensor(value, dt.argument_scalar_dtype(value))
            except OverflowError:     # an int that fits no 64-bit type
                raise ArgumentOverflowError.of(name, value, self.kernel_name) from None
            except Exception as exc:  # a number of no Triton type
                raise LaunchError(f"argument '{name}': {exc}") from None
        if isinstance(value, tuple):
            return tuple(self._convert(f"{name}[{i}]", v) for i, v in enumerate(value))
        if isinstance(value, HostTensorDescriptor):
            # what the kernel would have made with tl.make_tensor_descriptor from the same parts
            from .eager import apply_rule
            return apply_rule("make_tensor_descriptor", self._convert(f"{name}.base", value.base),
                              [int(n) for n in value.shape], [int(s) for s in value.strides],
                              [int(b) for b in value.block_shape], value.padding)
        if isinstance(value, TensorWrapper):
            return Pointer.to_start_of(self._reinterpreted(name, value).buffer)
        if isinstance(value, np.ndarray) or _is_torch_tensor(value) or hasattr(value, "__cuda_array_interface__"):
            return Pointer.to_start_of(self._array(name, value).buffer)
        return value  # functions (combine_fn), other Python objects: passed through

    def _array(self, name: str, value) -> _ArrayArgument:
        # The same array passed twice is one buffer, so writes through either are seen by both.
        key = id(value)
        if key not in self.arrays:
            if isinstance(value, np.ndarray):
                self.arrays[key] = _numpy_argument(name, value)
            elif _is_torch_tensor(value):
                self.arrays[key] = _torch_argument(name, value)
            else:
                self.arrays[key] = _device_argument(name, value)
        return self.arrays[key]

    def _reinterpreted(self, name: str, wrapper) -> _ArrayArgument:
        key = (id(wrapper.base), wrapper.dtype.name)
        if key not in self.arrays:
            self.arrays[key] = self._array(name, wrapper.base).reinterpreted(name, wrapper.dtype)
        return self.arrays[key]

    def write_back(self):
        for array in self.arrays.values():
            array.write_back()
