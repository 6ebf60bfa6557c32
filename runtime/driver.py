"""The few CUDA driver calls the launch path makes, through ctypes on `libcuda.so.1`.

Why not CuPy's bindings (`cupy_backends.cuda.api`): in a process that only uses torch, their first calls imported
all of `cupy` (~100 ms, traced on the H200), which such a process must not pay before its first launch. The
functions keep that binding's names and argument order (`launchKernel(func, gx, gy, gz, bx, by, bz, shared,
stream, params, extra)`), so the launcher does not care which one it holds; errors raise `CudaDriverError` with
the driver's name for the code and its number (`status`: `launcher.STICKY_ERRORS` lists the faults that leave the
context unusable).
"""
from __future__ import annotations

import ctypes
import sys

_lib = None
_LIBRARY = "libcuda.so.1"


class CudaDriverError(RuntimeError):
    def __init__(self, call: str, status: int):
        name = ctypes.c_char_p()
        if _lib is not None and _lib.cuGetErrorName(status, ctypes.byref(name)) == 0 and name.value:
            text = name.value.decode()
        else:
            text = f"error {status}"
        super().__init__(f"{call}: {text}")
        self.status = status


def _library():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_LIBRARY)
        p, u, i = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
        signatures = {
            "cuInit": [u], "cuDeviceGet": [ctypes.POINTER(i), i],
            "cuDeviceGetAttribute": [ctypes.POINTER(i), i, i],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(p), i],
            "cuCtxGetCurrent": [ctypes.POINTER(p)], "cuCtxSetCurrent": [p],
            "cuModuleLoadData": [ctypes.POINTER(p), ctypes.c_char_p],
            "cuModuleGetFunction": [ctypes.POINTER(p), p, ctypes.c_char_p],
            "cuFuncSetAttribute": [p, i, i],
            "cuLaunchKernel": [p, u, u, u, u, u, u, u, p, p, p],
            "cuGetErrorName": [i, ctypes.POINTER(ctypes.c_char_p)],
            "cuStreamSynchronize": [p],
        }
        for name, args in signatures.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        _lib = lib
        _check(lib.cuInit(0), "cuInit")
    return _lib


def _check(status, call):
    if status:
        raise CudaDriverError(call, status)


class Driver:
    """Bound methods over `libcuda`; one instance, `driver`."""

    _raw = None

    def ctxGetCurrent(self) -> int:  # noqa: N802 (the driver's names)
        lib = _lib or _library()
        ctx = ctypes.c_void_p()
        _check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        return ctx.value or 0

    def ctxSetCurrent(self, context: int):  # noqa: N802
        _check((_lib or _library()).cuCtxSetCurrent(context or None), "cuCtxSetCurrent")

    def launchKernel(self, func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):  # noqa: N802
        _check((_lib or _library()).cuLaunchKernel(func, gx, gy, gz, bx, by, bz, shared, stream or None, params,
                                                   extra or None), "cuLaunchKernel")

    def raw_launch_functions(self):
        """`(cuLaunchKernelEx, cuCtxGetCurrent)` as raw ctypes functions for the launch plan (`launcher.PLANS`),
        or None when the driver has no cuLaunchKernelEx (before CUDA 11.8). cuLaunchKernelEx takes its four
        pointers through argtypes and releases the GIL (a launch blocks while the driver's queue is full);
        cuCtxGetCurrent, which never blocks, is called holding it (a `PyDLL` function) without argtypes, with
        an out-parameter made once: 0.18 us a call against 0.25 us releasing the GIL and 1.2 us with argtypes
        and a new `byref` (this project's CPU machine); 0.23 us on the H200 host."""
        if self._raw is None:
            lib = _lib or _library()
            try:
                launch_ex = lib["cuLaunchKernelEx"]
            except AttributeError:
                self._raw = ()
                return None
            launch_ex.argtypes = [ctypes.c_void_p] * 4
            launch_ex.restype = ctypes.c_int
            get_current = ctypes.PyDLL(_LIBRARY)["cuCtxGetCurrent"]
            get_current.restype = ctypes.c_int
            self._raw = (launch_ex, get_current)
        return self._raw or None

    def native_functions(self):
        """The addresses of cuLaunchKernel, cuCtxGetCurrent and cuCtxSetCurrent for the compiled launch path
        (templates/native_launch.c calls them directly); OSError where there is no libcuda."""
        lib = _lib or _library()
        return tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                     for name in ("cuLaunchKernel", "cuCtxGetCurrent", "cuCtxSetCurrent"))

    def cupy_binding(self):
        """CuPy's Cython driver module when this process has already loaded it (a CuPy user), else None: its
        `launchKernel` is the fastest launch call measured (3.80 us on the H200 host against 4.33 for ctypes'
        cuLaunchKernelEx and 5.59 for ctypes' cuLaunchKernel, bench/launch_path.py); importing it only for
        that would cost a torch-only process all of CuPy (~100 ms)."""
        return sys.modules.get("cupy_backends.cuda.api.driver")

    def streamSynchronize(self, stream):  # noqa: N802 (debug mode: after each launch)
        _check((_lib or _library()).cuStreamSynchronize(stream or None), "cuStreamSynchronize")

    def funcSetAttribute(self, func, attribute, value):  # noqa: N802
        _check((_lib or _library()).cuFuncSetAttribute(func, attribute, value), "cuFuncSetAttribute")

    def moduleLoadData(self, image: bytes) -> int:  # noqa: N802
        module = ctypes.c_void_p()
        _check((_lib or _library()).cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        return module.value

    def moduleGetFunction(self, module, name: str) -> int:  # noqa: N802
        fn = ctypes.c_void_p()
        _check((_lib or _library()).cuModuleGetFunction(ctypes.byref(fn), module, name.encode()),
               "cuModuleGetFunction")
        return fn.value

    def deviceGetAttribute(self, attribute: int, device_id: int) -> int:  # noqa: N802
        lib = _lib or _library()
        device, value = ctypes.c_int(), ctypes.c_int()
        _check(lib.cuDeviceGet(ctypes.byref(device), device_id), "cuDeviceGet")
        _check(lib.cuDeviceGetAttribute(ctypes.byref(value), attribute, device), "cuDeviceGetAttribute")
        return value.value

    def primaryContext(self, device_id: int) -> int:  # noqa: N802
        lib = _lib or _library()
        device, ctx = ctypes.c_int(), ctypes.c_void_p()
        _check(lib.cuDeviceGet(ctypes.byref(device), device_id), "cuDeviceGet")
        _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
        return ctx.value or 0


driver = Driver()


def __getattr__(name):
    # `transpiler.runtime.driver.active`, where Triton kernels' wrappers find the current target and device
    # properties (`triton.runtime.driver.active`); see host_api.py.
    if name == "active":
        from .host_api import active
        return active
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
