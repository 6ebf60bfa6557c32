"""One compiled variant on one device, launched with as little host work as possible.

A `Launcher` holds the loaded CUDA function, the device's context, the block size, the dynamic shared memory
each program gets and a buffer laid out once: the launch configuration (CUlaunchConfig: grid, block, shared
memory, stream), one 8-byte slot per runtime parameter, and the array of slot addresses the driver reads. A
function that needs more than the 48 KiB of dynamic shared memory any kernel may use is opted in to its amount
once, when its launcher is made (cuFuncSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
`compiler.check_shared_memory` has already refused amounts past the device's limit.
A launch is a closure made once per launcher by a launch plan (`PLANS`, below): one `struct.pack_into` writes
the slot values (converting them to the C types: `int` to a 4-byte int for an int32 parameter, `float` to a
float; a value that does not fit is named), and under the `ex` plan the grid and the stream too; one
cuCtxGetCurrent checks that the device's context is current (else it is made current for the launch and the
caller's put back); one driver call launches on the chosen stream (CuPy's Cython binding where CuPy is loaded,
else cuLaunchKernelEx through ctypes). The driver copies the parameters during the call, so the buffer is
reused; each thread packs into a buffer set of its own, taken from a small per-launcher pool. Nothing here
synchronises or allocates device memory, so launches can be captured in CUDA graphs.

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

from ..errors import NOT_YET, LaunchError
from ..targets import MAX_ROWS_AHEAD

SLOT = 8  # bytes per parameter slot: every parameter type we pass fits, and 8 keeps each one aligned
OPT_IN_ABOVE = 48 * 1024             # dynamic shared memory a kernel may use without opting in
_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8   # CUfunction_attribute
_CODE = {"ptr": "Q", "int1": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
         "uint16": "H", "uint32": "I", "uint64": "Q", "fp16": "e", "fp32": "f", "fp64": "d"}


# Parameters passed by value that are wider than a slot, by kind: (bytes, alignment). Their launch value is a
# `bytes` of exactly that size, made on the host (a CUtensorMap for TMA: 128 bytes, 64-aligned, passed as a
# __grid_constant__ parameter); `register_by_value` adds one.
BY_VALUE = {}


def register_by_value(kind: str, size: int, alignment: int):
    """Let parameters of `kind` be passed by value as `size` bytes aligned to `alignment` (a power of two)."""
    if alignment & (alignment - 1) or size % alignment:
        raise ValueError(f"a by-value parameter needs a power-of-two alignment dividing its size, not {size}, "
                         f"{alignment}")
    BY_VALUE[kind] = (size, alignment)


def slot_layout(kinds, start: int = 0):
    """`(struct format without its '<', offset of each slot, end)` for parameters of these kinds laid out from
    byte `start` (itself aligned to every slot's alignment): a scalar or pointer takes an 8-byte slot, a
    by-value kind its size at its alignment."""
    parts, offsets, at = [], [], start
    for kind in kinds:
        code = _CODE.get(kind)
        if code is not None:
            size, align = struct.calcsize("<" + code), SLOT
        elif kind in BY_VALUE:
            size, align = BY_VALUE[kind]
            code = f"{size}s"
        else:
            raise LaunchError(f"scalar parameters of type {kind} cannot be passed to a kernel")
        gap = -at % align
        offsets.append(at + gap)
        width = max(size, SLOT)
        parts.append((f"{gap}x" if gap else "") + code + (f"{width - size}x" if width > size else ""))
        at += gap + width
    return "".join(parts), offsets, at


def slot_format(kinds) -> str:
    """The `struct` format of the parameter slots for these parameter kinds ("ptr", a dtype name, a by-value
    kind)."""
    return "<" + slot_layout(kinds)[0]


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
    """Launch one loaded function: `launch(gx, gy, gz, values, stream)`, a closure made once by a launch plan
    (`PLANS`, `default_plan`)."""

    __slots__ = ("module", "function", "name", "context", "block", "shared_bytes", "_pack", "_buffer", "_slots",
                 "_params", "_func", "kinds", "slot_names", "launch", "plan", "_offset", "_maps", "_buffers",
                 "_header_bytes", "_slot_offsets", "_end")

    def __init__(self, module, function, context: int, kinds, num_warps: int, name: str = "", shared_bytes=0,
                 slot_names=None, plan=None, tensor_maps=None):
        self.module = module          # the CUmodule handle (or an object owning it)
        self.function = function      # the CUfunction handle (or an object with `.ptr`)
        self.name = name
        self.kinds = tuple(kinds)     # per slot: "ptr" or the scalar parameter's dtype name
        self.slot_names = tuple(slot_names or (f"#{i}" for i in range(len(kinds))))
        self.context = context
        self.block = 32 * num_warps
        self.shared_bytes = shared_bytes
        self._func = function.ptr if hasattr(function, "ptr") else int(function)
        if shared_bytes > OPT_IN_ABOVE:
            self._in_context(driver.funcSetAttribute, self._func, _MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
        # TMA kernels take their tensor maps and a flag after the slots (runtime/tensor_maps.py): per launch,
        # the addresses of the encoded maps for its arguments go into the address array's last entries.
        self._maps = tensor_maps
        self.plan = plan or forced_plan or default_plan()
        self.launch = self._wrap(PLANS[self.plan](self))

    def _wrap(self, launch):
        return launch

    def _lay_out(self, header_format="<", header_bytes=0):
        """Make the parameter buffers' layout: `header_bytes` of launch configuration, then the parameter slots
        (`slot_layout`); `_pack(buffer, offset, ...)` fills header and slots in one call. The first buffer set
        (`_buffers`) is made here, more by `_new_buffers` for threads launching at once."""
        self._header_bytes = header_bytes
        _, self._slot_offsets, self._end = slot_layout(self.kinds, header_bytes)
        self._pack = struct.Struct(header_format + slot_layout(self.kinds, header_bytes)[0]).pack_into
        self._buffers = self._new_buffers()
        self._buffer, self._offset, self._params, self._slots, _ = self._buffers

    def _new_buffers(self):
        """One buffer set: `(buffer, offset of the header in it, address of the slot-address array the driver
        reads, that array, address of the header)`; the header is aligned for every slot."""
        n = len(self.kinds)
        align = max([SLOT] + [BY_VALUE[k][1] for k in self.kinds if k in BY_VALUE])
        buffer = ctypes.create_string_buffer(max(self._end, self._header_bytes + SLOT) + align)
        offset = -ctypes.addressof(buffer) % align
        base = ctypes.addressof(buffer) + offset
        extra = len(self._maps.specs) + 1 if self._maps is not None else 0
        slots = (ctypes.c_void_p * max(n + extra, 1))(*[base + at for at in self._slot_offsets])
        return buffer, offset, ctypes.addressof(slots), slots, base

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

    def _refusal(self, gx, gy, gz, stream, values):
        """What a launch whose values did not pack raises: TypeError for a grid or stream that is not a C
        unsigned int (the caller's general path then checks the grid), else the LaunchError naming the first
        argument that does not fit its slot's C type."""
        if not all(type(v) is int and 0 <= v < 2**32 for v in (gx, gy, gz)) or type(stream) is not int:
            return TypeError(f"grid ({gx!r}, {gy!r}, {gz!r}) and stream {stream!r} must be C unsigned ints")
        for name, kind, value in zip(self.slot_names, self.kinds, values):
            try:
                struct.pack("<" + (_CODE.get(kind) or f"{BY_VALUE[kind][0]}s"), value)
            except (struct.error, OverflowError) as e:
                return LaunchError(f"argument '{name}' = {value!r} does not fit the kernel's {kind} parameter ({e})",
                                   kernel=self.name, hint="pass a value in the parameter type's range")
        return LaunchError(f"the arguments {values!r} do not fit the parameter types {self.kinds}", kernel=self.name)

    def _misfit(self, values):
        return self._refusal(1, 1, 1, 0, values)

    def _map_filler(self):
        """None for a kernel without tensor maps, else `fill(values, slots)` writing the addresses of the maps
        encoded for these argument values (and of the all-encoded flag) after the slots' addresses in `slots`
        (a buffer set's address array)."""
        if self._maps is None:
            return None
        maps, n = self._maps, len(self.kinds)

        def fill(values, slots):
            for j, address in enumerate(maps.addresses(values)):
                slots[n + j] = address
        return fill


# ---- launch plans -------------------------------------------------------------------------------------------
#
# A plan makes a launcher's `launch(gx, gy, gz, values, stream)` once, with everything that does not change
# between launches bound in its closure. Measured side by side in one run on the H200 host (bench/launch_path.py:
# the whole `kernel[(1,)](x, y, n, scale)` of a 4-parameter kernel on CuPy arrays; the same run's RawKernel took
# 5.37 us): `cupy` 6.94 us, `ex` 7.42, `driver` 9.48; cuda.bindings' `cuLaunchKernel` did not run there. The
# launch call alone: CuPy's Cython `launchKernel` 3.80 us, ctypes' 4-argument cuLaunchKernelEx 4.33, ctypes'
# 11-argument cuLaunchKernel 5.59 (ctypes converts each argument in Python). So:
#   cupy    CuPy's Cython binding, when the process has loaded CuPy already (never imported for this);
#   ex      else cuLaunchKernelEx through ctypes: the grid, block, shared memory and stream go into the
#           CUlaunchConfig in the same `struct.pack_into` as the parameter slots, and the call takes four
#           constant pointers;
#   driver  the `driver` object's methods: tests' fakes, and drivers before CUDA 11.8.
# We keep these rather than cuda.bindings (a well-kept binding, but not a dependency of ours, and its Python
# layer converts the parameter array on each call) for the measured launch time.
# Each plan packs into a buffer set popped from a per-launcher pool (`_buffer_pool`) rather than one buffer
# under a lock: a launcher's launch measured 0.54 us against 0.69 with `with lock:` (bench/launch_cpu.py, the
# driver faked at C level, this project's CPU machine).

CONFIG_FORMAT = "<7I4xQ16x"   # CUlaunchConfig: grid x, y, z, block x, y, z, dynamic shared bytes, (padding),
CONFIG_BYTES = 56             # stream, attrs = NULL, numAttrs = 0 (and padding): no launch attributes


def _raw_functions():
    """`(cuLaunchKernelEx, cuCtxGetCurrent)` of the real driver as raw ctypes functions, or None under a
    driver without them (a fake, a driver before CUDA 11.8, a machine without libcuda)."""
    raw = getattr(driver, "raw_launch_functions", None)
    try:
        return raw() if raw is not None else None
    except OSError:     # no libcuda here: the driver plan, whose first call says so
        return None


def _buffer_pool(launcher):
    """`(pop, push)` of the launcher's free buffer sets: a launch pops one (a new one from
    `launcher._new_buffers()` when every set is in another thread's launch) and pushes it back after the launch
    call. The driver copies the parameters during that call, so a set is free again after it; CuPy's binding and
    ctypes release the GIL in it, which is why two threads must never pack into one set. A list's pop and append
    are atomic under the GIL and cost less than a lock's `with` (see the measurements above `PLANS`); the pool
    grows to the number of threads that ever launched this launcher at once."""
    free = [launcher._buffers]
    return free.pop, free.append


def _ex_plan(launcher):
    """cuLaunchKernelEx through ctypes: one pack of the CUlaunchConfig and the slots, one cuCtxGetCurrent
    (its out-parameter made once), one call with four constant pointers."""
    from .driver import CudaDriverError
    launch_ex, get_current = _raw_functions()
    launcher._lay_out(CONFIG_FORMAT, CONFIG_BYTES)
    pack, function, context, block, shared, name = launcher._pack, launcher._func, launcher.context, \
        launcher.block, launcher.shared_bytes, launcher.name
    pop, push = _buffer_pool(launcher)
    fill_maps = launcher._map_filler()
    current = ctypes.c_void_p()
    current_ref = ctypes.byref(current)
    record = recent_launches.append

    def launch(gx, gy, gz, values, stream):
        try:
            buffers = pop()
        except IndexError:      # every set is in another thread's launch
            buffers = launcher._new_buffers()
        buffer, offset, params, slots, config = buffers
        try:
            try:
                pack(buffer, offset, gx, gy, gz, block, 1, 1, shared, stream, *values)
            except (struct.error, OverflowError):     # OverflowError: a float past the slot type
                raise launcher._refusal(gx, gy, gz, stream, values) from None
            if fill_maps is not None:
                fill_maps(values, slots)
            status = get_current(current_ref)
            if status:
                raise CudaDriverError("cuCtxGetCurrent", status)
            if current.value == context:
                status = launch_ex(config, function, params, None)
            else:
                # The arrays live on another device than the current one (or this thread has no context yet):
                # launch in their device's context and put the caller's back (none, if it had none).
                previous = current.value or 0
                driver.ctxSetCurrent(context)
                try:
                    status = launch_ex(config, function, params, None)
                finally:
                    driver.ctxSetCurrent(previous)
        finally:
            push(buffers)
        if status:
            raise CudaDriverError("cuLaunchKernelEx", status)
        record((name, gx, gy, gz))
    return launch


def _slots_plan(launcher, launch_kernel, get_current):
    """cuLaunchKernel as `launch_kernel(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra)` (the
    binding's names and order), after one pack of the slots and a check of the current context by
    `get_current()`."""
    launcher._lay_out()
    fill_maps = launcher._map_filler()
    pack, function, context, block, shared, name = launcher._pack, launcher._func, launcher.context, \
        launcher.block, launcher.shared_bytes, launcher.name
    pop, push = _buffer_pool(launcher)
    record = recent_launches.append

    def launch(gx, gy, gz, values, stream):
        try:
            buffers = pop()
        except IndexError:      # every set is in another thread's launch
            buffers = launcher._new_buffers()
        buffer, offset, params, slots, _ = buffers
        try:
            try:
                pack(buffer, offset, *values)
            except (struct.error, OverflowError):     # OverflowError: a float past the slot type
                raise launcher._misfit(values) from None
            if fill_maps is not None:
                fill_maps(values, slots)
            current = get_current()
            if current == context:
                launch_kernel(function, gx, gy, gz, block, 1, 1, shared, stream, params, 0)
            else:
                driver.ctxSetCurrent(context)
                try:
                    launch_kernel(function, gx, gy, gz, block, 1, 1, shared, stream, params, 0)
                finally:
                    driver.ctxSetCurrent(current)
        finally:
            push(buffers)
        record((name, gx, gy, gz))
    return launch


def _driver_plan(launcher):
    """Through the `driver` object's methods, looked up at each launch (any object with the binding's names:
    tests' fakes, which replace them between launches, or a driver without cuLaunchKernelEx)."""
    return _slots_plan(launcher, lambda *a: driver.launchKernel(*a), lambda: driver.ctxGetCurrent())


def _cupy_plan(launcher):
    """CuPy's Cython `launchKernel` and `ctxGetCurrent` (C calls, the GIL released during the launch)."""
    binding = driver.cupy_binding()
    return _slots_plan(launcher, binding.launchKernel, binding.ctxGetCurrent)


def default_plan():
    """The measured-fastest plan this process's driver object offers (see above)."""
    if _raw_functions() is None:
        return "driver"
    binding = getattr(driver, "cupy_binding", None)
    return "cupy" if binding is not None and binding() is not None else "ex"


PLANS = {"cupy": _cupy_plan, "ex": _ex_plan, "driver": _driver_plan}
forced_plan = None     # a name in PLANS for every launcher made from now on (bench/launch_path.py compares them)


class DebugLauncher(Launcher):
    """A launcher that synchronises its stream after each launch (debug mode), so that a fault is reported by
    the launch that caused it."""

    __slots__ = ()

    def _wrap(self, launch):
        def launch_and_wait(gx, gy, gz, values, stream):
            launch(gx, gy, gz, values, stream)
            try:
                self._in_context(driver.streamSynchronize, stream)
            except Exception as e:
                what = STICKY_ERRORS.get(getattr(e, "status", None), "an error")
                raise LaunchError(f"the kernel faulted with {what} during this launch, grid ({gx}, {gy}, {gz}) "
                                  f"({e}); the GPU context is now unusable", kernel=self.name,
                                  hint="the process must be restarted; compute-sanitizer --tool memcheck names the "
                                       "faulting access") from e
        return launch_and_wait


class RowLoopLauncher:
    """Launches a kernel whose programs along x loop over the user's program ids (`analysis/row_loop.py`), which
    it learns from a last parameter holding the user's grid x: `blocks` of them at most (one wave; None: every
    block of the grid), a block holding `per_block` programs (`analysis/program_packing.py`). With `max_waves`,
    one wave only for a grid of at most that many waves: a longer grid launches every block, one row each (the
    loop runs once; rows of 32 bytes a thread and more ran slower folded over many waves: bench/NOTES.md).
    Everything else is the wrapped launcher's."""

    __slots__ = ("inner", "blocks", "per_block", "max_waves")
    # The loop computes `row + depth x programs` for rows below the grid's x: that sum must stay an int.
    MAX_GRID_X = 2**31 - 1
    ROWS_AHEAD = MAX_ROWS_AHEAD

    def __init__(self, inner, blocks, per_block: int = 1, max_waves: int = 0):
        self.inner = inner
        self.blocks = None if blocks is None else max(1, blocks)
        self.per_block = per_block
        self.max_waves = max_waves

    @property
    def programs(self):
        """Programs launched at most (one wave), or None when every program of the grid is launched."""
        return None if self.blocks is None else self.blocks * self.per_block

    def blocks_for(self, gx):
        """The blocks launched for a grid x of `gx` programs."""
        needed = -(-gx // self.per_block)
        if self.blocks is None:
            return needed
        one_wave = min(needed, self.blocks)
        if self.max_waves and needed > self.max_waves * self.blocks \
                and gx + needed * self.per_block * self.ROWS_AHEAD <= self.MAX_GRID_X:
            return needed
        return one_wave

    def launch(self, gx, gy, gz, values, stream):
        blocks = self.blocks_for(gx)
        ahead = blocks * self.per_block * self.ROWS_AHEAD    # the row `depth` ahead of the last (row_loop.py)
        if gx + ahead > self.MAX_GRID_X:
            raise LaunchError(f"grid x of {gx} programs for a kernel folded into a row loop "
                              f"(at most {self.MAX_GRID_X - ahead})", kernel=self.inner.name, refusal=NOT_YET,
                              hint="set TRANSPILER_ROW_LOOP=0 and TRANSPILER_PACK_PROGRAMS=0, or put part of the "
                                   "count on grid axis 1")
        self.inner.launch(blocks, gy, gz, (*values, gx), stream)

    def __getattr__(self, name):
        return getattr(self.inner, name)


# ---- streams -----------------------------------------------------------------------------------------------

_torch_raw_stream = None
_cupy_current_stream = None


def torch_stream(device: int) -> int:
    """torch's current stream of `device`, as a raw handle (without making a torch.cuda.Stream object)."""
    return (_torch_raw_stream or torch_raw_stream_function())(device)


def torch_raw_stream_function():
    """The function `torch_stream` calls: torch's own `_cuda_getCurrentRawStream` where it has one."""
    global _torch_raw_stream
    if _torch_raw_stream is None:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _torch_raw_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _torch_raw_stream


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
