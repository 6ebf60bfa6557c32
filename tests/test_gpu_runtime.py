"""The launch path on one real GPU: results, streams, CUDA graph capture (CuPy and torch), the device context
logic, threads, and a warm process that launches from the disk cache without parsing or NVRTC.

Each test that counts compiles gets its own disk cache folder and its own kernel object.
"""
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.runtime import compiler

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]


def _scale(X, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A new kernel object, an empty disk cache and a counter of NVRTC compiles."""
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    compiles = []
    real = compiler.compile_tuned

    def counting(source, name, arch, shared_bytes=0):
        compiles.append(arch)
        return real(source, name, arch, shared_bytes)
    monkeypatch.setattr(compiler, "compile_tuned", counting)
    return transpiler.jit(_scale), compiles


def test_cupy_launch_matches_numpy(fresh):
    import cupy
    k, _ = fresh
    x = cupy.arange(1000, dtype=cupy.float32)
    y = cupy.zeros(1000, cupy.float32)
    k[(4,)](x, y, 1000, 3.0, BLOCK=256)
    np.testing.assert_allclose(y.get(), 3.0 * np.arange(1000))


def test_launch_on_a_cupy_stream_is_ordered_on_that_stream(fresh):
    import cupy
    k, _ = fresh
    x = cupy.arange(1 << 20, dtype=cupy.float32)
    y = cupy.zeros(1 << 20, cupy.float32)
    z = cupy.zeros(1 << 20, cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()         # the inputs were made on another stream
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        for _ in range(20):                    # y = 2x, then z = 2y, ordered only by the stream
            k[(1 << 10,)](x, y, 1 << 20, 2.0, BLOCK=1024)
            k[(1 << 10,)](y, z, 1 << 20, 2.0, BLOCK=1024)
    s.synchronize()
    np.testing.assert_allclose(z.get(), 4.0 * np.arange(1 << 20))


def test_torch_launch_uses_torchs_current_stream(fresh):
    torch = pytest.importorskip("torch")
    k, _ = fresh
    x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    y = torch.zeros_like(x)
    z = torch.zeros_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())    # the inputs were made on the default stream
    with torch.cuda.stream(s):
        for _ in range(20):
            k[(1 << 10,)](x, y, 1 << 20, 2.0, BLOCK=1024)
            k[(1 << 10,)](y, z, 1 << 20, 2.0, BLOCK=1024)
    s.synchronize()
    torch.testing.assert_close(z, 4.0 * x)


def test_cupy_graph_capture_replays_with_new_input_data(fresh):
    import cupy
    k, _ = fresh
    n = 5000
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.zeros(n, cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        k[(20,)](x, y, n, 2.0, BLOCK=256)        # compile and load before capturing
        s.synchronize()
        s.begin_capture()
        k[(20,)](x, y, n, 2.0, BLOCK=256)
        k[(20,)](y, y, n, 0.5, BLOCK=256)
        graph = s.end_capture()
    for trial in range(3):                        # new data in the same buffers, then replay
        host = np.random.default_rng(trial).standard_normal(n).astype(np.float32)
        with s:
            x.set(host)
            y.fill(0)
            graph.launch(s)
        s.synchronize()
        np.testing.assert_allclose(y.get(), host, rtol=1e-6)


def test_torch_graph_capture_replays_with_new_input_data(fresh):
    torch = pytest.importorskip("torch")
    k, _ = fresh
    n = 5000
    x = torch.zeros(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                 # warm up on a side stream, as torch's graph docs ask
        for _ in range(3):
            k[(20,)](x, y, n, 3.0, BLOCK=256)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k[(20,)](x, y, n, 3.0, BLOCK=256)
    for trial in range(3):
        x.copy_(torch.randn(n, device="cuda", generator=torch.Generator("cuda").manual_seed(trial)))
        y.zero_()
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, 3.0 * x)


def test_launch_from_a_thread_with_no_context_yet(fresh):
    import cupy
    k, _ = fresh
    x = cupy.arange(256, dtype=cupy.float32)
    y = cupy.zeros(256, cupy.float32)
    k[(1,)](x, y, 256, 2.0, BLOCK=256)
    cupy.cuda.runtime.deviceSynchronize()
    y.fill(0)
    errors = []

    def worker():
        try:
            k[(1,)](x, y, 256, 5.0, BLOCK=256)
            cupy.cuda.runtime.deviceSynchronize()
        except Exception as e:
            errors.append(e)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors == []
    np.testing.assert_allclose(y.get(), 5.0 * np.arange(256))


def test_launch_while_another_context_is_current_uses_the_arrays_context_and_restores(fresh):
    """One GPU can still show the context switch: make a second (non-primary) context current, launch, and
    find the result right and that context current again."""
    import cupy
    from cupy_backends.cuda.api import driver
    k, _ = fresh
    x = cupy.arange(256, dtype=cupy.float32)
    y = cupy.zeros(256, cupy.float32)
    k[(1,)](x, y, 256, 2.0, BLOCK=256)
    cupy.cuda.runtime.deviceSynchronize()
    primary = driver.ctxGetCurrent()
    try:
        other = driver.ctxCreate(0)                 # becomes current
    except Exception as e:                          # exclusive compute mode, ...
        pytest.skip(f"cannot create a second context: {e}")
    try:
        k[(1,)](x, y, 256, 7.0, BLOCK=256)
        assert driver.ctxGetCurrent() == other
    finally:
        driver.ctxSetCurrent(primary)
        driver.ctxDestroy(other)
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_allclose(y.get(), 7.0 * np.arange(256))


def test_16_threads_on_one_gpu_each_on_its_stream_compile_once_and_get_their_results(fresh):
    import cupy
    k, compiles = fresh
    n = 1 << 16
    barrier = threading.Barrier(16)
    errors = []

    def worker(i):
        try:
            s = cupy.cuda.Stream(non_blocking=True)
            with s:
                x = cupy.full(n, float(i), dtype=cupy.float32)
                y = cupy.zeros(n, cupy.float32)
                s.synchronize()
                barrier.wait(timeout=120)
                for _ in range(50):
                    k[(n // 1024,)](x, y, n, 2.0, BLOCK=1024)
                s.synchronize()
                assert float(y[0].get()) == 2.0 * i and float(y[-1].get()) == 2.0 * i
        except Exception as e:
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    assert len(compiles) == 1 and len(k.variants) == 1


def test_arrays_in_host_memory_are_refused_before_launching(fresh):
    import cupy
    k, _ = fresh
    with pytest.raises(transpiler.LaunchError, match="host memory"):
        k[(1,)](np.zeros(256, np.float32), cupy.zeros(256, cupy.float32), 256, 2.0, BLOCK=256)


@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_a_new_process_launches_from_the_disk_cache_without_parsing_or_nvrtc(tmp_path, framework):
    """Process 1 compiles; process 2 launches the same specialization: no libcst, no NVRTC (and, with torch
    tensors, no `import cupy`), and the time from the first call to its return is reported (target: < 30 ms)."""
    if framework == "torch":
        pytest.importorskip("torch")
    make = {"cupy": """
        import cupy
        x = cupy.arange(1000, dtype=cupy.float32)
        y = cupy.zeros(1000, cupy.float32)
        cupy.cuda.runtime.deviceSynchronize()
        sync, host = cupy.cuda.runtime.deviceSynchronize, lambda a: a.get()""", "torch": """
        import torch
        x = torch.arange(1000, device="cuda", dtype=torch.float32)
        y = torch.zeros(1000, device="cuda")
        torch.cuda.synchronize()
        sync, host = torch.cuda.synchronize, lambda a: a.cpu().numpy()"""}[framework]
    script = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        import numpy as np
        {textwrap.indent(textwrap.dedent(make), '        ').strip()}
        t1 = time.perf_counter()
        import transpiler
        from transpiler.runtime import compiler
        from test_gpu_runtime import _scale
        if sys.argv[1] == "warm":
            def no_nvrtc(*args):
                raise AssertionError("NVRTC ran in the warm process")
            compiler.compile_tuned = compiler.compile_cubin = no_nvrtc
        k = transpiler.jit(_scale)
        t2 = time.perf_counter()
        k[(4,)](x, y, 1000, 3.0, BLOCK=256)
        t3 = time.perf_counter()
        sync()
        assert np.allclose(host(y), 3.0 * np.arange(1000))
        heavy = [m for m in ("libcst", "jinja2", "transpiler.parse", "transpiler.analysis", "transpiler.emit_cuda")
                 if m in sys.modules]
        if {framework!r} == "torch" and "cupy" in sys.modules:
            heavy.append("cupy")
        print(json.dumps(dict(import_s=t2 - t1, first_launch_s=t3 - t2, heavy=heavy)))
    """)
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(tmp_path / "cache"), CUPY_CACHE_DIR=str(tmp_path / "cupy"),
               PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"))   # .pyc as installed
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for which in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(__import__("json").loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    print(f"{framework}: cold first launch {cold['first_launch_s'] * 1e3:.1f} ms; warm: import "
          f"{warm['import_s'] * 1e3:.1f} ms, first launch {warm['first_launch_s'] * 1e3:.1f} ms")
    assert warm["heavy"] == [], f"the warm process imported {warm['heavy']}"
    assert warm["first_launch_s"] < cold["first_launch_s"]
