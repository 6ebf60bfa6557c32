"""GPU: autotuning with real timings. The configs' speeds differ by construction (one does 512 additions per
element where the other does one), so the right choice is known; results are checked against NumPy."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import AutotuneWarning, Config
from transpiler.testing import do_bench

pytestmark = pytest.mark.gpu

N = 1 << 24


@pytest.fixture(autouse=True)
def fresh_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))


@transpiler.jit
def repeat_add(X, Y, N, REPEAT: tl.constexpr, BLOCK: tl.constexpr):
    """y = (x added REPEAT times) / REPEAT: exactly x for small integers, REPEAT times the work."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(REPEAT):
        acc += x
    tl.store(Y + offs, acc / REPEAT, mask=m)


@transpiler.jit
def accumulate(X, Y, N, BLOCK: tl.constexpr):
    """y += x: each launch adds once more, so timing it repeatedly needs reset_to_zero."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(Y + offs, mask=m) + tl.load(X + offs, mask=m), mask=m)


@transpiler.jit
def double_in_place(X, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(X + offs, tl.load(X + offs, mask=m) * 2, mask=m)


def _grid(meta):
    return (transpiler.cdiv(meta["N"], meta["BLOCK"]),)


def _small_integers(n, seed=0):
    return np.random.default_rng(seed).integers(-8, 9, n).astype(np.float32)


SLOW_THEN_FAST = [Config({"REPEAT": 512, "BLOCK": 1024}, num_warps=4),
                  Config({"REPEAT": 1, "BLOCK": 1024}, num_warps=4)]


def test_autotune_picks_the_config_without_redundant_work_cupy():
    import cupy
    tuned = transpiler.autotune(SLOW_THEN_FAST, key=["N"])(repeat_add)
    x_host = _small_integers(N)
    x, y = cupy.asarray(x_host), cupy.full(N, cupy.nan, dtype=cupy.float32)
    tuned[_grid](x, y, N)
    assert tuned.best_config.kwargs["REPEAT"] == 1
    slow, fast = (tuned.configs_timings[c] for c in SLOW_THEN_FAST)
    assert slow > 3 * fast, tuned.configs_timings
    np.testing.assert_array_equal(cupy.asnumpy(y), x_host)


def test_autotune_picks_the_config_without_redundant_work_torch():
    torch = pytest.importorskip("torch")
    tuned = transpiler.autotune(SLOW_THEN_FAST, key=["N"])(repeat_add)
    x_host = _small_integers(N, seed=1)
    x = torch.from_numpy(x_host).cuda()
    y = torch.full((N,), float("nan"), device="cuda")
    tuned[_grid](x, y, N)
    torch.cuda.synchronize()
    assert tuned.best_config.kwargs["REPEAT"] == 1
    np.testing.assert_array_equal(y.cpu().numpy(), x_host)


def test_many_configs_compiled_in_the_pool_all_get_timed():
    import warnings
    import cupy
    configs = [Config({"REPEAT": r, "BLOCK": b}, num_warps=w) for r in (1, 2) for b, w in ((256, 1), (1024, 4),
                                                                                           (4096, 8))]
    tuned = transpiler.autotune(configs, key=["N"], warmup=2, rep=10)(repeat_add)
    x_host = _small_integers(1 << 20)
    x, y = cupy.asarray(x_host), cupy.zeros(1 << 20, dtype=cupy.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutotuneWarning)
        tuned[_grid](x, y, 1 << 20)
    assert len(tuned.configs_timings) == len(configs)
    np.testing.assert_array_equal(cupy.asnumpy(y), x_host)


def test_a_config_that_does_not_compile_is_skipped_and_the_rest_tuned():
    import cupy
    configs = [Config({"REPEAT": 1, "BLOCK": 3})] + SLOW_THEN_FAST     # 3 is not a power of two
    tuned = transpiler.autotune(configs, key=["N"])(repeat_add)
    x_host = _small_integers(1 << 20)
    x, y = cupy.asarray(x_host), cupy.zeros(1 << 20, dtype=cupy.float32)
    with pytest.warns(AutotuneWarning, match="power of two"):
        tuned[_grid](x, y, 1 << 20)
    assert tuned.best_config is configs[2]
    np.testing.assert_array_equal(cupy.asnumpy(y), x_host)


def test_the_choice_is_reused_from_disk_by_a_fresh_autotuner():
    import cupy
    x, y = cupy.asarray(_small_integers(1 << 20)), cupy.zeros(1 << 20, dtype=cupy.float32)
    first = transpiler.autotune(SLOW_THEN_FAST, key=["N"])(repeat_add)
    first[_grid](x, y, 1 << 20)
    second = transpiler.autotune(SLOW_THEN_FAST, key=["N"])(repeat_add)
    second[_grid](x, y, 1 << 20)
    assert second.best_config is SLOW_THEN_FAST[1] and second.configs_timings is None


@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_reset_to_zero_makes_an_accumulating_kernel_correct_after_tuning(framework):
    configs = [Config({"BLOCK": 256}, num_warps=2), Config({"BLOCK": 1024}, num_warps=8)]
    x_host = _small_integers(N)
    if framework == "torch":
        torch = pytest.importorskip("torch")
        x, y, to_host = torch.from_numpy(x_host).cuda(), torch.zeros(N, device="cuda"), lambda a: a.cpu().numpy()
    else:
        import cupy
        x, y, to_host = cupy.asarray(x_host), cupy.zeros(N, dtype=cupy.float32), cupy.asnumpy
    tuned = transpiler.autotune(configs, key=["N"], reset_to_zero=["Y"], warmup=5, rep=20)(accumulate)
    tuned[_grid](x, y, N)
    np.testing.assert_array_equal(to_host(y), x_host)
    # Without it, every timed launch adds x once more: the test above can tell the difference.
    y[...] = 0
    untouched = transpiler.autotune(configs, key=["N"], warmup=5, rep=20, cache_results=False)(accumulate)
    untouched[_grid](x, y, N)
    assert not np.array_equal(to_host(y), x_host)


def test_reset_to_zero_and_timing_follow_an_explicit_stream():
    import cupy
    x_host = _small_integers(N)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x, y = cupy.asarray(x_host), cupy.zeros(N, dtype=cupy.float32)
    stream.synchronize()
    configs = [Config({"BLOCK": 256}, num_warps=2), Config({"BLOCK": 1024}, num_warps=8)]
    tuned = transpiler.autotune(configs, key=["N"], reset_to_zero=["Y"], warmup=5, rep=20)(accumulate)
    tuned[_grid](x, y, N, stream=stream.ptr)
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(y), x_host)
    assert all(t > 0 for t in tuned.configs_timings.values())


def test_restore_value_makes_an_in_place_kernel_apply_once():
    import cupy
    x_host = _small_integers(N)
    x = cupy.asarray(x_host)
    configs = [Config({"BLOCK": 512}), Config({"BLOCK": 2048})]
    tuned = transpiler.autotune(configs, key=["N"], restore_value=["X"], warmup=5, rep=20)(double_in_place)
    tuned[_grid](x, N)
    np.testing.assert_array_equal(cupy.asnumpy(x), 2 * x_host)


def test_do_bench_measures_the_redundant_work():
    import cupy
    x, y = cupy.asarray(_small_integers(N)), cupy.empty(N, dtype=cupy.float32)
    grid = (transpiler.cdiv(N, 1024),)
    fast = do_bench(lambda: repeat_add[grid](x, y, N, REPEAT=1, BLOCK=1024))
    slow = do_bench(lambda: repeat_add[grid](x, y, N, REPEAT=512, BLOCK=1024), flush_l2=False)
    q = do_bench(lambda: repeat_add[grid](x, y, N, REPEAT=1, BLOCK=1024), quantiles=[0.2, 0.5, 0.8])
    assert 0 < fast < slow / 3
    assert len(q) == 3 and q[0] <= q[1] <= q[2]
