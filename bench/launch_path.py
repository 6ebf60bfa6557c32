#!/usr/bin/env python
"""Where the host time of one launch goes: each step of our launch path timed on its own, in microseconds.

With a GPU (CuPy, and torch when present), the steps run for real on a tiny 4-argument kernel:
    key            the kernel's generated binder over (x, y, n, scale): key, slot values, device
    stream         CuPy's / torch's current-stream lookup
    ctx            cuCtxGetCurrent (one per launch)
    pack           struct.pack_into of the launch configuration and the 4 parameter slots
    driver calls   the launch call alone, parameters packed once, through each candidate binding: ctypes
                   cuLaunchKernel (11 arguments), ctypes cuLaunchKernelEx (4), CuPy's Cython `launchKernel`,
                   cuda.bindings' `cuLaunchKernel` (where importable)
    ours           the whole `kernel[(1,)](x, y, n, scale)` under each launch plan (`launcher.PLANS`: `cupy`,
                   `ex`, `driver`, the candidate `cuda-bindings` defined here and `cupy-lock`, the `cupy` plan
                   before the buffer pool, from bench/launch_cpu.py), CuPy arrays, then torch tensors when
                   torch is there; the general path (`Kernel._launch`, what `kernel[grid]` did before
                   runtime/grid_launch.py); a constexpr given by keyword (`BLOCK=128`)
    compiled       `kernel[(1,)](...)` through the compiled launch path (templates/native_launch.c) against the
                   Python path (`native_launch.enabled = False` when the kernel object's grid function is made),
                   CuPy arrays, torch tensors, a constexpr by keyword; the compiled grid object called alone;
                   the table's counts (launches it made itself / handed to Python) and its one-time build
    RawKernel      cupy.RawKernel of the same kind of kernel, for scale
    side by side   bench/launch_overhead.py's launchers in the same run: ours (compiled and Python path), Triton,
                   RawKernel, torch.mul, timed interleaved (each round times each once; median and min of rounds)
Without a GPU the driver, the streams and the module loading are faked (no-ops), so `ours` is the pure-Python
part of a launch on this machine: run it to see the effect of a change to the launch path before a GPU run.

    python bench/launch_path.py [--n 20000]       (on the H200: the one command for the launch figures)
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import transpiler  # noqa: E402
import transpiler.language as tl  # noqa: E402
from transpiler.runtime import compiler, driver as driver_mod, kernel as kernel_mod, launch_key  # noqa: E402
from transpiler.runtime import launcher as launcher_mod, native_launch  # noqa: E402


@transpiler.jit
def tiny(X, Y, n, scale):
    offs = tl.arange(0, 128)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


@transpiler.jit
def tiny_block(X, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


def per_call_us(fn, n, sync=None, repeats=21):
    """Median over `repeats` of the time per call of `n` calls back to back. With a GPU, `n` stays under the
    driver's queue of pending launches and `sync` empties it between repeats, so that the host, not the GPU's
    rate of tiny kernels, sets the figure."""
    for _ in range(min(n, 500)):
        fn()
    samples = []
    for _ in range(repeats):
        if sync:
            sync()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def fake_gpu():
    """Replace the GPU's edges by no-ops; returns (x, y) standing for CuPy arrays."""
    class FakeCupy:
        def __init__(self, ptr):
            self.data = SimpleNamespace(ptr=ptr, device_id=0)
            self.dtype = np.dtype(np.float32)

    class NoDriver:
        def ctxGetCurrent(self):
            return 1

        def ctxSetCurrent(self, ctx):
            pass

        def launchKernel(self, *args):
            pass

    compiler.compile_tuned = lambda source, name, arch, shared_bytes=0: (b"\x7fELF", None)
    compiler.load_function = lambda cubin, name, device: (None, SimpleNamespace(ptr=1), 1)
    compiler.device_arch = lambda device: "sm_90a"
    launcher_mod.driver = NoDriver()
    launch_key.current_device = lambda: 0
    stream = SimpleNamespace(ptr=0)
    kernel_mod.cupy_stream = lambda device: stream.ptr
    launch_key._cupy_ndarray = FakeCupy
    return FakeCupy(1 << 40), FakeCupy((1 << 40) + 4096)


