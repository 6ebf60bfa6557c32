"""The launch path on the CPU, with the GPU faked at its edges: NVRTC (`compiler.compile_tuned`), module loading
(`compiler.load_function`), the driver calls (`launcher.driver`: launch, contexts, the shared-memory opt-in), the
current device, the device's shared-memory limit and the streams.

What is real: binding, the specialization key, the variant build (parse, analysis, emission), the caches, the
parameter packing and the device/context logic. Each test gets its own disk cache folder and kernel object.
"""
import ctypes
import struct
import subprocess
import sys
import textwrap
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.errors import LaunchError
from transpiler.runtime import compiler, kernel as kernel_mod, launch_key, launcher as launcher_mod
from transpiler.runtime.once import OnceMap

CONTEXT = {0: 500, 1: 501, 2: 502}   # fake primary context handle per device
CUPY_STREAM, TORCH_STREAM = 7000, 9000


def _scale(X, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


def _tile_dot(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


class FakeCupy:
    """Looks like a CuPy ndarray to the launch path: `.data.ptr`, `.data.device_id`, `.dtype`."""

    def __init__(self, ptr, device=0, dtype=np.float32):
        self.data = SimpleNamespace(ptr=ptr, device_id=device)
        self.dtype = np.dtype(dtype)


class FakeTensor:
    """Looks like a torch tensor: `data_ptr()`, `get_device()` (-1 on the CPU), `dtype`."""

    def __init__(self, ptr, device=0, dtype=np.float32):
        self._ptr, self._device, self.dtype = ptr, device, np.dtype(dtype)

    def data_ptr(self):
        return self._ptr

    def get_device(self):
        return self._device


class FakeDriver:
    def __init__(self, nslots):
        self.nslots = nslots
        self.current = CONTEXT[0]
        self.launches = []
        self.switches = []
        self.attributes = []
        self.lock = threading.Lock()

    def ctxGetCurrent(self):
        return self.current

    def ctxSetCurrent(self, ctx):
        self.switches.append(ctx)
        self.current = ctx

    def launchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        for g in (gx, gy, gz):
            if type(g) is not int or g < 0:
                raise TypeError("unsigned int expected")
        if gx > 2**31 - 1 or gy > 65535 or gz > 65535:
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE")       # what the driver answers
        slots = (ctypes.c_void_p * self.nslots).from_address(params)
        raw = [ctypes.string_at(slots[i], 8) for i in range(self.nslots)]
        with self.lock:
            self.launches.append(SimpleNamespace(func=f, grid=(gx, gy, gz), block=(bx, by, bz), smem=smem,
                                                 stream=stream, ctx=self.current, raw=raw))

    def funcSetAttribute(self, f, attribute, value):
        self.attributes.append((f, attribute, value, self.current))


class FakeRawDriver(FakeDriver):
    """A FakeDriver that also offers raw C functions, as the real one does, so launchers take the `ex` plan
    (`launcher.PLANS`): cuLaunchKernelEx and cuCtxGetCurrent are C callbacks reading the memory the plan
    wrote (the CUlaunchConfig, the slot addresses) and handing it to `launchKernel` above, so every test
    records the same launches under either plan; an exception there becomes the status it carries."""

    CONFIG = struct.Struct("<7I4xQQI4x")

    def raw_launch_functions(self):
        def launch_ex(config, function, params, extra):
            gx, gy, gz, bx, by, bz, smem, stream, attrs, n_attrs = self.CONFIG.unpack(ctypes.string_at(config, 56))
            try:
                assert attrs == 0 and n_attrs == 0 and extra is None, (attrs, n_attrs, extra)
                self.launchKernel(function, gx, gy, gz, bx, by, bz, smem, stream, params, 0)
            except Exception as e:        # nothing may unwind through C: the driver's answer is a status
                self.raw_errors.append(e)
                return getattr(e, "status", 1)        # CUDA_ERROR_INVALID_VALUE
            return 0

        def get_current(out):
            ctypes.c_void_p.from_address(out).value = self.current or None
            return 0
        self.raw_errors = []
        self._raw = (ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 4)(launch_ex),
                     ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(get_current))
        return self._raw


class FakeCupyDriver(FakeRawDriver):
    """A FakeRawDriver that also offers CuPy's Cython binding, as the real one does in a process that loaded
    CuPy, so launchers take the `cupy` plan; the binding's calls are this fake's."""

    def cupy_binding(self):
        return SimpleNamespace(launchKernel=lambda *a: self.launchKernel(*a), ctxGetCurrent=lambda: self.current)


class FakeNativeDriver(FakeRawDriver):
    """A FakeRawDriver that also offers the driver's functions as C function addresses, as the real one does, so
    `kernel[grid]` takes the compiled launch path (templates/native_launch.c): cuLaunchKernel, cuCtxGetCurrent and
    cuCtxSetCurrent are C callbacks into this fake, which reads the parameter buffer the C code packed."""

    LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_void_p)

    def __init__(self, nslots):
        super().__init__(nslots)
        self.raw_errors = []
        self._native = None

    def native_functions(self):
        if self._native is None:
            def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
                try:
                    assert extra is None, extra
                    self.launchKernel(f, gx, gy, gz, bx, by, bz, smem, stream or 0, params, 0)
                except Exception as e:        # nothing may unwind through C: the driver's answer is a status
                    self.raw_errors.append(e)
                    return getattr(e, "status", 1)
                return 0

            def get_current(out):
                ctypes.c_void_p.from_address(out).value = self.current or None
                return 0

            def set_current(ctx):
                self.ctxSetCurrent(ctx or 0)
                return 0
            self._callbacks = (self.LAUNCH(launch), ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(get_current),
                               ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(set_current))
            self._native = tuple(ctypes.cast(c, ctypes.c_void_p).value for c in self._callbacks)
        return self._native


