"""The generated `kernel[grid]` function (runtime/grid_launch.py), the launchers' buffer pool, the environment token
in the launch key, the toolchain in the cubin's cache key and the build events, on the CPU with the GPU faked at
its edges (the `gpu` fixture of test_runtime_launch.py, under each launch plan)."""
import os
import threading
import warnings

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import options
from transpiler.errors import LaunchError
from transpiler.runtime import build_events, cache, compiler, grid_launch, toolchain
from transpiler.runtime import launcher as launcher_mod

from test_runtime_launch import CONTEXT, FakeCupy, _scale, gpu, unpack  # noqa: F401  (gpu: the fixture)


def _general_calls(kernel, monkeypatch):
    """The list of the general path's calls (`Kernel._launch`) from now on."""
    calls = []
    real = kernel._launch

    def counting(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(kernel, "_launch", counting)
    kernel._grid_launches.clear()          # grid functions made from now on see the counting general path
    return calls


# ---- the generated grid function -----------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda k, x, y, n: k[(2, 3)](x, y, n, 2.5, 128),                       # all by position
    lambda k, x, y, n: k[(2, 3)](x, y, n, 2.5, BLOCK=128),                 # constexpr by keyword (Triton's style)
    lambda k, x, y, n: k[(2, 3)](x, y, n=n, scale=2.5, BLOCK=128),         # another split
    lambda k, x, y, n: k[(2, 3)](BLOCK=128, scale=2.5, n=n, Y=y, X=x),     # every one by keyword, any order
], ids=["positional", "constexpr-keyword", "split", "keywords"])
def test_the_grid_function_launches_what_the_general_path_launches_without_it(gpu, monkeypatch, call):
    rng = np.random.default_rng()
    k = gpu.kernel
    general = _general_calls(k, monkeypatch)
    ptrs = [int(p) * 16 for p in rng.integers(1 << 20, 1 << 30, size=6)]
    sizes = [int(s) for s in rng.integers(3, 5000, size=3)]
    for i, n in enumerate(sizes):
        call(k, FakeCupy(ptrs[2 * i]), FakeCupy(ptrs[2 * i + 1]), n)
    assert len(general) <= 1 + len(set(s & 15 for s in sizes))      # only the first launch of each key
    assert [unpack(launch.raw, "QQif") for launch in gpu.driver.launches] == \
        [[ptrs[2 * i], ptrs[2 * i + 1], n, 2.5] for i, n in enumerate(sizes)]
    assert all(launch.grid == (2, 3, 1) and launch.ctx == CONTEXT[0] for launch in gpu.driver.launches)
    calls_before = len(general)
    call(k, FakeCupy(ptrs[0]), FakeCupy(ptrs[1]), sizes[0])
    assert len(general) == calls_before                               # a known key: no general path