def driver_calls(launcher, n, sync):
    """The launch call alone through each candidate binding, on the launcher's parameters packed once."""
    driver = driver_mod.driver
    rows = {}
    f, params = launcher._func, launcher._params
    ex_launcher = launcher_mod.Launcher(None, f, launcher.context, launcher.kinds, 4, plan="ex")
    ex_launcher._pack(ex_launcher._buffer, ex_launcher._offset, 1, 1, 1, 128, 1, 1, 0, 0, *SLOTS)
    launch_ex, get_current = driver.raw_launch_functions()
    config, ex_params = ctypes.addressof(ex_launcher._buffer) + ex_launcher._offset, ex_launcher._params
    out = ctypes.c_void_p()
    out_ref = ctypes.byref(out)
    calls = {
        "ctx: cuCtxGetCurrent (ctypes, raw)": lambda: get_current(out_ref),
        "ctx: cuCtxGetCurrent (ctypes method)": driver.ctxGetCurrent,
        "call: cuLaunchKernel (ctypes, 11 args)": lambda: driver.launchKernel(f, 1, 1, 1, 128, 1, 1, 0, 0, params, 0),
        "call: cuLaunchKernelEx (ctypes, 4 args)": lambda: launch_ex(config, f, ex_params, None),
    }
    from cupy_backends.cuda.api import driver as cupy_driver
    calls["call: cuLaunchKernel (CuPy Cython)"] = lambda: cupy_driver.launchKernel(f, 1, 1, 1, 128, 1, 1, 0, 0,
                                                                                   params, 0)
    bindings = _cuda_bindings()
    if bindings is not None:
        cf, cs = bindings.CUfunction(f), bindings.CUstream(0)
        calls["call: cuLaunchKernel (cuda.bindings)"] = lambda: bindings.cuLaunchKernel(cf, 1, 1, 1, 128, 1, 1, 0,
                                                                                        cs, params, 0)
    for name, call in calls.items():
        try:
            rows[name] = per_call_us(call, n, sync)
        except Exception as e:       # a candidate that does not run here is reported, not fatal
            print(f"{name} failed: {type(e).__name__}: {e}")
    return rows


SLOTS = []


def _cuda_bindings():
    try:
        from cuda.bindings import driver as bindings
    except ImportError:
        try:
            from cuda import cuda as bindings      # cuda-python before 12.6
        except ImportError:
            return None
    return bindings


def _binding_plan(call_for):
    """A candidate launch plan like `launcher._driver_plan`, but launching through `call_for(launcher)`:
    `call(gx, gy, gz, stream)` with the parameters already packed (the context check as in the `ex` plan)."""
    def plan(launcher):
        launcher._lay_out()
        pack, context, name = launcher._pack, launcher.context, launcher.name
        call = call_for(launcher)
        _, get_current = driver_mod.driver.raw_launch_functions()
        current = ctypes.c_void_p()
        current_ref = ctypes.byref(current)
        record = launcher_mod.recent_launches.append

        pop, push = launcher_mod._buffer_pool(launcher)

        def launch(gx, gy, gz, values, stream):
            buffers = pop()
            try:
                pack(buffers[0], buffers[1], *values)
                get_current(current_ref)
                if current.value != context:
                    raise RuntimeError("candidate plans are timed in the arrays' context only")
                call(gx, gy, gz, stream)
            finally:
                push(buffers)
            record((name, gx, gy, gz))
        return launch
    return plan


def _cuda_bindings_call(launcher):
    bindings = _cuda_bindings()
    f, block, shared, params = bindings.CUfunction(launcher._func), launcher.block, launcher.shared_bytes, \
        launcher._params   # the pool's first buffer set (the timing runs on one thread)
    streams = {}

    def call(gx, gy, gz, stream):
        s = streams.get(stream) or streams.setdefault(stream, bindings.CUstream(stream))
        (status,) = bindings.cuLaunchKernel(f, gx, gy, gz, block, 1, 1, shared, s, params, 0)
        if status != bindings.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernel: {status}")
    return call


def full_path_per_plan(x, y, n, sync):
    """The whole `kernel[(1,)](x, y, 100, 2.0)` under each launch plan (a fresh kernel object per plan)."""
    if _cuda_bindings() is not None:
        launcher_mod.PLANS.setdefault("cuda-bindings", _binding_plan(_cuda_bindings_call))
    from launch_cpu import _locked_plan          # the `cupy` plan before the buffer pool, for comparison
    launcher_mod.PLANS.setdefault("cupy-lock", _locked_plan)
    rows = {}
    import cupy
    for plan in launcher_mod.PLANS:
        launcher_mod.forced_plan = plan
        try:
            k = python_path(transpiler.jit(tiny.fn))        # the plans are the Python path's
            y[...] = 0
            k[(1,)](x, y, 100, 2.0)
            sync()
            assert np.allclose(cupy.asnumpy(y)[:100], 2 * cupy.asnumpy(x)[:100]), f"wrong result ({plan})"
            rows[f"ours, plan {plan}"] = per_call_us(lambda: k[(1,)](x, y, 100, 2.0), n, sync)
        except Exception as e:       # a candidate that does not run here is reported, not fatal
            print(f"plan {plan} failed: {type(e).__name__}: {e}")
        finally:
            launcher_mod.forced_plan = None
    return rows