PLAN_DRIVERS = {"cupy": FakeCupyDriver, "ex": FakeRawDriver, "driver": FakeDriver}
# Launch paths the `gpu` fixture runs each test under: the launch plans, and the compiled path over `ex`.
PATH_DRIVERS = {**PLAN_DRIVERS, "native": FakeNativeDriver}


@pytest.fixture(params=list(PATH_DRIVERS))
def gpu(monkeypatch, tmp_path, request):
    """Fakes at the GPU's edges; returns a namespace with the fake driver and the compile/load counters. Each
    test runs under every launch plan: `cupy` (CuPy's binding, where CuPy is loaded), `ex` (raw
    cuLaunchKernelEx) and `driver` (the driver object's methods), and under `native`: `kernel[grid]` through
    the compiled launch path (templates/native_launch.c), its launchers on the `ex` plan."""
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    fake = PATH_DRIVERS[request.param](nslots=4)
    state = SimpleNamespace(compiles=[], loads=[], driver=fake, current_device=0,
                            plan="ex" if request.param == "native" else request.param,
                            native=request.param == "native")

    def compile_tuned(source, name, arch, shared_bytes=0):
        state.compiles.append((name, arch))
        time.sleep(0.05)           # long enough for other threads to pile up on the same key
        return b"\x7fELF" + arch.encode() + source[:64].encode(), None

    def load_function(cubin, name, device):
        state.loads.append((name, device))
        return None, SimpleNamespace(ptr=1000 + device), CONTEXT[device]

    monkeypatch.setattr(compiler, "compile_tuned", compile_tuned)
    monkeypatch.setattr(compiler, "load_function", load_function)
    monkeypatch.setattr(compiler, "device_arch", lambda device: "sm_90a")
    monkeypatch.setattr(launcher_mod, "driver", state.driver)
    monkeypatch.setattr(launch_key, "current_device", lambda: state.current_device)
    monkeypatch.setattr(kernel_mod, "cupy_stream", lambda device: CUPY_STREAM + device)
    monkeypatch.setattr(kernel_mod, "torch_stream", lambda device: TORCH_STREAM + device)
    monkeypatch.setattr(launch_key, "_cupy_ndarray", FakeCupy)
    monkeypatch.setattr(launch_key, "_torch_tensor", FakeTensor)
    state.kernel = transpiler.jit(_scale)
    return state


def unpack(raw, formats):
    return [struct.unpack("<" + f, r[:struct.calcsize("<" + f)])[0] for r, f in zip(raw, formats)]