@pytest.mark.parametrize("call, why", [
    (lambda k, x, y: k[(1,)](x, y, 100, 2.5), "a missing constexpr"),
    (lambda k, x, y: k[(1,)](x, y, 100, 2.5, BLOCK=128, BLOCKS=2), "an unknown keyword"),
    (lambda k, x, y: k[(1,)](x, y, 100, 2.5, 128, BLOCK=128), "an argument given twice"),
    (lambda k, x, y: k[(1,)](x, y, 100, 2.5, 128, 7), "too many arguments"),
    (lambda k, x, y: k[(1,)](x, FakeCupy(4096, device=1), 100, 2.5, BLOCK=128), "arrays on two devices"),
    (lambda k, x, y: k[(1,)](x, y, 100, 2.5, BLOCK=128, stream=object()), "a stream that is not a stream"),
    (lambda k, x, y: k[(1,)](x, y, 2**70, 2.5, BLOCK=128), "an int no C type holds"),
    (lambda k, x, y: k[(1,)](x, np.zeros(4, np.float32), 100, 2.5, BLOCK=128), "a host array"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_what_the_grid_function_cannot_take_the_general_path_refuses_at_the_users_line(gpu, monkeypatch, call,
                                                                                         why):
    k = gpu.kernel
    x, y = FakeCupy(4096), FakeCupy(8192)
    k[(1,)](x, y, 100, 2.5, BLOCK=128)                 # a launcher exists: the grid function is on its fast path
    general = _general_calls(k, monkeypatch)
    launches = len(gpu.driver.launches)
    with pytest.raises(LaunchError) as info:
        call(k, x, y)
    assert len(general) == 1, why                      # handed over once, with the call's own arguments
    assert len(gpu.driver.launches) == launches        # nothing launched
    assert [site.file for site in info.value.call_chain] == [__file__], str(info.value)


def test_a_grid_the_function_cannot_take_is_left_to_the_general_path(gpu):
    assert grid_launch.fast_grid((4,)) == (4, 1, 1) and grid_launch.fast_grid((4, 5, 6)) == (4, 5, 6)
    for grid in [(0,), (4, 0), (2**31,), (1, 65536), (1.0,), (np.int64(3),), [4], (1, 1, 1, 1), ()]:
        assert grid_launch.fast_grid(grid) is None, grid
    k = gpu.kernel
    k[(0,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)       # an empty grid launches nothing
    k[(np.int64(3),)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    assert [launch.grid for launch in gpu.driver.launches] == [(3, 1, 1)]
    with pytest.raises(LaunchError, match="grid dimension 1 is 65536"):
        k[(1, 65536)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)


def test_a_driver_error_on_the_grid_function_is_located_and_worded(gpu, monkeypatch):
    k = gpu.kernel
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    (launcher,) = k._launchers.values()

    def failing(*args):
        raise RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    # The driver refuses (what the compiled path calls) and so does the launcher (what the Python path calls).
    monkeypatch.setattr(gpu.driver, "launchKernel", failing)
    monkeypatch.setattr(launcher, "launch", failing)
    launched = len(gpu.driver.launches)
    with pytest.raises(LaunchError, match="the launch failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES") as info:
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    assert [site.file for site in info.value.call_chain] == [__file__]
    assert len(gpu.driver.launches) == launched


def test_the_grid_function_is_kept_per_grid_and_its_source_is_readable(gpu):
    k = gpu.kernel
    assert k[(5,)] is k[(5,)] and k[(5,)] is not k[(6,)]
    source = k.grid_launch_source()
    assert "def launch_on_grid(" in source and "kwargs['BLOCK']" in source
    compile(source, "<check>", "exec")


# ---- the buffer pool -----------------------------------------------------------------------------------------

def test_threads_launching_at_once_pack_into_buffer_sets_of_their_own(gpu, monkeypatch):
    """One thread is held inside the driver call (where the real bindings release the GIL) while another packs
    and launches: each launch must carry its own arguments."""
    k = gpu.kernel
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    inside, release = threading.Event(), threading.Event()
    real = gpu.driver.launchKernel
    seen = []

    def slow_launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if threading.current_thread().name == "held":
            inside.set()
            assert release.wait(10)
        real(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra)
        seen.append((threading.current_thread().name, unpack(gpu.driver.launches[-1].raw, "QQif")))
    monkeypatch.setattr(gpu.driver, "launchKernel", slow_launch)

    def launch(n):
        k[(1,)](FakeCupy(4096 * n), FakeCupy(8192 * n), 100 * n, 2.5, BLOCK=128)
    held = threading.Thread(target=launch, args=(3,), name="held")
    held.start()
    assert inside.wait(10)
    other = threading.Thread(target=launch, args=(5,), name="other")
    other.start()
    other.join(10)
    release.set()
    held.join(10)
    assert dict(seen) == {"other": [4096 * 5, 8192 * 5, 500, 2.5], "held": [4096 * 3, 8192 * 3, 300, 2.5]}


# ---- the environment token -----------------------------------------------------------------------------------

def test_a_code_changing_switch_set_after_the_first_launch_gets_a_new_launcher(gpu, monkeypatch):
    for name in options.CODE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    k = gpu.kernel
    args = (FakeCupy(4096), FakeCupy(8192), 100, 2.5)
    k[(1,)](*args, BLOCK=128)
    monkeypatch.setenv("TRANSPILER_LINE_DIRECTIVES", "1")          # changes the generated code
    k[(1,)](*args, BLOCK=128)
    assert len(k._launchers) == 2 and len(gpu.compiles) == 2
    assert sorted(opts.line_directives for _, opts in k.variants) == [False, True]
    assert "#line" in [v for (_, opts), v in k.variants.items() if opts.line_directives][0].source
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")                    # debug: a synchronising launcher
    synced = []
    monkeypatch.setattr(gpu.driver, "streamSynchronize", synced.append, raising=False)
    k[(1,)](*args, BLOCK=128)
    assert len(k._launchers) == 3
    assert sum(isinstance(launcher, launcher_mod.DebugLauncher) for launcher in k._launchers.values()) == 1
    assert len(synced) == 1
    monkeypatch.delenv("TRANSPILER_DEBUG")
    monkeypatch.delenv("TRANSPILER_LINE_DIRECTIVES")               # back as at first: the first launcher again
    k[(1,)](*args, BLOCK=128)
    assert len(k._launchers) == 3 and len(gpu.compiles) == 3 and len(gpu.driver.launches) == 4


def test_another_variable_changing_costs_nothing_and_the_token_follows_the_values(gpu, monkeypatch):
    k = gpu.kernel
    args = (FakeCupy(4096), FakeCupy(8192), 100, 2.5)
    k[(1,)](*args, BLOCK=128)
    token = options.environment_token()
    monkeypatch.setenv("SOME_OTHER_VARIABLE", "1")
    assert options.ENVIRONMENT[0] == token                         # another variable: nothing to re-read
    k[(1,)](*args, BLOCK=128)
    assert len(k._launchers) == 1
    monkeypatch.setenv("TRANSPILER_TMA", "0")
    assert options.ENVIRONMENT[0] is None                          # a code-changing one: forgotten...
    assert options.environment_token() != token
    os.environ.pop("TRANSPILER_TMA")
    assert options.environment_token() == token


@pytest.mark.parametrize("write", [
    lambda: os.environ.__setitem__("TRANSPILER_TMA", "0"),
    lambda: os.environ.update(TRANSPILER_TMA="0"),
    lambda: os.environ.setdefault("TRANSPILER_TMA", "0"),
    lambda: os.environ.pop("TRANSPILER_TMA"),
    lambda: os.environ.__delitem__("TRANSPILER_TMA"),
], ids=["set", "update", "setdefault", "pop", "del"])
def test_every_kind_of_os_environ_write_forgets_the_token(monkeypatch, write):
    if "pop" in write.__code__.co_names or "__delitem__" in write.__code__.co_names:
        monkeypatch.setenv("TRANSPILER_TMA", "1")
    else:
        monkeypatch.delenv("TRANSPILER_TMA", raising=False)
    before = options.environment_token()
    assert options.ENVIRONMENT[0] == before
    write()
    assert options.ENVIRONMENT[0] is None and options.environment_token() != before
    monkeypatch.delenv("TRANSPILER_TMA", raising=False)


def test_os_environ_is_watched_through_its_own_class_not_its_private_data():
    import collections.abc
    assert options._watching and options._watch_environment()       # once: a second call changes nothing
    watched = type(os.environ)
    assert watched._transpiler_watched and watched.__mro__[1].__name__ == "_Environ"
    assert type(os.environ._data) is dict                           # the private dict is left alone
    assert isinstance(os.environ, collections.abc.MutableMapping)


def test_the_token_is_never_left_stale_by_writes_racing_with_reads(monkeypatch):
    """Threads computing the token while another writes the environment: once the writes stop, the token kept
    names the values in force (a token computed from values read before a write is not kept)."""
    monkeypatch.setenv("TRANSPILER_TMA", "1")
    done = threading.Event()

    def reader():
        while not done.is_set():
            options.environment_token()
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for r in readers:
        r.start()
    try:
        for i in range(5000):
            os.environ["TRANSPILER_TMA"] = str(i % 2)
    finally:
        done.set()
        for r in readers:
            r.join(10)
    values = tuple(map(os.environ.get, options.CODE_VARIABLES))
    assert options.environment_token() == options._tokens[values]
    assert options.ENVIRONMENT[0] in (None, options._tokens[values])


def test_every_code_changing_variable_is_in_the_token():
    from test_environment_keys import CHANGES_THE_CODE
    assert set(options.CODE_VARIABLES) == set(CHANGES_THE_CODE)


# ---- the toolchain in the cubin's key ------------------------------------------------------------------------

def test_a_cubin_made_by_another_nvrtc_is_not_served(gpu, monkeypatch):
    args = (FakeCupy(4096), FakeCupy(8192), 100, 2.5)
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: "12.4")
    toolchain.cubin_fingerprint.cache_clear()
    transpiler.jit(_scale)[(1,)](*args, BLOCK=128)
    transpiler.jit(_scale)[(1,)](*args, BLOCK=128)                 # a new process would find it on disk
    assert len(gpu.compiles) == 1
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: "13.0")   # an upgrade, the same cache folder
    toolchain.cubin_fingerprint.cache_clear()
    transpiler.jit(_scale)[(1,)](*args, BLOCK=128)
    assert len(gpu.compiles) == 2
    assert len(list(cache.cache_dir().glob("*.cubin"))) == 2
    toolchain.cubin_fingerprint.cache_clear()


def test_a_process_without_nvrtc_runs_a_cubin_any_nvrtc_made(gpu, monkeypatch):
    args = (FakeCupy(4096), FakeCupy(8192), 100, 2.5)
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: "12.4")
    toolchain.cubin_fingerprint.cache_clear()
    transpiler.jit(_scale)[(1,)](*args, BLOCK=128)
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: "none")    # a machine with only a driver
    toolchain.cubin_fingerprint.cache_clear()
    transpiler.jit(_scale)[(1,)](*args, BLOCK=128)
    assert len(gpu.compiles) == 1 and len(gpu.driver.launches) == 2
    toolchain.cubin_fingerprint.cache_clear()


def test_nvrtcs_version_is_remembered_per_environment_with_its_librarys_stat(tmp_path, monkeypatch):
    pytest.importorskip("cupy")
    if not compiler.nvrtc_available():
        pytest.skip("no NVRTC here")
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    version = toolchain._asked_version()
    major, minor = version.split(".")
    assert int(major) >= 11 and int(minor) >= 0
    if toolchain._loaded_library() is None:
        pytest.skip("no /proc/self/maps entry for libnvrtc here")
    toolchain._remember(version)
    assert toolchain._remembered_version() == version
    monkeypatch.setenv("CUDA_PATH", "/elsewhere")                  # another environment: not known yet
    assert toolchain._remembered_version() is None


def test_a_stamp_that_cannot_be_written_changes_no_answer(tmp_path, monkeypatch):
    pytest.importorskip("cupy")
    if not compiler.nvrtc_available():
        pytest.skip("no NVRTC here")
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))

    def failing(*args):
        raise OSError("read-only")
    monkeypatch.setattr(cache, "write", failing)
    toolchain.nvrtc_version.cache_clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert toolchain.nvrtc_version() == toolchain._asked_version()
    finally:
        toolchain.nvrtc_version.cache_clear()