def python_path(kernel):
    """`kernel`, its `kernel[grid]` functions made on the Python path (the compiled path off while the first is
    made: the choice is kept per kernel object)."""
    native_launch.enabled = False
    try:
        kernel[(1,)]
    finally:
        native_launch.enabled = True
    return kernel


def compiled_rows(x, y, n, sync, label="", stream=None):
    """`_compiled_rows`, its failure reported rather than fatal."""
    try:
        return _compiled_rows(x, y, n, sync, label, stream)
    except Exception as e:
        print(f"compiled rows{label} failed: {type(e).__name__}: {e}")
        return {}


def _compiled_rows(x, y, n, sync, label, stream):
    """The compiled launch path against the Python path, the same kernel source and arguments, interleaved in
    this run, also with an explicit `stream=` (a CuPy or torch stream object, as bench/load_test.py launches);
    the table's counts prove which path launched."""
    rows = {}
    fast, slow = transpiler.jit(tiny.fn), python_path(transpiler.jit(tiny.fn))
    fast_block, slow_block = transpiler.jit(tiny_block.fn), python_path(transpiler.jit(tiny_block.fn))
    for k in (fast, slow):
        k[(1,)](x, y, 100, 2.0)
        k[(1,)](x, y, 100, 2.0)
    for k in (fast_block, slow_block):
        k[(1,)](x, y, 100, 2.0, BLOCK=128)
        k[(1,)](x, y, 100, 2.0, BLOCK=128)
    if not fast._native_table:
        print(f"compiled launch path unavailable: {native_launch.unavailable_reason()}")
        return rows
    on_grid = fast[(1,)]
    candidates = {
        "compiled": lambda: fast[(1,)](x, y, 100, 2.0),
        "Python path": lambda: slow[(1,)](x, y, 100, 2.0),
        "compiled, grid object alone": lambda: on_grid(x, y, 100, 2.0),
        "compiled, BLOCK= by kw": lambda: fast_block[(1,)](x, y, 100, 2.0, BLOCK=128),
        "Python path, BLOCK= by kw": lambda: slow_block[(1,)](x, y, 100, 2.0, BLOCK=128),
        "compiled, kernel[lambda meta: ...]": lambda: fast_block[lambda meta: (1,)](x, y, 100, 2.0, BLOCK=128),
        "Python path, kernel[lambda meta: ...]": lambda: slow_block[lambda meta: (1,)](x, y, 100, 2.0, BLOCK=128)}
    if stream is not None:
        candidates["compiled, stream= object"] = lambda: fast[(1,)](x, y, 100, 2.0, stream=stream)
        candidates["Python path, stream= object"] = lambda: slow[(1,)](x, y, 100, 2.0, stream=stream)
    for name, (median, best) in interleaved_us(candidates, n, sync).items():
        rows[f"ours{label}: {name}"] = median
        rows[f"ours{label}: {name} (min)"] = best
    counts = fast._native_table.counts()
    print(f"compiled table counts{label}: {counts}, plans {fast._native_table.plans()}")
    assert counts["compiled"] > 1000 and counts["handed_over"] == 1, counts
    return rows


def side_by_side(n, sync):
    """bench/launch_overhead.py's launchers in this run: ours (CuPy arrays, torch tensors, a torch custom op),
    Triton, cupy.RawKernel and torch.mul, each checked once, then timed as the rows above."""
    sys.path.insert(0, str(ROOT / "bench"))
    import launch_overhead
    rows = {}
    try:
        builders = launch_overhead.launchers()
    except Exception as e:           # no torch here: the rows above are the comparison
        print(f"side by side skipped: {type(e).__name__}: {e}")
        return rows
    try:
        python = launch_overhead.launchers(prepare_ours=lambda k: python_path(transpiler.jit(k.fn)))
        builders.update({name.replace("ours", "ours (Python path)"): build for name, build in python.items()
                         if name.startswith("ours") and "custom op" not in name})
    except Exception as e:
        print(f"side by side, Python path skipped: {type(e).__name__}: {e}")
    launches = {}
    for name, build in builders.items():
        try:
            launch, out, inp = build()
            launch_overhead.check(name, launch, out, inp)
            launches[name] = launch
        except Exception as e:       # Triton missing, say: reported, not fatal
            print(f"side by side: {name} failed: {type(e).__name__}: {e}"[:300])
    for name, (median, best) in interleaved_us(launches, n, sync).items():
        rows[f"side by side: {name}"] = median
        rows[f"side by side: {name} (min)"] = best
    return rows


