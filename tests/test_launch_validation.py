"""Every bad launch is refused before anything runs, with a LaunchError that names the argument and points at
the user's call (issue 17, item 3), and faults of earlier kernels are reported by name (item 4) -- on the CPU,
with the GPU faked at its edges as in `test_runtime_launch.py`. Host, freed and foreign-device memory are
covered there and in `test_gpu_launch_args.py`.
"""
import inspect

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from test_runtime_launch import FakeCupy, FakeTensor, _scale, gpu, unpack  # noqa: F401  (gpu is a fixture)
from transpiler.errors import LaunchError
from transpiler.runtime import compiler, kernel as kernel_mod, launcher as launcher_mod
from transpiler.runtime.driver import CudaDriverError

HERE = __file__


def _refused(call, match):
    """Run `call` (a launch on this file's line `line`); the LaunchError must match and point at that line."""
    line = inspect.currentframe().f_back.f_lineno
    with pytest.raises(LaunchError, match=match) as info:
        call()
    text = str(info.value)
    assert "called from" in text and f"{HERE}:" in text, text
    return info.value, line


def args(x=None, y=None, n=100, scale=1.0):
    return (x if x is not None else FakeCupy(4096), y if y is not None else FakeCupy(8192), n, scale)


def test_wrong_number_of_arguments_names_the_parameters_and_the_call(gpu):
    k = gpu.kernel
    err, _ = _refused(lambda: k[(1,)](*args(), 128, 7), r"takes 5 arguments but 6 were given")
    assert "X, Y, n, scale, BLOCK" in err.hint
    _refused(lambda: k[(1,)](FakeCupy(4096), FakeCupy(8192), BLOCK=128), r"missing argument 'n'")
    assert gpu.driver.launches == [] and gpu.compiles == []


def test_the_call_site_is_the_users_line(gpu):
    k = gpu.kernel
    line = inspect.currentframe().f_lineno + 2
    try:
        k[(1,)](FakeCupy(4096), FakeCupy(8192), BLOCK=128)
    except LaunchError as e:
        text = str(e)
    assert f"{HERE}:{line}:" in text and "test_the_call_site_is_the_users_line" in text
    assert text.count("called from") == 1


@pytest.mark.parametrize("bad", [[1.0, 2.0], "X", {"ptr": 4096}, object()], ids=["list", "str", "dict", "object"])
def test_non_array_objects_for_pointers_are_refused_by_name(gpu, bad):
    _refused(lambda: gpu.kernel[(1,)](bad, FakeCupy(8192), 100, 1.0, BLOCK=128),
             rf"argument 'X' has unsupported type {type(bad).__name__}")
    assert gpu.driver.launches == [] and gpu.compiles == []