# ---- the key ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, 2, 16, -16, -15, 2**31 - 1, -2**31, 2**31, 2**32 - 16, 2**40, -2**40,
                                   2**63, 1.5, True, False, np.int32(16), np.int64(1), np.float32(2.0),
                                   np.float16(1.0), np.uint32(7), np.bool_(True)])
def test_fast_key_part_of_a_scalar_equals_the_general_rule(value):
    key, values, _, _ = launch_key.launch_facts((False,), (value,), ("v",), "k")
    assert key == [launch_key.scalar_key(value)]
    assert values == [value]


def test_int_key_parts_say_type_one_and_divisibility():
    assert launch_key.scalar_key(1) == ("int32", True, 1)
    assert launch_key.scalar_key(32) == ("int32", False, 16)
    assert launch_key.scalar_key(2**31) == ("int64", False, 16)     # as Triton: no uint32 for arguments
    assert launch_key.scalar_key(-2**40) == ("int64", False, 16)
    assert launch_key.scalar_key(True) == ("int1",)


@pytest.mark.parametrize("value, divisor", [(3, 1), (17, 1), (4094, 2), (4092, 4), (-12, 4), (1000, 8), (24, 8),
                                            (4000, 16), (0, 16), (2**33 + 6, 2), (-2**40 + 4, 4)])
def test_int_key_part_is_the_largest_power_of_two_up_to_16_dividing_it(value, divisor):
    """Finer than Triton's divisible-by-16: one field, at most five variants per argument."""
    assert launch_key.scalar_key(value)[2] == divisor
    key, _, _, _ = launch_key.launch_facts((False,), (value,), ("n",), "k")    # the binder's fast path agrees
    assert key == [launch_key.scalar_key(value)]


@pytest.mark.parametrize("address, alignment", [(4096, 16), (4100, 4), (4098, 2), (4104, 8), (4097, 1)])
def test_pointer_key_part_is_the_address_alignment_up_to_16_bytes(gpu, address, alignment):
    key, _, _, _ = launch_key.launch_facts((False,), (FakeCupy(address, dtype=np.int8),), ("x",), "k")
    assert key == [("ptr", "int8", alignment)]


def test_pointer_key_part_is_dtype_and_16_byte_alignment(gpu):
    key, values, device, fw = launch_key.launch_facts(
        (False, False, False), (FakeCupy(4096), FakeCupy(4100, dtype=np.float16), FakeTensor(64, dtype=np.int8)),
        ("a", "b", "c"), "k")
    assert key == [("ptr", "fp32", 16), ("ptr", "fp16", 4), ("ptr", "int8", 16)]
    assert values == [4096, 4100, 64] and device == 0
    assert fw == launch_key.CUPY | launch_key.TORCH


def test_constexpr_keys_tell_one_true_and_one_point_zero_apart():
    keys = {launch_key.launch_facts((True,), (v,), ("C",), "k")[0][0] for v in (1, True, 1.0, tl.constexpr(1))}
    assert len(keys) == 3


def test_key_parts_are_shared_objects_not_rebuilt_per_launch(gpu):
    a = launch_key.launch_facts((False, False), (FakeCupy(256), 1001), ("x", "n"), "k")[0]
    b = launch_key.launch_facts((False, False), (FakeCupy(512), 1003), ("x", "n"), "k")[0]
    assert a[0] is b[0] and a[1] is b[1]


# ---- launching -------------------------------------------------------------------------------------------


def test_launch_packs_pointers_and_c_typed_scalars(gpu):
    x, y = FakeCupy(0x7F0000001000), FakeCupy(0x7F0000002000)
    gpu.kernel[(3,)](x, y, 100, 2.5, BLOCK=128, num_warps=2)
    (launch,) = gpu.driver.launches
    assert unpack(launch.raw, "QQif") == [0x7F0000001000, 0x7F0000002000, 100, 2.5]
    assert launch.grid == (3, 1, 1) and launch.block == (64, 1, 1)
    assert launch.stream == CUPY_STREAM and launch.ctx == CONTEXT[0] and launch.func == 1000


def test_second_launch_reuses_the_launcher_and_compiles_nothing(gpu):
    for n in (100, 300, 500):                       # each 4 times an odd number: one divisibility key
        gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), n, 1.0, BLOCK=128)
    assert len(gpu.compiles) == 1 and len(gpu.loads) == 1 and len(gpu.kernel._launchers) == 1
    assert [unpack(x.raw, "QQif")[2] for x in gpu.driver.launches] == [100, 300, 500]