def interleaved_us(launches, n, sync, rounds=21):
    """{name: (median, min) over `rounds` of the us per call of `n` calls}, every launcher timed once per round
    (so a slow stretch of the host touches all of them alike, not the one timed during it)."""
    samples = {name: [] for name in launches}
    for launch in launches.values():
        for _ in range(min(n, 500)):
            launch()
    for _ in range(rounds):
        for name, launch in launches.items():
            sync()
            start = time.perf_counter()
            for _ in range(n):
                launch()
            samples[name].append((time.perf_counter() - start) / n * 1e6)
    return {name: (statistics.median(v), min(v)) for name, v in samples.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="calls per repeat (default 500 on a GPU, 20000 without)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRANSPILER_CACHE_DIR", "/tmp/transpiler-launch-path-cache")
    on_gpu = transpiler.gpu_available()
    rows = {}
    if on_gpu:
        import cupy
        x = cupy.arange(256, dtype=cupy.float32)
        y = cupy.zeros(256, cupy.float32)
        sync = cupy.cuda.runtime.deviceSynchronize
    else:
        x, y = fake_gpu()
        sync = None
    n = args.n or (500 if on_gpu else 20000)
    start = time.perf_counter()
    built = native_launch.module()
    print(f"compiled launch path: {'loaded' if built else native_launch.unavailable_reason()} "
          f"({time.perf_counter() - start:.2f} s, a build on first use per machine)")
    values = (x, y, 100, 2.0)
    tiny[(1,)](x, y, 100, 2.0)
    rows["key"] = per_call_us(lambda: tiny._binder(values, 4, 3), n, sync)
    (launcher,) = tiny._launchers.values()
    slots = [values[0].data.ptr, values[1].data.ptr, 100, 2.0]
    SLOTS[:] = slots
    pack, buffer, offset = launcher._pack, launcher._buffer, launcher._offset
    rows["pack"] = per_call_us(lambda: pack(buffer, offset, 1, 1, 1, 128, 1, 1, 0, 0, *slots)
                               if launcher.plan == "ex" else pack(buffer, offset, *slots), n, sync)
    if on_gpu:
        rows["stream (CuPy)"] = per_call_us(lambda: launcher_mod.cupy_stream(0), n, sync)
        try:
            import torch
            torch.cuda.init()
            rows["stream (torch)"] = per_call_us(lambda: launcher_mod.torch_stream(0), n, sync)
        except ImportError:
            pass
        rows.update(driver_calls(launcher, n, sync))
        rows.update(full_path_per_plan(x, y, n, sync))
    if on_gpu:
        rows.update(compiled_rows(x, y, n, sync, stream=cupy.cuda.Stream(non_blocking=True)))
    rows["ours"] = per_call_us(lambda: tiny[(1,)](x, y, 100, 2.0), n, sync)
    rows["ours, general path"] = per_call_us(lambda: tiny._launch((1,), (x, y, 100, 2.0), 4, 3, None, {}), n, sync)
    rows["ours via run(grid=...)"] = per_call_us(lambda: tiny.run(x, y, 100, 2.0, grid=(1,)), n, sync)
    tiny_block[(1,)](x, y, 100, 2.0, BLOCK=128)
    rows["ours, BLOCK= by keyword"] = per_call_us(lambda: tiny_block[(1,)](x, y, 100, 2.0, BLOCK=128), n, sync)
    if on_gpu:
        try:
            import torch
            xt = torch.arange(256, device="cuda", dtype=torch.float32)
            yt = torch.zeros(256, device="cuda")
            tiny[(1,)](xt, yt, 100, 2.0)
            rows["key (torch tensors)"] = per_call_us(lambda: tiny._binder((xt, yt, 100, 2.0), 4, 3), n, sync)
            rows["ours (torch tensors)"] = per_call_us(lambda: tiny[(1,)](xt, yt, 100, 2.0), n, sync)
            rows.update(compiled_rows(xt, yt, n, sync, label=" (torch tensors)", stream=torch.cuda.Stream()))
            torch.cuda.synchronize()
            assert torch.equal(yt[:100], 2 * xt[:100]), "wrong result (torch)"
        except ImportError:
            pass
        raw = cupy.RawKernel(r'extern "C" __global__ void k(const float* x, float* y, int n, float s)'
                             r'{ int i = threadIdx.x; if (i < n) y[i] = x[i] * s; }', "k")
        raw_args = (x, y, np.int32(100), np.float32(2.0))
        rows["RawKernel"] = per_call_us(lambda: raw((1,), (128,), raw_args), n, sync)
        cupy.cuda.runtime.deviceSynchronize()
        assert np.allclose(cupy.asnumpy(y)[:100], 2 * np.arange(100)), "wrong result"
        rows.update(side_by_side(n, sync))
    where = "GPU" if on_gpu else "no GPU: driver, streams and loading faked"
    print(f"host time per step of one launch ({where}; median of 21 x {n} calls):")
    for name, us in rows.items():
        print(f"  {name:28} {us:6.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
