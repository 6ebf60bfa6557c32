"""Autotuning and heuristics on the CPU: the timer and the launches are faked (`autotune_fakes`), or the kernel
runs under the interpreter; the choice, the keying, pruning, hooks, failures and the disk cache are real."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from autotune_fakes import CONFIGS, FakeBench, FakeKernel, tuned_fake
from transpiler import AutotuneError, AutotuneWarning, Config, LaunchError
from transpiler.runtime import autotune as autotune_module
from transpiler.runtime import cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMES = {32: 3.0, 64: 1.0, 128: 2.0}


@pytest.fixture(autouse=True)
def fresh_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRANSPILER_INTERPRET", raising=False)
    monkeypatch.delenv("TRANSPILER_PRINT_AUTOTUNING", raising=False)
    return tmp_path / "cache"


def _read(entry):
    """The JSON payload of a sealed autotune entry (`cache.read` checks its digest)."""
    return json.loads(cache.read(entry))


def _entries(cache):
    folder = cache / "autotune"
    return sorted(folder.glob("*.json")) if folder.exists() else []


# ---- choosing ----------------------------------------------------------------------------------------------

def test_autotune_launches_with_the_config_the_bench_finds_fastest():
    tuned, kernel, bench = tuned_fake(TIMES)
    tuned[(1,)](None, None, 1000)
    assert sorted(bench.calls) == [32, 64, 128]
    assert tuned.best_config.kwargs == {"BLOCK": 64} and tuned.best_config.num_warps == 2
    real = kernel.launches[-1]
    assert (real["BLOCK"], real["num_warps"], real["num_stages"]) == (64, 2, 3)
    assert tuned.configs_timings[tuned.best_config] == 1.0


def test_same_key_value_reuses_the_choice_without_timing():
    tuned, kernel, bench = tuned_fake(TIMES)
    tuned[(1,)](None, None, 1000)
    tuned[(1,)](None, None, 1000)
    assert len(bench.calls) == 3
    assert kernel.launches[-1]["BLOCK"] == 64


def test_new_key_value_retunes_and_each_value_keeps_its_own_choice():
    tuned, kernel, bench = tuned_fake(TIMES)
    tuned[(1,)](None, None, 1000)
    bench.times = {32: 1.0, 64: 3.0, 128: 2.0}
    tuned[(1,)](None, None, 7)
    assert len(bench.calls) == 6 and kernel.launches[-1]["BLOCK"] == 32
    tuned[(1,)](None, None, 1000)
    assert len(bench.calls) == 6 and kernel.launches[-1]["BLOCK"] == 64


def test_argument_dtypes_are_part_of_the_key_as_in_triton():
    tuned, kernel, bench = tuned_fake(TIMES)
    x32 = np.zeros(4, np.float32)
    tuned[(1,)](x32, x32, 4)
    tuned[(1,)](x32.astype(np.float16), x32, 4)
    assert len(bench.calls) == 6
    assert tuned.key_of({"X": x32, "Y": x32, "N": 4}) == (4, "fp32", "fp32")


def test_grid_callable_sees_the_chosen_config_values():
    tuned, kernel, bench = tuned_fake(TIMES)
    tuned[lambda meta: (transpiler.cdiv(meta["N"], meta["BLOCK"]),)](None, None, 1000)
    assert kernel.launches[-1]["grid"] == (16,)


def test_a_single_config_is_launched_without_timing():
    kernel = FakeKernel()
    bench = FakeBench(kernel, TIMES)
    tuned = transpiler.autotune([Config({"BLOCK": 128})], key=["N"], do_bench=bench)(kernel)
    tuned[(1,)](None, None, 10)
    assert bench.calls == [] and kernel.launches[-1]["BLOCK"] == 128


def test_passing_a_value_the_configs_choose_is_an_error():
    tuned, _, _ = tuned_fake(TIMES)
    with pytest.raises(LaunchError, match="BLOCK is chosen by the autotuner"):
        tuned[(1,)](None, None, 10, BLOCK=32)
    with pytest.raises(LaunchError, match="num_warps"):
        tuned[(1,)](None, None, 10, num_warps=8)


def test_unknown_names_are_reported_when_decorating():
    with pytest.raises(AutotuneError, match="'M'"):
        transpiler.autotune(CONFIGS, key=["M"])(FakeKernel())
    with pytest.raises(AutotuneError, match="reset_to_zero names 'Z'"):
        transpiler.autotune(CONFIGS, key=["N"], reset_to_zero=["Z"])(FakeKernel())
    with pytest.raises(AutotuneError, match="above @transpiler.jit"):
        transpiler.autotune(CONFIGS, key=["N"])(lambda x: x)


# ---- hooks, resets, restores -----------------------------------------------------------------------------

def test_config_pre_hook_gets_the_arguments_with_the_config_values():
    seen = []
    configs = [Config({"BLOCK": b}, pre_hook=lambda args: seen.append((args["N"], args["BLOCK"]))) for b in (32, 64)]
    kernel = FakeKernel()
    tuned = transpiler.autotune(configs, key=["N"], do_bench=FakeBench(kernel, TIMES))(kernel)
    tuned[(1,)](None, None, 5)
    assert sorted(set(seen)) == [(5, 32), (5, 64)] and seen[-1] == (5, 64)


def _accumulate(bound):
    bound["Y"] += bound["X"]


def test_reset_to_zero_zeroes_the_accumulator_before_each_timed_launch_and_the_real_one():
    kernel = FakeKernel(body=_accumulate)
    tuned = transpiler.autotune(CONFIGS, key=["N"], reset_to_zero=["Y"], do_bench=FakeBench(kernel, TIMES))(kernel)
    x, y = np.arange(4.0), np.zeros(4)
    tuned[(1,)](x, y, 4)
    np.testing.assert_array_equal(y, x)


def _double_in_place(bound):
    bound["X"] *= 2


def test_restore_value_puts_inputs_back_after_each_timed_launch():
    kernel = FakeKernel(body=_double_in_place)
    tuned = transpiler.autotune(CONFIGS, key=["N"], restore_value=["X"], do_bench=FakeBench(kernel, TIMES))(kernel)
    x = np.arange(4.0)
    tuned[(1,)](x, None, 4)
    np.testing.assert_array_equal(x, 2 * np.arange(4.0))


# ---- heuristics --------------------------------------------------------------------------------------------

def test_heuristics_compute_constexprs_in_order_from_the_arguments():
    kernel = FakeKernel(arg_names=("X", "N", "BLOCK", "EVEN"))
    k = transpiler.heuristics({"BLOCK": lambda a: transpiler.next_power_of_2(a["N"]),
                               "EVEN": lambda a: a["N"] == a["BLOCK"]})(kernel)
    k[(1,)](None, 100)
    k[(1,)](None, 128)
    assert [(r["BLOCK"], r["EVEN"]) for r in kernel.launches] == [(128, False), (128, True)]


def test_autotune_over_heuristics_feeds_config_values_to_the_rules():
    kernel = FakeKernel(arg_names=("X", "Y", "N", "BLOCK", "HALF"))
    bench = FakeBench(kernel, TIMES)
    k = transpiler.autotune(CONFIGS, key=["N"], do_bench=bench)(
        transpiler.heuristics({"HALF": lambda a: a["BLOCK"] // 2})(kernel))
    k[(1,)](None, None, 100)
    assert all(r["HALF"] * 2 == r["BLOCK"] for r in kernel.launches)
    assert kernel.launches[-1]["HALF"] == 32


def test_heuristics_over_autotune_can_feed_the_key():
    kernel = FakeKernel(arg_names=("X", "Y", "N", "N_POW2", "BLOCK"))
    bench = FakeBench(kernel, TIMES)
    k = transpiler.heuristics({"N_POW2": lambda a: transpiler.next_power_of_2(a["N"])})(
        transpiler.autotune(CONFIGS, key=["N_POW2"], do_bench=bench)(kernel))
    k[(1,)](None, None, 100)
    k[(1,)](None, None, 120)      # same N_POW2: no retune
    assert len(bench.calls) == 3
    k[(1,)](None, None, 300)
    assert len(bench.calls) == 6


@transpiler.jit
def _double(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) * 2, mask=m)


def test_autotune_and_heuristics_over_a_real_kernel_under_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRANSPILER_INTERPRET", "1")
    launched = []
    configs = [Config({"BLOCK": b}, pre_hook=lambda a: launched.append(a["BLOCK"])) for b in (16, 64)]

    def bench(fn, quantiles=None):
        fn()
        return {16: 2.0, 64: 1.0}[launched[-1]]

    k = transpiler.autotune(configs, key=["N"], do_bench=bench)(_double)
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    k[lambda meta: (transpiler.cdiv(meta["N"], meta["BLOCK"]),)](x, y, 100)
    assert k.best_config.kwargs == {"BLOCK": 64}
    np.testing.assert_array_equal(y, 2 * x.astype(np.float64))

    h = transpiler.heuristics({"BLOCK": lambda a: transpiler.next_power_of_2(a["N"])})(_double)
    y2 = np.zeros_like(x)
    h[(1,)](x, y2, 100)      # one program covers all 100 elements only if BLOCK became 128
    np.testing.assert_array_equal(y2, 2 * x.astype(np.float64))


def test_looking_at_a_specialization_through_heuristics_applies_the_rules():
    # cuda_source, compiled_variant, explain and ir see the constexprs a launch would get from the rules.
    h = transpiler.heuristics({"BLOCK": lambda a: transpiler.next_power_of_2(a["N"])})(_double)
    x = np.arange(100, dtype=np.float32)
    assert "BLOCK = 128" in h.cuda_source(x, x, 100)
    assert h.compiled_variant(x, x, 100).source == h.cuda_source(x, x, 100)
    assert "BLOCK = 128" in h.explain(x, x, 100)
    assert "128" in str(h.ir(x, x, 100))


def test_under_the_interpreter_without_a_bench_the_first_candidate_is_used(monkeypatch):
    monkeypatch.setenv("TRANSPILER_INTERPRET", "1")
    k = transpiler.autotune([Config({"BLOCK": 32}), Config({"BLOCK": 128})], key=["N"])(_double)
    x = np.arange(50, dtype=np.float32)
    y = np.zeros_like(x)
    k[lambda meta: (transpiler.cdiv(meta["N"], meta["BLOCK"]),)](x, y, 50)
    assert k.best_config.kwargs == {"BLOCK": 32}
    np.testing.assert_array_equal(y, 2 * x.astype(np.float64))


def test_interpret_view_goes_through_heuristics_and_autotune_to_the_interpreter():
    tuned = transpiler.autotune([Config({"BLOCK": 32}), Config({"BLOCK": 128})], key=["N"])(_double)
    k = transpiler.heuristics({"N": lambda a: a["X"].shape[0] - 1})(tuned)
    x = np.arange(50, dtype=np.float32)
    y = np.full_like(x, -1.0)
    k.interpret[lambda meta: (transpiler.cdiv(meta["N"], meta["BLOCK"]),)](x, y)
    assert tuned.best_config.kwargs == {"BLOCK": 32}     # untimed: the first candidate
    np.testing.assert_array_equal(y[:49], 2 * x[:49].astype(np.float64))
    assert y[49] == -1.0                                   # N came from the heuristic
    assert list(tuned.cache) == [(49, "fp32", "fp32", "interpreter")]


# ---- pruning ---------------------------------------------------------------------------------------------

def test_early_config_prune_removes_configs_before_timing():
    def prune(configs, nargs, **kwargs):
        return [c for c in configs if c.kwargs["BLOCK"] <= nargs["N"]]
    tuned, kernel, bench = tuned_fake(TIMES, prune_configs_by={"early_config_prune": prune})
    tuned[(1,)](None, None, 100)
    assert sorted(bench.calls) == [32, 64]


def test_perf_model_keeps_the_top_k_predicted_configs():
    model_args = []

    def model(**kwargs):
        model_args.append(kwargs)
        return -kwargs["BLOCK"]          # predicts bigger blocks are faster
    tuned, kernel, bench = tuned_fake(TIMES, prune_configs_by={"perf_model": model, "top_k": 2})
    tuned[(1,)](None, None, 100)
    assert sorted(bench.calls) == [64, 128] and tuned.best_config.kwargs["BLOCK"] == 64
    assert model_args[0]["N"] == 100 and "num_warps" in model_args[0]


def test_top_k_as_a_fraction_and_pruning_to_one_config_skips_timing():
    tuned, kernel, bench = tuned_fake(TIMES, prune_configs_by={"perf_model": lambda **k: k["BLOCK"], "top_k": 0.34})
    tuned[(1,)](None, None, 100)
    assert bench.calls == [] and kernel.launches[-1]["BLOCK"] == 32


# ---- failures --------------------------------------------------------------------------------------------

def test_configs_that_fail_to_compile_or_launch_are_skipped_with_a_warning():
    kernel = FakeKernel(broken_compile={64}, broken_launch={32})
    bench = FakeBench(kernel, TIMES)
    tuned = transpiler.autotune(CONFIGS, key=["N"], do_bench=bench)(kernel)
    with pytest.warns(AutotuneWarning) as record:
        tuned[(1,)](None, None, 100)
    assert tuned.best_config.kwargs == {"BLOCK": 128}
    text = " ".join(str(w.message) for w in record)
    assert "BLOCK: 64" in text and "shared memory" in text and "BLOCK: 32" in text and "too many resources" in text


def test_when_every_config_fails_the_error_lists_each_reason():
    kernel = FakeKernel(broken_compile={64, 128}, broken_launch={32})
    tuned = transpiler.autotune(CONFIGS, key=["N"], do_bench=FakeBench(kernel, TIMES))(kernel)
    with pytest.warns(AutotuneWarning), pytest.raises(AutotuneError) as info:
        tuned[(1,)](None, None, 100)
    message = str(info.value)
    assert "every config failed" in message
    for block in (32, 64, 128):
        assert f"BLOCK: {block}" in message


def test_configs_are_compiled_before_timing_and_warmup_compiles_every_candidate():
    tuned, kernel, bench = tuned_fake(TIMES)
    assert [c.kwargs["BLOCK"] for c in tuned.warmup(None, None, 100)] == [32, 64, 128]
    assert sorted(c["BLOCK"] for c in kernel.compiled) == [32, 64, 128] and kernel.launches == []


def test_warmup_of_a_real_kernel_generates_cuda_without_a_gpu():
    x = np.zeros(100, np.float32)
    tuned = transpiler.autotune([Config({"BLOCK": b}) for b in (3, 64, 128)], key=["N"])(_double)
    kept = tuned.warmup(x, x, 100)      # BLOCK=3 fails code generation (not a power of two)
    assert [c.kwargs["BLOCK"] for c in kept] == [64, 128]
    assert "_double" in _double.warmup(x, x, 100, BLOCK=64)


# ---- reporting -------------------------------------------------------------------------------------------

def test_print_autotuning_reports_the_choice_and_progress_appears_when_slow(monkeypatch, capsys):
    monkeypatch.setenv("TRANSPILER_PRINT_AUTOTUNING", "1")
    monkeypatch.setattr(autotune_module, "PROGRESS_AFTER_S", 0.0)
    tuned, _, _ = tuned_fake(TIMES)
    tuned[(1,)](None, None, 100)
    out, err = capsys.readouterr()
    assert "fake" in out and "best config: BLOCK: 64, num_warps: 2" in out and "timed 3 configs" in out
    assert "3/3 configs" in err and "done in" in err


def test_no_progress_line_for_a_quick_tuning(capsys):
    tuned, _, _ = tuned_fake(TIMES)
    tuned[(1,)](None, None, 100)
    out, err = capsys.readouterr()
    assert out == "" and err == ""


# ---- disk cache ------------------------------------------------------------------------------------------

def test_results_are_stored_on_disk_and_reused_by_a_fresh_autotuner(fresh_cache_dir):
    tuned, _, bench = tuned_fake(TIMES)
    tuned[(1,)](None, None, 100)
    entries = _entries(fresh_cache_dir)
    assert len(entries) == 1
    data = _read(entries[0])
    assert data["best"] == 1 and data["timings_ms"] == [3.0, 1.0, 2.0]

    again, kernel, bench2 = tuned_fake({32: 1.0, 64: 3.0, 128: 2.0})
    again[(1,)](None, None, 100)
    assert bench2.calls == [] and kernel.launches[-1]["BLOCK"] == 64


def test_disk_entries_are_keyed_by_source_key_and_configs(fresh_cache_dir):
    tuned_fake(TIMES)[0][(1,)](None, None, 100)
    tuned_fake(TIMES, source="fake-v2")[0][(1,)](None, None, 100)
    tuned_fake(TIMES)[0][(1,)](None, None, 101)
    kernel = FakeKernel()
    transpiler.autotune(CONFIGS[:2], key=["N"], do_bench=FakeBench(kernel, TIMES))(kernel)[(1,)](None, None, 100)
    assert len(_entries(fresh_cache_dir)) == 4


def test_cache_results_false_writes_nothing(fresh_cache_dir):
    tuned_fake(TIMES, cache_results=False)[0][(1,)](None, None, 100)
    assert _entries(fresh_cache_dir) == []


@pytest.mark.parametrize("garbage", ['{"version": 1, "confi', "not json at all", '[1, 2]',
                                     '{"version": 1, "configs": ["x"], "best": 0}', None])
def test_a_corrupt_disk_entry_is_ignored_and_overwritten(fresh_cache_dir, garbage):
    tuned_fake(TIMES)[0][(1,)](None, None, 100)
    (entry,) = _entries(fresh_cache_dir)
    if garbage is None:     # right configs, impossible index, in a well-sealed entry
        cache.write_entry(entry, json.dumps(dict(_read(entry), best=7)).encode())
    else:
        entry.write_text(garbage)
    tuned, kernel, bench = tuned_fake(TIMES)
    tuned[(1,)](None, None, 100)
    assert len(bench.calls) == 3 and kernel.launches[-1]["BLOCK"] == 64
    assert _read(entry)["best"] == 1


def _tune_in_subprocess(times, delay, n, cache):
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests")]))
    return subprocess.Popen([sys.executable, "-m", "autotune_fakes", json.dumps(times), str(delay), str(n)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_a_new_process_reuses_the_choice_from_disk(fresh_cache_dir):
    first = _result(_tune_in_subprocess(TIMES, 0.0, 100, fresh_cache_dir))
    assert first == {"best": 64, "benched": 3}
    # The second process's timer would prefer BLOCK=32, but it must not time at all.
    second = _result(_tune_in_subprocess({32: 1.0, 64: 3.0, 128: 2.0}, 0.0, 100, fresh_cache_dir))
    assert second == {"best": 64, "benched": 0}


def test_two_processes_tuning_at_once_leave_one_whole_entry(fresh_cache_dir):
    procs = [_tune_in_subprocess(TIMES, 0.3, 100, fresh_cache_dir) for _ in range(2)]
    results = [_result(p) for p in procs]
    assert all(r["best"] == 64 for r in results)
    assert sorted(p.name for p in (fresh_cache_dir / "autotune").iterdir()) == [e.name for e in
                                                                                  _entries(fresh_cache_dir)]
    (entry,) = _entries(fresh_cache_dir)
    assert _read(entry)["best"] == 1
    assert _result(_tune_in_subprocess(TIMES, 0.0, 100, fresh_cache_dir)) == {"best": 64, "benched": 0}


_WRITER = """
import sys
from pathlib import Path
from transpiler.runtime import autotune_cache
path, which = Path(sys.argv[1]), int(sys.argv[2])
for i in range(300):
    autotune_cache.store(path, ["a", "b"], (i + which) % 2, [1.0, 2.0] * 50, (i,), "k")