def test_integers_select_at_most_five_variants_by_divisibility(gpu):
    """An integer's key is the largest of 1, 2, 4, 8, 16 dividing it: ten sizes, five variants."""
    for n in (101, 102, 104, 108, 116, 201, 202, 204, 208, 216):
        gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), n, 1.0, BLOCK=128)
    assert len(gpu.compiles) == 5 and len(gpu.kernel._launchers) == 5


def test_a_new_specialization_builds_a_new_variant(gpu):
    k = gpu.kernel
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    k[(1,)](FakeCupy(4100), FakeCupy(8192), 100, 1.0, BLOCK=128)       # X no longer 16-byte aligned
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 1, 1.0, BLOCK=128)         # n == 1 is folded
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=256)       # another constexpr
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_warps=8)
    assert len(k.variants) == 5 and len(gpu.compiles) == 5


def test_num_stages_selects_its_own_variant_and_launcher(gpu):
    k = gpu.kernel
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_stages=2)
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_stages=4)
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_stages=4)
    assert len(k._launchers) == 2 and len(k.variants) == 2 and len(gpu.compiles) == 2
    assert sorted(options.num_stages for _, options in k.variants) == [2, 4]   # (key, CompileOptions)


def test_torch_tensors_launch_on_torchs_current_stream(gpu):
    gpu.kernel[(1,)](FakeTensor(4096), FakeTensor(8192), 100, 1.0, BLOCK=128)
    assert gpu.driver.launches[0].stream == TORCH_STREAM


def test_explicit_stream_wins(gpu):
    gpu.kernel[(1,)](FakeTensor(4096), FakeTensor(8192), 100, 1.0, BLOCK=128, stream=42)
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, stream=SimpleNamespace(ptr=43))
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, stream=SimpleNamespace(cuda_stream=44))
    assert [x.stream for x in gpu.driver.launches] == [42, 43, 44]
    with pytest.raises(LaunchError, match="stream="):
        gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, stream="default")


def test_arrays_on_another_device_launch_in_that_devices_context_and_restore(gpu):
    gpu.driver.current = CONTEXT[0]
    gpu.kernel[(1,)](FakeCupy(4096, device=1), FakeCupy(8192, device=1), 100, 1.0, BLOCK=128)
    (launch,) = gpu.driver.launches
    assert launch.ctx == CONTEXT[1] and launch.func == 1001 and launch.stream == CUPY_STREAM + 1
    assert gpu.driver.switches == [CONTEXT[1], CONTEXT[0]] and gpu.driver.current == CONTEXT[0]
    assert gpu.loads == [("_scale", 1)]


def test_a_thread_without_a_context_launches_in_the_arrays_context_and_is_left_without_one(gpu):
    gpu.driver.current = 0
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert gpu.driver.launches[0].ctx == CONTEXT[0] and gpu.driver.current == 0


def test_arrays_on_two_devices_fail_before_any_launch(gpu):
    with pytest.raises(LaunchError, match=r"'X' on device 0, 'Y' on device 1"):
        gpu.kernel[(1,)](FakeCupy(4096, device=0), FakeCupy(8192, device=1), 100, 1.0, BLOCK=128)
    assert gpu.driver.launches == [] and gpu.compiles == []


def test_host_arrays_are_refused(gpu):
    with pytest.raises(LaunchError, match="host memory"):
        gpu.kernel[(1,)](np.zeros(4, np.float32), FakeCupy(8192), 100, 1.0, BLOCK=128)
    with pytest.raises(LaunchError, match="host memory"):
        gpu.kernel[(1,)](FakeTensor(4096, device=-1), FakeCupy(8192), 100, 1.0, BLOCK=128)


def test_scalar_only_kernels_run_on_the_current_device(gpu):
    @transpiler.jit
    def nothing(n, BLOCK: tl.constexpr):
        pass
    gpu.driver.nslots = 1
    gpu.current_device = 2
    nothing[(1,)](5, BLOCK=4)
    assert gpu.loads == [("nothing", 2)] and gpu.driver.launches[0].ctx == CONTEXT[2]


