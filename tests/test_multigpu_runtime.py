"""Several GPUs: a launch runs on the device holding its arrays whatever the current device, arguments on two
devices fail before launching, modules are loaded per device, and threads each driving their own GPU on their
own stream get their own results with one compile per architecture.
"""
import threading

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.runtime import compiler

pytestmark = pytest.mark.multigpu


def _scale(X, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    compiles, loads = [], []
    real_compile, real_load = compiler.compile_tuned, compiler.load_function

    def counting_compile(source, name, arch, shared_bytes=0):
        compiles.append(arch)
        return real_compile(source, name, arch, shared_bytes)

    def counting_load(cubin, name, device):
        loads.append(device)
        return real_load(cubin, name, device)
    monkeypatch.setattr(compiler, "compile_tuned", counting_compile)
    monkeypatch.setattr(compiler, "load_function", counting_load)
    return transpiler.jit(_scale), compiles, loads


def _on(device, n=1000):
    import cupy
    with cupy.cuda.Device(device):
        return cupy.arange(n, dtype=cupy.float32), cupy.zeros(n, cupy.float32)


def test_cupy_arrays_on_device_1_launch_there_while_device_0_is_current(fresh):
    import cupy
    k, _, loads = fresh
    x, y = _on(1)
    with cupy.cuda.Device(0):
        k[(4,)](x, y, 1000, 2.0, BLOCK=256)
        assert cupy.cuda.runtime.getDevice() == 0
    with cupy.cuda.Device(1):
        cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_allclose(y.get(), 2.0 * np.arange(1000))
    assert loads == [1]


def test_torch_tensors_on_cuda1_launch_on_device_1s_current_torch_stream(fresh):
    torch = pytest.importorskip("torch")
    k, _, _ = fresh
    x = torch.arange(1 << 20, device="cuda:1", dtype=torch.float32)
    y, z = torch.zeros_like(x), torch.zeros_like(x)
    s = torch.cuda.Stream(device=1)
    s.wait_stream(torch.cuda.current_stream(1))   # the inputs were made on device 1's default stream
    with torch.cuda.stream(s):                   # s becomes device 1's current stream (and device 1 current)
        torch.cuda.set_device(0)                 # device 0 current again; device 1's current stream stays s
        assert torch.cuda.current_stream(1) == s
        for _ in range(10):                      # ordered only by s: y = 2x, then z = 2y
            k[(1 << 10,)](x, y, 1 << 20, 2.0, BLOCK=1024)
            k[(1 << 10,)](y, z, 1 << 20, 2.0, BLOCK=1024)
        assert torch.cuda.current_device() == 0
    s.synchronize()
    torch.testing.assert_close(z, 4.0 * x)


def test_arrays_on_two_devices_raise_before_any_launch(fresh):
    import cupy
    k, compiles, loads = fresh
    x, _ = _on(0)
    _, y = _on(1)
    with pytest.raises(transpiler.LaunchError, match="different devices"):
        k[(4,)](x, y, 1000, 2.0, BLOCK=256)
    assert compiles == [] and loads == []
    with cupy.cuda.Device(1):
        assert float(y.sum().get()) == 0.0


def test_each_device_gets_its_own_module_from_one_compile(fresh):
    import cupy
    k, compiles, loads = fresh
    for device in range(cupy.cuda.runtime.getDeviceCount()):
        x, y = _on(device)
        k[(4,)](x, y, 1000, float(device + 1), BLOCK=256)
        with cupy.cuda.Device(device):
            np.testing.assert_allclose(y.get(), (device + 1) * np.arange(1000))
    (variant,) = k.variants.values()
    contexts = {variant.function(d)[2] for d in range(cupy.cuda.runtime.getDeviceCount())}
    assert len(contexts) == cupy.cuda.runtime.getDeviceCount()
    assert sorted(loads) == list(range(cupy.cuda.runtime.getDeviceCount()))
    archs = {compiler.device_arch(d) for d in range(cupy.cuda.runtime.getDeviceCount())}
    assert len(compiles) == len(archs)


def test_one_thread_per_gpu_each_on_its_own_stream(fresh):
    import cupy
    k, compiles, _ = fresh
    count = cupy.cuda.runtime.getDeviceCount()
    n = 1 << 20
    barrier = threading.Barrier(2 * count)
    errors = []

    def worker(i):
        device = i % count
        try:
            with cupy.cuda.Device(device):
                s = cupy.cuda.Stream(non_blocking=True)
                with s:
                    x = cupy.full(n, float(i), dtype=cupy.float32)
                    y = cupy.zeros(n, cupy.float32)
                    s.synchronize()
                    barrier.wait(timeout=120)
                    for _ in range(100):
                        k[(n // 1024,)](x, y, n, 2.0, BLOCK=1024)
                    s.synchronize()
                    assert float(y[0].get()) == 2.0 * i and float(y[-1].get()) == 2.0 * i
        except Exception as e:
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2 * count)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    assert len(compiles) == len({compiler.device_arch(d) for d in range(count)})


def test_distributed_smoke_script_passes_on_two_gpus():
    """bench/distributed_smoke.py: one NCCL process per GPU running the examples, results all-reduced."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    pytest.importorskip("torch.distributed")
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(root / "bench" / "distributed_smoke.py"), "--gpus", "2"],
                          capture_output=True, text=True, env=env, timeout=600)
    print(done.stdout[-4000:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 failed" in done.stdout