def test_a_tuple_for_a_pointer_is_a_tuple_argument_and_fails_where_the_kernel_uses_it(gpu):
    # Tuples are kernel arguments, as in Triton 3.x (runtime/tuple_args.py): the kernel sees a tuple, and
    # `tl.load(X + offs)` on it is a typing error at that line, before NVRTC or any launch.
    with pytest.raises(transpiler.DTypeError, match="tuple") as info:
        gpu.kernel[(1,)]((4096,), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert "X + offs" in str(info.value)
    assert gpu.driver.launches == [] and gpu.compiles == []


def test_a_non_array_for_a_pointer_is_refused_after_the_launcher_is_cached_too(gpu):
    gpu.kernel[(1,)](*args(), BLOCK=128)
    _refused(lambda: gpu.kernel[(1,)]([1.0], FakeCupy(8192), 100, 1.0, BLOCK=128), "argument 'X'")
    assert len(gpu.driver.launches) == 1


def test_another_dtype_never_reaches_the_launcher_cached_for_the_first(gpu):
    """The element type is part of the lookup key of a cached launcher, on the fast path too: fp16 arrays after
    fp32 ones get their own variant (`half` loads), never the fp32 launcher."""
    k = gpu.kernel
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    k[(1,)](FakeCupy(4096, dtype=np.float16), FakeCupy(8192, dtype=np.float16), 100, 1.0, BLOCK=128)
    k[(1,)](FakeTensor(4096, dtype=np.float16), FakeCupy(8192, dtype=np.float16), 100, 1.0, BLOCK=128)
    assert len(k.variants) == 2 and len(k._launchers) == 2 and len(gpu.compiles) == 2
    f32, f16 = k.variants.values()
    assert "X ptr<fp32>" in f32.source and "X ptr<fp16>" in f16.source
    keys = list(k._launchers)
    assert keys[0][0] == ("ptr", "fp32", 16) and keys[1][0] == ("ptr", "fp16", 16)


def test_an_unsupported_element_type_is_refused_on_the_fast_path(gpu):
    gpu.kernel[(1,)](*args(), BLOCK=128)
    _refused(lambda: gpu.kernel[(1,)](FakeCupy(4096, dtype=np.complex64), FakeCupy(8192), 100, 1.0, BLOCK=128),
             "argument 'X'")
    assert len(gpu.driver.launches) == 1


@pytest.mark.parametrize("grid, match", [((-1,), "grid dimension 0 is -1"), ((2**31,), "grid dimension 0 is 2147483648"),
                                         ((1, 65536), "grid dimension 1 is 65536"), ((1, 1, -3), "grid dimension 2"),
                                         ((1, 1, 1, 1), "1 to 3 dimensions"), (("a",), "grid must be")])
def test_bad_grids_are_refused_cold_and_on_the_cached_fast_path(gpu, grid, match):
    _refused(lambda: gpu.kernel[grid](*args(), BLOCK=128), match)
    assert gpu.driver.launches == []
    gpu.kernel[(1,)](*args(), BLOCK=128)                   # the launcher is cached now
    _refused(lambda: gpu.kernel[grid](*args(), BLOCK=128), match)
    assert len(gpu.driver.launches) == 1


def test_a_zero_grid_launches_nothing_as_in_triton(gpu):
    """Triton launches nothing for an empty grid (a cdiv of an empty input); refusing it would break such code."""
    gpu.kernel[(0,)](*args(), BLOCK=128)
    gpu.kernel[(1,)](*args(), BLOCK=128)
    gpu.kernel[(4, 0)](*args(), BLOCK=128)
    assert [x.grid for x in gpu.driver.launches] == [(1, 1, 1)]


@pytest.mark.parametrize("value", [2**64, -2**63 - 1, 10**30])
def test_integers_no_c_type_holds_are_refused_by_name(gpu, value):
    _refused(lambda: gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), value, 1.0, BLOCK=128),
             rf"argument 'n' = {value} does not fit any integer parameter type")
    gpu.kernel[(1,)](*args(), BLOCK=128)
    _refused(lambda: gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), value, 1.0, BLOCK=128), "argument 'n'")
    assert len(gpu.driver.launches) == 1 and len(gpu.compiles) == 1


@pytest.mark.parametrize("value, kind", [(2**31, "int64"), (2**32, "int64"), (-2**31 - 1, "int64"),
                                         (2**63, "uint64"), (2**64 - 1, "uint64")])
def test_wide_integers_select_the_parameter_type_that_holds_them(gpu, value, kind):
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), value, 1.0, BLOCK=128)
    (var,) = gpu.kernel.variants.values()
    assert var.param_kinds[2] == kind
    fmt = {"uint32": "I", "int64": "q", "uint64": "Q"}[kind]
    assert unpack(gpu.driver.launches[0].raw[2:3], fmt) == [value]


def test_a_value_that_does_not_fit_its_slot_is_named_by_the_launcher():
    launcher = launcher_mod.Launcher(None, 1, 500, ["ptr", "int32", "fp32"], 4, name="k",
                                     slot_names=["X", "n", "scale"])
    with pytest.raises(LaunchError, match=r"argument 'n' = 4294967296 does not fit the kernel's int32 parameter"):
        launcher.launch(1, 1, 1, (4096, 2**32, 1.0), 0)


def test_shared_memory_beyond_the_device_is_refused_before_nvrtc(gpu, monkeypatch):
    from test_runtime_launch import _tile_dot
    monkeypatch.setattr(compiler, "shared_memory_limit", lambda device: 101376)
    k = transpiler.jit(_tile_dot)
    a = FakeCupy(4096, dtype=np.float16)
    _refused(lambda: k[(1,)](a, a, FakeCupy(8192), 1024, BM=128, BN=128, BK=64, num_stages=4),
             r"needs \d+ bytes of shared memory per program; device 0 allows 101376")
    assert gpu.compiles == [] and gpu.driver.launches == []


# ---- faults ----------------------------------------------------------------------------------------------

def _fault_on_next_launch(gpu, status=700):
    real = gpu.driver.launchKernel

    def faulted(*a):
        raise CudaDriverError("cuLaunchKernel", status)
    gpu.driver.launchKernel = faulted
    return real