@pytest.mark.parametrize("grid, expected", [((2, 3), (2, 3, 1)), ((2, 3, 4), (2, 3, 4)), (5, (5, 1, 1)),
                                            ([6], (6, 1, 1)), ((np.int64(7),), (7, 1, 1)), ((2.0,), (2, 1, 1))])
def test_grid_forms(gpu, grid, expected):
    gpu.kernel[grid](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert gpu.driver.launches[0].grid == expected


def test_callable_grid_sees_the_arguments_and_options(gpu):
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (meta["n"] // meta["BLOCK"],)
    gpu.kernel[grid](FakeCupy(4096), FakeCupy(8192), 1024, 1.0, BLOCK=tl.constexpr(128), num_warps=8)
    assert gpu.driver.launches[0].grid == (8, 1, 1)
    assert seen["BLOCK"] == 128 and seen["num_warps"] == 8 and seen["num_stages"] == 3


def test_empty_grid_launches_nothing_and_bad_grids_say_why(gpu):
    gpu.kernel[(0,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert gpu.driver.launches == []
    with pytest.raises(LaunchError, match="outside the hardware limit"):
        gpu.kernel[(1, 70000)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    with pytest.raises(LaunchError, match="1 to 3 dimensions"):
        gpu.kernel[(1, 1, 1, 1)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)


def test_run_is_the_same_launch_as_the_grid_form(gpu):
    gpu.kernel.run(FakeCupy(4096), FakeCupy(8192), 100, 1.0, grid=(4,), BLOCK=128, num_warps=4, num_stages=2)
    assert gpu.driver.launches[0].grid == (4, 1, 1)


def test_binding_errors(gpu):
    k = gpu.kernel
    with pytest.raises(LaunchError, match="missing constexpr 'BLOCK'"):
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0)
    with pytest.raises(LaunchError, match="unknown keyword argument 'BLOK'"):
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOK=128)
    with pytest.raises(LaunchError, match="num_warps"):
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_warps=3)
    with pytest.raises(LaunchError, match="unsupported type"):
        k[(1,)](FakeCupy(4096), FakeCupy(8192), "100", 1.0, BLOCK=128)
    # keyword arguments and ignored Triton options take the general path and give the same launch
    k[(1,)](FakeCupy(4096), Y=FakeCupy(8192), n=100, scale=1.0, BLOCK=128, num_ctas=1)
    assert unpack(gpu.driver.launches[0].raw, "QQif") == [4096, 8192, 100, 1.0]


def test_positional_constexpr_takes_the_fast_path(gpu):
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, 128)
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert len(gpu.kernel.variants) == 1


# ---- dynamic shared memory -------------------------------------------------------------------------------

H200_OPT_IN_LIMIT = 232448          # cudaDevAttrMaxSharedMemoryPerBlockOptin on an H200 (227 KiB)


def test_dynamic_shared_memory_is_given_at_launch_and_opted_in_above_48_kib(gpu, monkeypatch):
    monkeypatch.setattr(compiler, "shared_memory_limit", lambda device: H200_OPT_IN_LIMIT)
    gpu.driver.nslots = 4
    k = transpiler.jit(_tile_dot)
    a, c = FakeCupy(4096, dtype=np.float16), FakeCupy(8192)
    k[(1,)](a, a, c, 256, BM=128, BN=128, BK=64, num_stages=3)
    k[(1,)](a, a, c, 256, BM=32, BN=32, BK=32, num_stages=1)
    k[(1,)](a, a, c, 256, BM=128, BN=128, BK=64, num_stages=3)
    big, small = (v.shared_bytes for v in k.variants.values())
    assert big > 48 * 1024 >= small > 0
    assert [x.smem for x in gpu.driver.launches] == [big, small, big]
    assert gpu.driver.attributes == [(1000, 8, big, CONTEXT[0])]     # once, MAX_DYNAMIC_SHARED_SIZE_BYTES


def test_the_shared_memory_opt_in_happens_in_the_arrays_context(gpu, monkeypatch):
    monkeypatch.setattr(compiler, "shared_memory_limit", lambda device: H200_OPT_IN_LIMIT)
    a, c = FakeCupy(4096, device=1, dtype=np.float16), FakeCupy(8192, device=1)
    transpiler.jit(_tile_dot)[(1,)](a, a, c, 256, BM=128, BN=128, BK=64)
    assert gpu.driver.attributes[0][3] == CONTEXT[1] and gpu.driver.current == CONTEXT[0]


def test_a_variant_past_the_devices_shared_memory_limit_is_refused_before_nvrtc(gpu, monkeypatch):
    monkeypatch.setattr(compiler, "shared_memory_limit", lambda device: 101376)     # an sm_86's limit
    a, c = FakeCupy(4096, dtype=np.float16), FakeCupy(8192)
    with pytest.raises(LaunchError, match="lower num_stages") as info:
        transpiler.jit(_tile_dot)[(1,)](a, a, c, 256, BM=128, BN=128, BK=64, num_stages=4)
    # Triton's OutOfResources (a LaunchError here), with its fields and its words
    assert isinstance(info.value, transpiler.OutOfResources) and info.value.limit == 101376
    assert info.value.required > 101376 and info.value.name == "shared memory"
    assert "out of resource: shared memory, Required:" in str(info.value)
    assert "bytes of shared memory per program; device 0 allows 101376" in str(info.value)
    assert info.value.line == _tile_dot.__code__.co_firstlineno
    assert gpu.compiles == [] and gpu.driver.launches == []


def test_the_disk_cache_keeps_each_variants_shared_memory(gpu, monkeypatch):
    args = (np.zeros(4, np.float16), np.zeros(4, np.float16), np.zeros(4, np.float32), 256)
    first = transpiler.jit(_tile_dot).compiled_variant(*args, BM=128, BN=128, BK=64)
    monkeypatch.setattr(kernel_mod.Kernel, "_generate", lambda *a: pytest.fail("generated again"))
    again = transpiler.jit(_tile_dot).compiled_variant(*args, BM=128, BN=128, BK=64)
    assert again.shared_bytes == first.shared_bytes > 48 * 1024 and again.source == first.source


def test_warmup_builds_the_launcher_so_the_first_launch_compiles_nothing(gpu, monkeypatch):
    monkeypatch.setattr(kernel_mod, "gpu_available", lambda: True)
    k = gpu.kernel
    assert "_scale" in k.warmup(FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_stages=2)
    assert len(gpu.compiles) == 1 and len(k._launchers) == 1 and gpu.driver.launches == []
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128, num_stages=2)
    assert len(gpu.compiles) == 1 and len(gpu.driver.launches) == 1


