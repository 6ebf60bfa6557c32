"""GPU: `kernel[grid]` through the compiled launch path (templates/native_launch.c) on a real device: the path is
the one that launched (the table's counts), results against float64 NumPy on fresh random inputs with sizes off
the block and outputs poisoned, on CuPy's and torch's current streams (a non-default one each), inside a torch
CUDA graph, with int64 and uint64 scalars, and the Python path for what the compiled one does not take."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.errors import LaunchError
from transpiler.runtime import native_launch

from launch_kernels import axpy
from thread_runner import run_together

axpy_source = axpy.fn

pytestmark = pytest.mark.gpu

POISON = np.float32(np.nan)


def offset_source(X, Out, n, base, BLOCK: tl.constexpr):
    """Out[i] = X[i] + (base % 1000): an int64/uint64 scalar that must arrive whole."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(Out + i, tl.load(X + i, mask=m) + (base % 1000).to(tl.float32), mask=m)


def _compiled(kernel):
    table = kernel._native_table
    assert table, f"no compiled launch path: {native_launch.unavailable_reason()}"
    return table.counts()


def test_the_compiled_path_launches_and_computes_what_numpy_does():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    k = transpiler.jit(axpy_source)
    block = 128
    for n in (1, 127, 1000, 4099):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        xd, yd = cupy.asarray(x), cupy.asarray(y)
        out = cupy.full(n, POISON, cupy.float32)
        for _ in range(3):
            alpha = float(rng.uniform(-3, 3))
            out.fill(POISON)
            k[(transpiler.cdiv(n, block),)](xd, yd, out, n, alpha, BLOCK=block)
            np.testing.assert_allclose(cupy.asnumpy(out), alpha * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assert _compiled(k)["compiled"] >= 4


def test_cupys_current_stream_is_used():
    cupy = pytest.importorskip("cupy")
    k = transpiler.jit(axpy_source)
    n = 1 << 20
    x, y = cupy.random.standard_normal(n, dtype=cupy.float32), cupy.random.standard_normal(n, dtype=cupy.float32)
    out = cupy.full(n, POISON, cupy.float32)
    k[(n // 256,)](x, y, out, n, 2.0, BLOCK=256)
    k[(n // 256,)](x, y, out, n, 2.0, BLOCK=256)
    cupy.cuda.Device().synchronize()
    before = _compiled(k)["compiled"]
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        out.fill(POISON)                        # on `stream`: the launch must be ordered after it
        k[(n // 256,)](x, y, out, n, 3.0, BLOCK=256)
        result = cupy.asnumpy(out, stream=stream)
    stream.synchronize()
    np.testing.assert_allclose(result, 3.0 * cupy.asnumpy(x).astype(np.float64) + cupy.asnumpy(y), rtol=1e-6,
                               atol=1e-6)
    assert _compiled(k)["compiled"] == before + 1


def test_torchs_current_stream_and_a_cuda_graph():
    torch = pytest.importorskip("torch")
    k = transpiler.jit(axpy_source)
    n = 5000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    grid = (transpiler.cdiv(n, 128),)
    k[grid](x, y, out, n, 1.5, BLOCK=128)
    k[grid](x, y, out, n, 1.5, BLOCK=128)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out.fill_(float("nan"))
        k[grid](x, y, out, n, -2.0, BLOCK=128)
    stream.synchronize()
    torch.testing.assert_close(out, -2.0 * x + y)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph, stream=side):
            k[grid](x, y, out, n, 0.5, BLOCK=128)
    out.fill_(float("nan"))
    x.copy_(torch.randn(n, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 0.5 * x + y)
    assert _compiled(k)["compiled"] >= 3


@pytest.mark.parametrize("base", [2**40 + 123, 2**63 + 456, -(2**35) - 7])
def test_wide_integer_scalars_arrive_whole(base):
    cupy = pytest.importorskip("cupy")
    k = transpiler.jit(offset_source)
    rng = np.random.default_rng()
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    out = cupy.full(n, POISON, cupy.float32)
    for _ in range(2):
        out.fill(POISON)
        k[(transpiler.cdiv(n, 256),)](cupy.asarray(x), out, n, base, BLOCK=256)
    expected = x.astype(np.float64) + float(np.fmod(base, 1000) if base < 2**63 else base % 1000)
    np.testing.assert_allclose(cupy.asnumpy(out), expected, rtol=1e-6, atol=1e-5)
    assert _compiled(k)["compiled"] >= 1


def test_what_the_compiled_path_does_not_take_still_launches_or_refuses_at_the_users_line():
    cupy = pytest.importorskip("cupy")
    k = transpiler.jit(axpy_source)
    n = 300
    x, y = cupy.ones(n, cupy.float32), cupy.ones(n, cupy.float32)
    out = cupy.full(n, POISON, cupy.float32)
    k[(3,)](x, y, out, n, 2.0, BLOCK=128)
    k[(3,)](x, y, out, n, np.float32(2.0), BLOCK=128)          # a NumPy scalar: the Python path
    cupy.cuda.Device().synchronize()
    assert float(out[0]) == 3.0
    with pytest.raises(LaunchError, match="host memory|in host") as info:
        k[(3,)](x, np.ones(n, np.float32), out, n, 2.0, BLOCK=128)
    assert info.value.call_chain and info.value.call_chain[0].file == __file__
    with pytest.raises(LaunchError, match="does not fit"):
        k[(3,)](x, y, out, n, 1e300, BLOCK=128)


def test_explicit_streams_of_cupy_and_torch_from_several_threads_launch_through_the_compiled_path():
    """bench/load_test.py's pattern: threads, each with two non-blocking streams given as `stream=` (CuPy's and,
    where torch is here, torch's), outputs poisoned on that stream first; every result right, and all but the
    launches that met no launcher yet went through the compiled path."""
    cupy = pytest.importorskip("cupy")
    try:
        import torch
    except ImportError:
        torch = None
    k = transpiler.jit(axpy_source)
    threads, rounds, block = 8, 40, 128
    wrong = []

    def work(index):
        cupy.cuda.Device(0).use()
        rng = np.random.default_rng(index)
        n = 1000 + 37 * index
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        streams = [("cupy", cupy.cuda.Stream(non_blocking=True))]
        if torch is not None:
            streams.append(("torch", torch.cuda.Stream()))
        arrays = {name: ((cupy.asarray(x), cupy.asarray(y), cupy.empty(n, cupy.float32)) if name == "cupy" else
                         (torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(),
                          torch.empty(n, device="cuda")))
                  for name, _ in streams}
        cupy.cuda.Device().synchronize()     # the copies ran on the default stream: done before the others
        for i in range(rounds):
            name, stream = streams[i % len(streams)]
            xd, yd, out = arrays[name]
            alpha = float(rng.uniform(-3, 3))
            if name == "cupy":
                with stream:
                    out.fill(POISON)
            else:
                with torch.cuda.stream(stream):
                    out.fill_(float("nan"))
            k[(transpiler.cdiv(n, block),)](xd, yd, out, n, alpha, BLOCK=block, stream=stream)
            stream.synchronize()
            got = cupy.asnumpy(out) if name == "cupy" else out.cpu().numpy()
            if not np.allclose(got, alpha * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6):
                wrong.append((index, i, name))
    assert run_together(threads, work) == [] and wrong == []
    counts = _compiled(k)
    assert counts["compiled"] + counts["handed_over"] == threads * rounds
    # sizes 1000 + 37 i take 1, 2, 4, 8 or 16 as n's divisibility, on CuPy arrays and torch tensors
    assert counts["handed_over"] <= threads * 2 and counts["compiled"] >= threads * (rounds - 2)
