"""GPU: the generated `kernel[grid]` launch function (runtime/grid_launch.py) and the launchers' buffer pool on a
real device: results against float64 NumPy on fresh random inputs, sizes off the block, outputs poisoned before
each launch; the same kernel source under Triton where it is importable; threads launching one launcher at once;
a code-changing switch set after the first launch."""
import threading
from pathlib import Path

import numpy as np
import pytest

import transpiler
from launch_kernels import axpy
from transpiler.runtime import launcher as launcher_mod
from triton_twin import triton_twin_of

pytestmark = pytest.mark.gpu

POISON = np.float32(np.nan)




def _inputs(cupy, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = cupy.full(n, POISON, dtype=cupy.float32)
    return x, y, cupy.asarray(x), cupy.asarray(y), out


def _expected(alpha, x, y):
    return alpha * x.astype(np.float64) + y.astype(np.float64)


@pytest.mark.parametrize("style", ["positional", "constexpr-keyword", "keywords"])
def test_the_grid_function_computes_what_numpy_does(style):
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    block = 256
    for n in (1, 255, 1000, 4099):                     # off the block, one program to many
        x, y, xd, yd, out = _inputs(cupy, rng, n)
        alpha = float(rng.uniform(-3, 3))
        launch = axpy[(transpiler.cdiv(n, block),)]
        for _ in range(3):                             # the first launch builds; the others take the fast path
            out.fill(POISON)
            if style == "positional":
                launch(xd, yd, out, n, alpha, block)
            elif style == "constexpr-keyword":
                launch(xd, yd, out, n, alpha, BLOCK=block)
            else:
                launch(X=xd, Y=yd, Out=out, n=n, alpha=alpha, BLOCK=block)
            np.testing.assert_allclose(cupy.asnumpy(out), _expected(alpha, x, y), rtol=1e-6, atol=1e-6)


def test_torch_tensors_on_the_grid_function_launch_on_torchs_stream_and_agree_with_triton():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    n, block = 3001, 512
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    xt, yt = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            out = torch.full((n,), float("nan"), device="cuda")
            axpy[(transpiler.cdiv(n, block),)](xt, yt, out, n, 1.5, BLOCK=block)
    stream.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), _expected(1.5, x, y), rtol=1e-6, atol=1e-6)
    twin = triton_twin_of(Path(__file__).with_name("launch_kernels.py"))       # skips without Triton
    theirs = torch.full((n,), float("nan"), device="cuda")
    twin.axpy[(transpiler.cdiv(n, block),)](xt, yt, theirs, n, 1.5, BLOCK=block)
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), theirs.cpu().numpy(), rtol=1e-6, atol=1e-6)


def test_threads_launching_one_launcher_at_once_each_get_their_own_arguments():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    n, block, threads, rounds = 2053, 256, 8, 40
    cases = [_inputs(cupy, rng, n) + (float(rng.uniform(-2, 2)),) for _ in range(threads)]
    axpy[(transpiler.cdiv(n, block),)](*cases[0][2:5], n, 1.0, BLOCK=block)     # one launcher for all
    cupy.cuda.runtime.deviceSynchronize()
    errors = []
    barrier = threading.Barrier(threads)

    def work(case):
        x, y, xd, yd, out, alpha = case
        stream = cupy.cuda.Stream(non_blocking=True)
        try:
            barrier.wait()
            with stream:
                for _ in range(rounds):
                    out.fill(POISON)
                    axpy[(transpiler.cdiv(n, block),)](xd, yd, out, n, alpha, BLOCK=block)
                stream.synchronize()
            np.testing.assert_allclose(cupy.asnumpy(out), _expected(alpha, x, y), rtol=1e-6, atol=1e-6)
        except Exception as e:      # reported below, with the thread's case
            errors.append(e)
    pool = [threading.Thread(target=work, args=(case,)) for case in cases]
    for t in pool:
        t.start()
    for t in pool:
        t.join(120)
    assert not errors, errors[:2]
    assert len(axpy._launchers) >= 1


def test_a_debug_switch_set_after_the_first_launch_takes_effect(monkeypatch):
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    k = transpiler.jit(axpy.fn)                        # a kernel object of its own: no launcher cached yet
    n, block = 777, 128
    x, y, xd, yd, out = _inputs(cupy, rng, n)
    monkeypatch.delenv("TRANSPILER_DEBUG", raising=False)
    k[(transpiler.cdiv(n, block),)](xd, yd, out, n, 2.0, BLOCK=block)
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    out.fill(POISON)
    k[(transpiler.cdiv(n, block),)](xd, yd, out, n, 2.0, BLOCK=block)
    kinds = sorted(type(launcher).__name__ for launcher in k._launchers.values())
    assert kinds == ["DebugLauncher", "Launcher"]
    assert isinstance(list(k._launchers.values())[-1], launcher_mod.DebugLauncher)
    np.testing.assert_allclose(cupy.asnumpy(out), _expected(2.0, x, y), rtol=1e-6, atol=1e-6)