def test_a_fault_names_the_kernel_launched_before_it_and_its_grid(gpu):
    @transpiler.jit
    def writer(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, 1.0, mask=offs < n)
    gpu.driver.nslots = 2
    writer[(3, 2)](FakeCupy(4096), 100, BLOCK=128)           # "faults" on the GPU (asynchronously)
    gpu.driver.nslots = 4
    _fault_on_next_launch(gpu)
    err, _ = _refused(lambda: gpu.kernel[(1,)](*args(), BLOCK=128), "unusable after an illegal memory address")
    assert "the last kernel launched before it was 'writer' (its last launch: grid (3, 2, 1))" in str(err)
    assert "TRANSPILER_DEBUG=1" in err.hint


def test_a_fault_met_while_loading_a_new_kernel_is_reported_the_same_way(gpu, monkeypatch):
    gpu.kernel[(5,)](*args(), BLOCK=128)

    def dead(cubin, name, device):
        raise CudaDriverError("cuModuleLoadData", 700)
    monkeypatch.setattr(compiler, "load_function", dead)
    _refused(lambda: gpu.kernel[(1,)](*args(), BLOCK=256), r"'_scale' \(its last launch: grid \(5, 1, 1\)\)")
    assert len(gpu.compiles) == 2          # the cubin from disk was not blamed and compiled a third time


def test_debug_mode_synchronises_each_launch_and_the_faulting_launch_reports_itself(gpu, monkeypatch):
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    synced = []
    gpu.driver.streamSynchronize = lambda stream: synced.append(stream)
    gpu.kernel[(2,)](*args(), BLOCK=128)
    assert synced == [7000] and isinstance(next(iter(gpu.kernel._launchers.values())), launcher_mod.DebugLauncher)

    def fault(stream):
        raise CudaDriverError("cuStreamSynchronize", 710)
    gpu.driver.streamSynchronize = fault
    err, _ = _refused(lambda: gpu.kernel[(7, 3)](*args(), BLOCK=128),
                      r"faulted with a device-side assert during this launch, grid \(7, 3, 1\)")
    assert err.kernel == "_scale"


def test_debug_mode_compiles_device_asserts_in_and_plain_mode_leaves_them_out(gpu, monkeypatch):
    def checked(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n)
        tl.device_assert(x == x, "no NaN")
        tl.store(X + offs, x, mask=offs < n)
    a = np.zeros(4, np.float32)
    plain = transpiler.jit(checked).cuda_source(a, 100, BLOCK=128)
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    debug = transpiler.jit(checked).cuda_source(a, 100, BLOCK=128)
    assert "__trap()" not in plain and "device_assert failed at" in debug and "no NaN" in debug
    assert transpiler.jit(checked).compile_options().debug
    assert kernel_mod.Kernel(checked, debug=True).compile_options().debug   # h-package's flag


@pytest.mark.skipif(not compiler.nvrtc_available(), reason="needs NVRTC and the CUDA headers")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_debug_sources_compile_without_warnings(monkeypatch, arch):
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")

    def asserted(X, Y, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n, other=0.0)
        tl.device_assert(x >= 0, "x >= 0")
        tl.device_assert(pid >= 0, "pid")
        tl.store(Y + offs, x, mask=offs < n)
    a = np.zeros(4, np.float32)
    result = compiler.compile_offline(transpiler.jit(asserted).cuda_source(a, a, 100, BLOCK=256), arch)
    assert result.warnings == [] and result.spill_bytes == 0


def test_device_assert_mask_leaves_the_elements_outside_it_unchecked(monkeypatch):
    def masked(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n, other=-1.0)
        tl.device_assert(x >= 0, "x >= 0 inside n", mask=offs < n)
        tl.store(X + offs, x + 1, mask=offs < n)
    k = transpiler.jit(masked)
    x = np.arange(10, dtype=np.float32)
    k.interpret[(1,)](x, 10, BLOCK=16)                   # the padding (-1) lies outside the mask
    np.testing.assert_array_equal(x, np.arange(10) + 1)
    x[3] = -5
    with pytest.raises(Exception, match="x >= 0 inside n"):
        k.interpret[(1,)](x, 10, BLOCK=16)
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    src = transpiler.jit(masked).cuda_source(x, 10, BLOCK=16)
    assert "x >= 0 inside n" in src and "__trap()" in src
    if compiler.nvrtc_available():
        assert compiler.compile_offline(src, "sm_90a").warnings == []
