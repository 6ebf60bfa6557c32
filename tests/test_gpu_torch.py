"""torch custom ops on the GPU (`runtime/torch_ops.py`): our kernels registered with one call each run eagerly,
inside torch.compile(fullgraph=True) graphs compiled by inductor (0 graph breaks; static and dynamic shapes; an
op that writes in place), inside a CUDA graph captured with torch.cuda.graph and replayed on new data, and under
mode="reduce-overhead" (inductor's CUDA graphs). References: float64 NumPy on fresh random inputs (sizes not
multiples of the block; outputs poisoned by the wrappers) and, where Triton is importable, the same kernel
source under Triton."""
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch_op_kernels as kernels  # noqa: E402
from torch_op_wrappers import register, wrappers  # noqa: E402

pytestmark = pytest.mark.gpu
OPS = register("transpiler_gpu_test", kernels)


def _triton_importable():
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


# inductor writes the graph's other ops in Triton: without it (the sanitizer sweep hides it) those tests skip
needs_inductor = pytest.mark.skipif(not _triton_importable(), reason="torch.compile's inductor needs Triton")
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=2e-3)}


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()


def _rand(*shape, seed, dtype=torch.float32):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=g, device="cuda") * 3).to(dtype)


def _np(t):
    return t.detach().double().cpu().numpy()


def _softmax64(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_eager_ops_match_float64(dtype):
    x = _rand(5000, seed=1, dtype=dtype)
    np.testing.assert_allclose(_np(OPS["affine"](x, 1.5, -0.25)), _np(x) * 1.5 - 0.25, **TOL[dtype])
    m = _rand(37, 1000, seed=2, dtype=dtype)
    np.testing.assert_allclose(_np(OPS["row_softmax"](m)), _softmax64(_np(m)), **TOL[dtype])


def test_eager_ops_match_the_triton_twin_of_the_same_source():
    from triton_twin import triton_twin_of
    theirs = wrappers(triton_twin_of(Path(kernels.__file__)))
    x, m = _rand(3001, seed=3), _rand(29, 777, seed=4)
    torch.testing.assert_close(OPS["affine"](x, -0.5, 2.0), theirs["affine"](x, -0.5, 2.0), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(OPS["row_softmax"](m), theirs["row_softmax"](m), rtol=1e-5, atol=1e-6)


def _graph(x):
    y = torch.ops.transpiler_gpu_test.affine(torch.relu(x) + 1, 0.5, -1.0)
    return torch.ops.transpiler_gpu_test.row_softmax(y * 2).sum(dim=1)


def _graph64(x):
    return _softmax64((np.maximum(x, 0) + 1) * 0.5 * 2 - 2).sum(axis=1)


@needs_inductor
def test_inductor_fullgraph_compile_has_no_graph_break_and_matches_float64():
    x = _rand(41, 513, seed=5)
    explanation = torch._dynamo.explain(_graph)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    compiled = torch.compile(_graph, fullgraph=True)
    for seed in (6, 7):
        x = _rand(41, 513, seed=seed)
        np.testing.assert_allclose(_np(compiled(x)), _graph64(_np(x)), rtol=1e-5, atol=1e-5)


@needs_inductor
def test_inductor_dynamic_shapes_run_every_size():
    compiled = torch.compile(lambda x: OPS["affine"](x * 2, 0.25, 1.0) - 1, fullgraph=True, dynamic=True)
    for n, seed in ((1000, 8), (4099, 9), (77, 10)):
        x = _rand(n, seed=seed)
        np.testing.assert_allclose(_np(compiled(x)), _np(x) * 0.5, rtol=1e-5, atol=1e-5)


@needs_inductor
def test_inductor_compiles_an_op_that_writes_in_place():
    def f(acc, x):
        acc = acc * 2
        torch.ops.transpiler_gpu_test.add_into(acc, x.sin())
        return acc - 1

    compiled = torch.compile(f, fullgraph=True)
    acc, x = _rand(3333, seed=11), _rand(3333, seed=12)
    np.testing.assert_allclose(_np(compiled(acc, x)), _np(acc) * 2 + np.sin(_np(x)) - 1, rtol=1e-5, atol=1e-5)


def test_cuda_graph_capture_then_replay_on_new_data():
    static_x = _rand(23, 300, seed=13)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):           # warm-up (compile, load) outside the capture, as torch asks
        _graph(static_x)
    torch.cuda.current_stream().wait_stream(side)
    built = (len(kernels.affine_kernel.variants), len(kernels.row_softmax_kernel.variants))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = _graph(static_x)
    assert (len(kernels.affine_kernel.variants), len(kernels.row_softmax_kernel.variants)) == built
    for seed in (14, 15):
        fresh = _rand(23, 300, seed=seed)
        static_x.copy_(fresh)
        static_out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(_np(static_out), _graph64(_np(fresh)), rtol=1e-5, atol=1e-5)


@needs_inductor
def test_reduce_overhead_mode_replays_inductors_cuda_graph_on_new_data():
    from torch._dynamo.utils import counters
    counters.clear()
    compiled = torch.compile(_graph, fullgraph=True, mode="reduce-overhead")
    for seed in (16, 17, 18, 19):
        x = _rand(17, 1000, seed=seed)
        got = compiled(x).clone()          # inductor's graph outputs are overwritten by the next replay
        np.testing.assert_allclose(_np(got), _graph64(_np(x)), rtol=1e-5, atol=1e-5)
    assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])