"""


def test_concurrent_writers_never_expose_a_partial_entry(fresh_cache_dir):
    from transpiler.runtime import autotune_cache
    path = fresh_cache_dir / "autotune" / "race.json"
    env = dict(os.environ, PYTHONPATH=ROOT)
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w)], env=env) for w in range(2)]
    seen = set()
    while any(w.poll() is None for w in writers):
        if path.exists():
            best = autotune_cache.load(path, ["a", "b"])
            assert best in (0, 1)
            seen.add(best)
    assert all(w.wait() == 0 for w in writers)
    assert autotune_cache.load(path, ["a", "b"]) in (0, 1)
    assert [p.name for p in path.parent.iterdir()] == ["race.json"]


# ---- the default timer, with a fake clock --------------------------------------------------------------

class FakeClock:
    """Events are readings of a fake time that launches and L2 flushes advance."""

    def __init__(self):
        self.now = 0.0
        self.flushes = 0

    def event(self):
        return self.now

    def elapsed_ms(self, start, end):
        return end - start

    def synchronize(self):
        pass

    def flush_l2(self):
        self.flushes += 1
        self.now += 0.5


def test_do_bench_sizes_warmup_and_reps_from_an_estimate_and_times_each_launch_alone():
    from transpiler.testing import do_bench
    clock, calls = FakeClock(), []

    def launch():
        calls.append(1)
        clock.now += 1.0 + 0.1 * (len(calls) % 3)      # 1.0, 1.1 or 1.2 ms
    t = do_bench(launch, warmup=25, rep=100, clock=clock)
    # Five estimating launches cost 5 * (flush 0.5 + ~1.1): about 1.6 ms each, so 15 warm-up and 62 timed.
    assert len(calls) == 1 + 5 + 15 + 62 and clock.flushes == 5 + 62
    assert t == pytest.approx(1.1)           # the median; flushes are outside the timed region
    q = do_bench(launch, warmup=1, rep=10, clock=clock, quantiles=[0.0, 0.5, 1.0], flush_l2=False)
    assert q == pytest.approx([1.0, 1.1, 1.2])


def test_autotune_times_with_do_bench_on_the_launch_clock(monkeypatch):
    from transpiler.runtime import bench
    clock = FakeClock()
    cost = {32: 3.0, 64: 1.0, 128: 2.0}
    kernel = FakeKernel(body=lambda b: setattr(clock, "now", clock.now + cost[b["BLOCK"]]))
    monkeypatch.setattr(bench, "clock_for", lambda values, stream=None: clock)
    tuned = transpiler.autotune(CONFIGS, key=["N"], warmup=5, rep=20)(kernel)
    tuned[(1,)](None, None, 100)
    assert tuned.best_config.kwargs["BLOCK"] == 64
    assert {c.kwargs["BLOCK"]: t for c, t in tuned.configs_timings.items()} == {32: 3.0, 64: 1.0, 128: 2.0}