# ---- stand-ins and refusals ---------------------------------------------------------------------------------


def test_stand_ins_compile_but_a_launch_refuses_them_as_host_memory(gpu):
    k = gpu.kernel
    bf16 = transpiler.StandIn(tl.bfloat16)
    assert "__nv_bfloat16" in k.cuda_source(bf16, bf16, 100, 1.0, BLOCK=128)
    with pytest.raises(LaunchError, match=r"argument 'X' \(stand-in\) is in host memory"):
        k[(1,)](bf16, FakeCupy(8192, dtype=np.float16), 100, 1.0, BLOCK=128)
    assert gpu.driver.launches == [] and gpu.compiles == []


def test_a_refusal_on_the_positional_path_names_every_array_and_points_at_the_def(gpu):
    host = np.zeros(4, np.float32)
    with pytest.raises(LaunchError) as info:
        gpu.kernel[(1,)](host, host, 100, 1.0, 128)
    assert "arguments 'X' (numpy), 'Y' (numpy) are in host memory" in str(info.value)
    assert info.value.line == _scale.__code__.co_firstlineno and info.value.hint
    with pytest.raises(LaunchError, match="num_warps must be a power of 2"):
        gpu.kernel[(1,)](host, host, 100, 1.0, 128, num_warps=3)       # options before arguments


def test_an_unsupported_element_type_is_named_with_a_hint(gpu):
    with pytest.raises(LaunchError, match="argument 'Y': .*complex64") as info:
        gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192, dtype=np.complex64), 100, 1.0, 128)
    assert info.value.hint and info.value.line == _scale.__code__.co_firstlineno


# ---- threads ---------------------------------------------------------------------------------------------


