"""One compiled variant on one device, launched with as little host work as possible.

A `Launcher` holds the loaded CUDA function, the device's context, the block size, the dynamic shared memory
each program gets and a parameter buffer laid out once: one 8-byte slot per runtime parameter, and the array of
slot addresses that cuLaunchKernel reads. A function that needs more than the 48 KiB of dynamic shared memory
any kernel may use is opted in to its amount once, when its launcher is made (cuFuncSetAttribute,
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); `compiler.check_shared_memory` has already refused amounts
past the device's limit.
A launch packs the slot values with one `struct.pack_into` (which also converts them to the C types: `int`
to a 4-byte int for an int32 parameter, `float` to a float), makes the device's context current if it is
not, and calls cuLaunchKernel (through ctypes, `driver.py`) on the chosen stream. The driver copies the
parameters during the call, so the buffer is reused; a lock per launcher keeps two threads from packing into
it at once. Nothing here synchronises or allocates device memory, so launches can be captured in CUDA graphs.

Faults: a kernel that faults (an illegal address, a trap) leaves the context unusable, and the driver reports it
at a later call, often another kernel's launch. Each launch therefore records `(kernel, gx, gy, gz)` in
`recent_launches` (a bounded deque: one flat tuple appended, ~50 ns measured, 2% of the CPU host path), and
`fault_error` words a sticky driver error with the kernels launched before it, most recent first. Under debug
(`options.debug`, `TRANSPILER_DEBUG=1`) the launcher is a `DebugLauncher`: it synchronises the stream after each
launch, so a fault is reported by the launch that caused it, with its kernel and grid.

Streams: the kernel launches on an explicit `stream=` (`stream_handle`: a handle, a CuPy stream or a torch
stream), else on torch's current stream of the device when any argument is a torch tensor (`torch_stream`),
else on CuPy's current stream of the device (`cupy_stream`).
"""
from __future__ import annotations

import collections
import ctypes
import struct
import threading

from ..errors import LaunchError

SLOT = 8  # bytes per parameter slot: every parameter type we pass fits, and 8 keeps each one aligned
OPT_IN_ABOVE = 48 * 1024             # dynamic shared memory a kernel may use without opting in
_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8   # CUfunction_attribute
_CODE = {"ptr": "Q", "int1": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
         "uint16": "H", "uint32": "I", "uint64": "Q", "fp16": "e", "fp32": "f", "fp64": "d"}


def slot_format(kinds) -> str:
    """The `struct` format of the parameter buffer for these parameter kinds ("ptr" or a dtype name)."""
    parts = []
    for kind in kinds:
        code = _CODE.get(kind)
        if code is None:
            raise LaunchError(f"scalar parameters of type {kind} cannot be passed to a kernel")
        pad = SLOT - struct.calcsize("<" + code)
        parts.append(code + (f"{pad}x" if pad else ""))
    return "<" + "".join(parts)


class _Driver:
    """The three driver calls a launch makes, resolved on first use, and any other on demand (tests replace this
    object). They go through ctypes (`driver.py`), not CuPy's binding, whose first call imports all of CuPy."""

    def __getattr__(self, name):
        from .driver import driver
        for attr in ("launchKernel", "ctxGetCurrent", "ctxSetCurrent"):
            setattr(self, attr, getattr(driver, attr))
        return getattr(driver, name)


driver = _Driver()

recent_launches = collections.deque(maxlen=16)     # (kernel name, gx, gy, gz), most recent last

# Driver errors after which the context is unusable (CUresult): every later call returns them again.
STICKY_ERRORS = {700: "an illegal memory address", 702: "a launch timeout", 710: "a device-side assert",
                 714: "a hardware stack error", 715: "an illegal instruction", 716: "a misaligned address",
                 717: "an invalid address space", 718: "an invalid program counter",
                 719: "a launch failure (a trap, such as a failed device_assert, or an exception)"}


def fault_error(error, kernel_name):
    """The LaunchError for a sticky driver error `error` met while launching `kernel_name`, naming the kernels
    launched before it (one of them faulted), or None when `error` is not a fault."""
    what = STICKY_ERRORS.get(getattr(error, "status", None))
    if what is None:
        return None
    last = {}
    for name, *grid in reversed(recent_launches):
        last.setdefault(name, tuple(grid))
    if last:
        (first, grid), *others = last.items()
        culprit = (f"the last kernel launched before it was '{first}' (its last launch: grid {grid})"
                   + ("; before that: " + ", ".join(f"'{n}' (grid {g})" for n, g in others) if others else ""))
    else:
        culprit = "no kernel of this process was launched before it"
    return LaunchError(f"the GPU context is unusable after {what} in an earlier kernel ({error}); {culprit}",
                       kernel=kernel_name,
                       hint="the process must be restarted; run with TRANSPILER_DEBUG=1 to synchronise after each "
                            "launch (the faulting launch then reports itself) or under compute-sanitizer")