# ---- build events ----------------------------------------------------------------------------------------------

def test_build_events_report_each_variant_and_generation_once(gpu):
    events = []
    stop = build_events.subscribe(events.append)
    try:
        k = gpu.kernel
        for n in (100, 300):
            k[(1,)](FakeCupy(4096), FakeCupy(8192), n, 2.5, BLOCK=128)
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 104, 2.5, BLOCK=128)  # another divisibility: a new variant
    finally:
        stop()
    assert [e.kind for e in events] == ["generated", "variant", "generated", "variant"]
    assert all(e.kernel is gpu.kernel and e.opts.num_warps == 4 for e in events)
    assert "__global__" in events[0].source and events[0].error is None
    assert [e.key[2] for e in events if e.kind == "variant"] == [("int32", False, 4), ("int32", False, 8)]
    gpu.kernel[(1,)](FakeCupy(4096), FakeCupy(8192), 102, 2.5, BLOCK=128)
    assert len(events) == 4                                          # unsubscribed


def test_a_failed_generation_is_an_event_with_its_error(gpu):
    @transpiler.jit
    def bad(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), tl.no_such_function(1))
    events = []
    stop = build_events.subscribe(events.append)
    try:
        with pytest.raises(Exception):
            bad[(1,)](FakeCupy(4096), BLOCK=64)
    finally:
        stop()
    assert [e.kind for e in events] == ["generated"] and events[0].error is not None and events[0].source is None


def test_nvrtc_runs_are_events():
    if not compiler.nvrtc_available():
        pytest.skip("no NVRTC here")
    events = []
    stop = build_events.subscribe(events.append)
    try:
        compiler.compile_cubin('extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }', "k", "sm_80")
    finally:
        stop()
    (event,) = events
    assert event.kind == "nvrtc" and event.name == "k" and event.arch == "sm_80" and "__global__" in event.source