def test_once_map_builds_each_key_once_under_8_threads():
    calls = []
    once = OnceMap()

    def build(key):
        calls.append(key)
        time.sleep(0.05)
        return key * 10
    barrier = threading.Barrier(8)
    results = []

    def worker(i):
        barrier.wait(timeout=120)
        results.append(once.get(i % 2, lambda: build(i % 2)))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(calls) == [0, 1] and sorted(results) == [0] * 4 + [10] * 4


def test_once_map_forgets_a_failed_build_and_waiters_see_the_error():
    once = OnceMap()
    with pytest.raises(ValueError):
        once.get("k", lambda: (_ for _ in ()).throw(ValueError("boom")))
    assert once.get("k", lambda: 5) == 5


def test_8_threads_launching_one_new_key_compile_once(gpu):
    barrier = threading.Barrier(8)
    errors = []

    def worker(i):
        try:
            barrier.wait(timeout=120)
            gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 101 + 2 * i, 1.0, BLOCK=128)   # odd: one key
        except Exception as e:        # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    assert len(gpu.compiles) == 1 and len(gpu.loads) == 1 and len(gpu.driver.launches) == 8
    assert sorted(unpack(x.raw, "QQif")[2] for x in gpu.driver.launches) == list(range(101, 117, 2))


def test_threads_on_three_devices_compile_once_and_load_once_per_device(gpu):
    barrier = threading.Barrier(9)

    def worker(i):
        barrier.wait(timeout=120)
        device = i % 3
        gpu.kernel[(1,)](FakeCupy(4096, device), FakeCupy(8192, device), 100, 1.0, BLOCK=128)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(9)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(gpu.compiles) == 1                       # one architecture
    assert sorted(d for _, d in gpu.loads) == [0, 1, 2]
    assert all(x.func == 1000 + (x.stream - CUPY_STREAM) for x in gpu.driver.launches)