class Launcher:
    """Launch one loaded function: `launch(gx, gy, gz, values, stream)`."""

    __slots__ = ("module", "function", "name", "context", "block", "shared_bytes", "_pack", "_buffer", "_slots",
                 "_params", "_func", "_lock", "kinds", "slot_names", "_maps")

    def __init__(self, module, function, context: int, kinds, num_warps: int, name: str = "", shared_bytes=0,
                 slot_names=None, tensor_maps=None):
        self.module = module          # the CUmodule handle (or an object owning it)
        self.function = function      # the CUfunction handle (or an object with `.ptr`)
        self.name = name
        self.kinds = tuple(kinds)     # per slot: "ptr" or the scalar parameter's dtype name
        self.slot_names = tuple(slot_names or (f"#{i}" for i in range(len(kinds))))
        self.context = context
        self.block = 32 * num_warps
        self.shared_bytes = shared_bytes
        n = len(kinds)
        self._pack = struct.Struct(slot_format(kinds)).pack_into
        self._buffer = ctypes.create_string_buffer(max(n, 1) * SLOT)
        base = ctypes.addressof(self._buffer)
        # TMA kernels take their tensor maps and a flag after the slots (runtime/tensor_maps.py): per launch,
        # the addresses of the encoded maps for its arguments.
        self._maps = tensor_maps
        extra = len(tensor_maps.specs) + 1 if tensor_maps is not None else 0
        self._slots = (ctypes.c_void_p * max(n + extra, 1))(*[base + SLOT * i for i in range(n)])
        self._params = ctypes.addressof(self._slots)
        self._func = function.ptr if hasattr(function, "ptr") else int(function)
        self._lock = threading.Lock()
        if shared_bytes > OPT_IN_ABOVE:
            self._in_context(driver.funcSetAttribute, self._func, _MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)

    def _in_context(self, call, *args):
        """`call(*args)` with this launcher's context current, then the caller's context (or none) back."""
        current = driver.ctxGetCurrent()
        if current == self.context:
            return call(*args)
        driver.ctxSetCurrent(self.context)
        try:
            return call(*args)
        finally:
            driver.ctxSetCurrent(current)

    def launch(self, gx, gy, gz, values, stream):
        with self._lock:
            try:
                self._pack(self._buffer, 0, *values)
            except struct.error:
                raise self._misfit(values) from None
            if self._maps is not None:
                n = len(self.kinds)
                for j, address in enumerate(self._maps.addresses(values)):
                    self._slots[n + j] = address
            current = driver.ctxGetCurrent()
            if current == self.context:
                driver.launchKernel(self._func, gx, gy, gz, self.block, 1, 1, self.shared_bytes, stream, self._params,
                                    0)
                recent_launches.append((self.name, gx, gy, gz))
                return
            # The arrays live on another device than the current one (or this thread has no context yet):
            # launch in their device's context and put the caller's back (none, if it had none).
            driver.ctxSetCurrent(self.context)
            try:
                driver.launchKernel(self._func, gx, gy, gz, self.block, 1, 1, self.shared_bytes, stream, self._params,
                                    0)
                recent_launches.append((self.name, gx, gy, gz))
            finally:
                driver.ctxSetCurrent(current)

    def _misfit(self, values):
        """The LaunchError naming the first value that does not fit its slot's C type."""
        for name, kind, value in zip(self.slot_names, self.kinds, values):
            try:
                struct.pack("<" + _CODE[kind], value)
            except struct.error as e:
                return LaunchError(f"argument '{name}' = {value!r} does not fit the kernel's {kind} parameter ({e})",
                                   kernel=self.name, hint="pass a value in the parameter type's range")
        return LaunchError(f"the arguments {values!r} do not fit the parameter types {self.kinds}", kernel=self.name)


class DebugLauncher(Launcher):
    """A launcher that synchronises its stream after each launch (debug mode), so that a fault is reported by
    the launch that caused it."""

    __slots__ = ()

    def launch(self, gx, gy, gz, values, stream):
        super().launch(gx, gy, gz, values, stream)
        try:
            self._in_context(driver.streamSynchronize, stream)
        except Exception as e:
            what = STICKY_ERRORS.get(getattr(e, "status", None), "an error")
            raise LaunchError(f"the kernel faulted with {what} during this launch, grid ({gx}, {gy}, {gz}) ({e}); "
                              "the GPU context is now unusable", kernel=self.name,
                              hint="the process must be restarted; compute-sanitizer --tool memcheck names the "
                                   "faulting access") from e


class RowLoopLauncher:
    """Launches a kernel whose programs along x were folded into a row loop (`analysis/row_loop.py`): at most
    `programs` of them, each looping over the user's program ids, which it learns from a last parameter holding
    the user's grid x. Everything else is the wrapped launcher's."""

    __slots__ = ("inner", "programs")
    # The loop computes `row + programs` for rows below the grid's x: that sum must stay an int.
    MAX_GRID_X = 2**31 - 1

    def __init__(self, inner, programs: int):
        self.inner = inner
        self.programs = max(1, programs)

    def launch(self, gx, gy, gz, values, stream):
        if gx + self.programs > self.MAX_GRID_X:
            raise LaunchError(f"grid x of {gx} programs is not supported yet by a kernel folded into a row loop "
                              f"(at most {self.MAX_GRID_X - self.programs})", kernel=self.inner.name,
                              hint="set TRANSPILER_ROW_LOOP=0, or put part of the count on grid axis 1")
        self.inner.launch(min(gx, self.programs), gy, gz, (*values, gx), stream)

    def __getattr__(self, name):
        return getattr(self.inner, name)


# ---- streams -----------------------------------------------------------------------------------------------

_torch_raw_stream = None
_cupy_current_stream = None


def torch_stream(device: int) -> int:
    """torch's current stream of `device`, as a raw handle (without making a torch.cuda.Stream object)."""
    global _torch_raw_stream
    if _torch_raw_stream is None:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _torch_raw_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _torch_raw_stream(device)


def cupy_stream(device: int) -> int:
    """CuPy's current stream of `device` on this thread, as a raw handle."""
    global _cupy_current_stream
    if _cupy_current_stream is None:
        from cupy.cuda.stream import get_current_stream
        _cupy_current_stream = get_current_stream
    return _cupy_current_stream(device).ptr


def stream_handle(stream, kernel_name=None) -> int:
    """The raw handle of an explicit `stream=`: an int, a CuPy stream or a torch stream."""
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    raise LaunchError(f"stream= takes a stream handle (int), a CuPy stream or a torch stream, not "
                      f"{type(stream).__name__}", kernel=kernel_name)