def test_a_new_process_finds_the_cubin_on_disk_without_parsing_or_nvrtc(gpu, tmp_path):
    """The first launch fills the disk cache; a fresh interpreter builds the same variant from it alone."""
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(__import__('os').path.dirname(__file__))!r})
        import numpy as np
        import transpiler
        from transpiler.runtime import compiler
        from test_runtime_launch import _scale
        def no_nvrtc(*a):
            raise AssertionError("NVRTC ran in the warm process")
        compiler.compile_tuned = compiler.compile_cubin = no_nvrtc
        k = transpiler.jit(_scale)
        values = (np.zeros(4, np.float32), np.zeros(4, np.float32), 100, 1.0, 128)
        var = k.variant(k.spec_key(values), values, 4, 3, "sm_90a")
        assert var.cubin("sm_90a").startswith(b"\\x7fELF")
        heavy = [m for m in ("libcst", "jinja2", "transpiler.parse", "transpiler.analysis", "transpiler.emit_cuda")
                 if m in sys.modules]
        print("HEAVY", heavy)
    """)
    env = dict(__import__("os").environ)
    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + ":" + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout


@pytest.mark.skipif(not compiler.nvrtc_available(), reason="needs NVRTC and the CUDA headers")
def test_compile_cubin_makes_an_sm90a_cubin_without_a_gpu():
    k = transpiler.jit(_scale)
    src = k.cuda_source(np.zeros(4, np.float32), np.zeros(4, np.float32), 100, 1.0, BLOCK=128)
    cubin = compiler.compile_cubin(src, "_scale", "sm_90a")
    assert cubin[:4] == b"\x7fELF" and b"_scale" in cubin


def test_transpiler_interpret_env_runs_launches_on_the_cpu_interpreter(monkeypatch):
    monkeypatch.setenv("TRANSPILER_INTERPRET", "1")
    k = transpiler.jit(_scale)
    x, y = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    k[(1,)](x, y, 100, 3.0, BLOCK=128)
    np.testing.assert_allclose(y, 3.0 * x)


def test_import_transpiler_leaves_the_compiler_rooms_unimported():
    """The launch path must not pay for libcst, jinja2, parse, analysis or emission: they load on a cache miss."""
    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    code = ("import sys, transpiler, transpiler.language as tl; print([m for m in ('libcst', 'jinja2', "
            "'transpiler.parse', 'transpiler.analysis', 'transpiler.emit_cuda', 'cupy', 'torch') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_slot_format_gives_8_byte_slots_with_c_types():
    fmt = launcher_mod.slot_format(["ptr", "int32", "fp32", "int1", "fp16", "int64"])
    assert struct.calcsize(fmt) == 48
    assert fmt == "<Qi4xf4x?7xe6xq"
    with pytest.raises(LaunchError, match="bf16"):
        launcher_mod.slot_format(["bf16"])


def test_launch_binder_source_is_readable_python():
    k = transpiler.jit(_scale)
    src = k.launch_binder_source()
    assert "# X" in src and "# BLOCK (constexpr)" in src
    compile(src, "binder", "exec")


def test_a_cubin_from_disk_that_the_driver_refuses_is_compiled_again(gpu, monkeypatch):
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)      # fills the disk cache
    assert len(gpu.compiles) == 1
    refused = []
    real_load = compiler.load_function

    def refuse_once(cubin, name, device):
        if not refused:
            refused.append(cubin)
            raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
        return real_load(cubin, name, device)
    monkeypatch.setattr(compiler, "load_function", refuse_once)
    k = transpiler.jit(_scale)                                                  # a new kernel object: memory empty
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert refused and len(gpu.compiles) == 2 and len(gpu.driver.launches) == 2


def test_kernel_getitem_reuses_the_launch_function_of_a_tuple_grid(gpu):
    k = gpu.kernel
    assert k[(1,)] is k[(1,)] and k[(2, 3)] is not k[(1,)]
    k[(2, 3)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert [x.grid for x in gpu.driver.launches] == [(2, 3, 1), (1, 1, 1)]
    assert k[([1],)] is not k[([1],)]                   # unhashable grids are made anew (and refused at launch)


@pytest.mark.parametrize("plan", list(PLAN_DRIVERS))
def test_a_by_value_parameter_wider_than_a_slot_is_laid_at_its_alignment_and_packed_whole(monkeypatch, plan):
    # A CUtensorMap-like parameter (128 bytes, 64-aligned) between a pointer and an int32: the slot addresses
    # the driver reads point at each value, the wide one aligned, and each holds exactly what was passed.
    fake = PLAN_DRIVERS[plan](nslots=3)
    monkeypatch.setattr(launcher_mod, "driver", fake)
    monkeypatch.setitem(launcher_mod.BY_VALUE, "test_map128", (128, 64))
    launcher = launcher_mod.Launcher(None, 1, CONTEXT[0], ["ptr", "test_map128", "int32"], 4, name="k",
                                     slot_names=["X", "desc", "n"])
    assert launcher.plan == plan
    rng = np.random.default_rng(5)
    desc = rng.integers(0, 256, 128, dtype=np.uint8).tobytes()
    launcher.launch(3, 1, 1, (4096, desc, -77), 0)
    (launch,) = fake.launches
    slots = (ctypes.c_void_p * 3).from_address(launcher._params)
    assert slots[1] % 64 == 0 and slots[0] % 8 == 0 and slots[2] % 8 == 0
    assert ctypes.string_at(slots[1], 128) == desc
    assert struct.unpack("<Q", ctypes.string_at(slots[0], 8))[0] == 4096
    assert struct.unpack("<i", ctypes.string_at(slots[2], 4))[0] == -77
    assert launch.grid == (3, 1, 1)
    with pytest.raises(LaunchError, match=r"argument 'desc' = 5 does not fit the kernel's test_map128 parameter"):
        launcher.launch(1, 1, 1, (4096, 5, 1), 0)


def test_register_by_value_refuses_an_alignment_that_does_not_divide_the_size():
    with pytest.raises(ValueError, match="power-of-two alignment"):
        launcher_mod.register_by_value("bad", 100, 64)


def test_each_driver_gets_the_plan_it_offers_and_a_forced_plan_wins(gpu, monkeypatch):
    gpu.kernel[(2,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    (launcher,) = gpu.kernel._launchers.values()
    assert launcher.plan == gpu.plan and len(gpu.driver.launches) == 1
    monkeypatch.setattr(launcher_mod, "forced_plan", "driver")
    k = transpiler.jit(_scale)
    k[(2,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert next(iter(k._launchers.values())).plan == "driver" and len(gpu.driver.launches) == 2
