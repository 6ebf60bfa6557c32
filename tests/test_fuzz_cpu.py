"""The differential fuzzer on the CPU: random kernels (tests/fuzz/) on the interpreter against their NumPy
evaluation, and every kernel's CUDA through NVRTC for sm_90a (a quarter of them for sm_80 too), with no warnings.

Seeds are fixed so a failure reproduces: `python -c "import sys; sys.path.insert(0, 'tests'); from fuzz.generator
import generate; print(generate(SEED).source)"` prints the kernel. TRANSPILER_FUZZ_SEEDS=start:stop widens the run.
"""
import os

import numpy as np
import pytest

from fuzz import runner
from fuzz.families import FAMILIES
from fuzz.generator import FAMILY_SEEDS, generate, generate_dag
from transpiler.runtime.compiler import nvrtc_available

START, STOP = (int(x) for x in os.environ.get("TRANSPILER_FUZZ_SEEDS", "0:150").split(":"))
CHUNK = 25
CHUNKS = [(s, min(s + CHUNK, STOP)) for s in range(START, STOP, CHUNK)]


def _run_chunk(lo, hi, tmp_path):
    """(problems found, CUDA sources of the chunk's kernels)."""
    problems, sources = [], []
    for seed in range(lo, hi):
        case = generate(seed)
        module = runner.load_ours(runner.write_module(case, tmp_path))
        inputs = runner.make_inputs(case, np.random.default_rng(seed))
        try:
            got = runner.run_interpreter(module, case, inputs)
            sources.append(runner.cuda_source(module, case, inputs))
        except Exception as e:  # a valid kernel refused or crashing is a finding too
            problems.append(f"seed {seed}: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        problems += [f"seed {seed}: {p}" for p in runner.compare(case, got, runner.expected_outputs(case, inputs))]
    return problems, sources


@pytest.mark.parametrize("lo,hi", CHUNKS, ids=[f"seeds{lo}-{hi}" for lo, hi in CHUNKS])
def test_random_kernels_interpret_as_numpy_evaluates_them_and_compile_cleanly(lo, hi, tmp_path):
    problems, sources = _run_chunk(lo, hi, tmp_path)
    if nvrtc_available():
        for arch, subset in (("sm_90a", sources), ("sm_80", sources[::4])):
            for index, log in runner.compile_many(subset, arch).items():
                problems.append(f"NVRTC {arch}, kernel {index} of the chunk: {log[:800]}")
    assert not problems, "\n".join(problems)


def test_generator_is_deterministic_and_covers_the_language():
    # 400 seeds (a few seconds): unsigned left shifts and expand_dims are rare enough to be missed by fewer
    cases = [generate_dag(seed) for seed in range(START, START + 400)]
    assert generate_dag(START).source == cases[0].source
    ops = {n.op for c in cases for n in c.nodes}
    dtypes = {n.dtype for c in cases for n in c.nodes}
    for op in ("add", "mul", "truediv", "floordiv", "mod", "and", "xor", "shr", "shl", "lt", "where", "minimum",
               "maximum", "clamp", "fma", "exp", "cast", "reduce", "cumsum", "loop", "expand", "full", "invert",
               "constant"):
        assert op in ops, op
    for dt in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
               "float32", "float64", "int1"):
        assert dt in dtypes, dt
    assert any(c.rank == 2 for c in cases) and any(c.rank == 1 for c in cases)
    assert any(c.helpers for c in cases) and any(k.startswith("FLAG") for c in cases for k in c.constexprs)
    assert any(n.attrs.get("keep_dims") for c in cases for n in c.nodes)
    assert all(any(s % b for s, b in zip(c.sizes, c.block)) or c.sizes == c.block for c in cases)


def test_family_kernels_cover_every_family_in_the_ci_slice_and_are_deterministic():
    seeds = [s for s in range(START, STOP) if s % 5 in FAMILY_SEEDS]
    cases = [generate(s) for s in seeds]
    assert {c.family for c in cases} == set(FAMILIES)
    assert generate(seeds[0]).source == cases[0].source
    # the references are not trivial: nearly every case expects some nonzero value (an epilogue may zero one)
    assert sum(any(np.count_nonzero(e) for e in c.expected) for c in cases) >= 0.9 * len(cases)


def test_gpu_runner_machinery_feeds_a_worker_pool_caps_a_hanging_kernel_and_summarizes(tmp_path):
    """bench/fuzz.py's worker pool, time cap and summary, with the GPU paths left out (--cpu): a seed that
    hangs is reported as a timeout (not hidden, not fatal) and the other seeds still run."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(root / "bench" / "fuzz.py"), "--count", "6", "--seed", "500",
                           "--out", str(out), "--budget", "120", "--jobs", "2", "--cap", "5", "--cpu",
                           "--work", str(tmp_path / "work")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root), "FUZZ_TEST_STALL_SEED": "502"})
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"] == 6 and summary["equal"] == 5, summary
    assert summary["mismatches_by_kind"] == {"timeout": 1} and summary["mismatches"][0]["seed"] == 502
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert sorted(r["seed"] for r in rows) == list(range(500, 506))
    assert all("interpreter" in r["seconds"] for r in rows if r["seed"] != 502)


def test_an_output_keeps_the_tolerance_of_the_least_precise_float_on_its_path(monkeypatch):
    """Seed 801624, found on the H200: OUT2 = 0.25 / (|s0 + exp2(max(x)) * 0.25| + 1.0) in float64, where exp2 is
    fp32. The GPU's approximate exp2 (ex2.approx, here two fp32 ulps off) reaches the float64 output through
    the divisor, which the division's own bookkeeping left out; the checker reads the path from the DAG."""
    from fuzz import evaluate as evaluation
    from fuzz.triton_types import NOISE

    case = generate(801624)
    inputs = runner.make_inputs(case, np.random.default_rng(801624))
    expected = runner.expected_outputs(case, inputs)
    index, node = next((i, n) for i, (n, _) in enumerate(case.outputs)
                       if n.op == "truediv" and n.dtype == "float64")
    assert any(a.op == "exp2" and a.dtype == "float32" for a in _ancestors(node))

    def approximate_exp2(v):
        up = np.float32(np.inf)
        return np.nextafter(np.nextafter(np.exp2(v).astype(np.float32), up), up)
    monkeypatch.setitem(evaluation._MATH, "exp2", approximate_exp2)
    gpu_like = evaluation.evaluate(case, inputs)

    got, want = gpu_like[index].astype(np.float64), expected[index].astype(np.float64)
    old_tol = max(NOISE["float64"], node.facts.noise)     # the division's own facts: float64 noise only
    assert not np.allclose(got, want, rtol=old_tol, atol=old_tol * max(1.0, node.facts.peak), equal_nan=True)
    assert runner.compare(case, gpu_like, expected) == []

    wrong = [o.copy() for o in gpu_like]
    flat = wrong[index].reshape(-1)
    flat[np.flatnonzero(np.isfinite(flat))[0]] *= 1 + 1e-2    # beyond fp32 noise: still a finding
    assert [p.split(" ")[0] for p in runner.compare(case, wrong, expected)] == [f"OUT{index}"]


def _ancestors(node):
    seen, todo = [], [node]
    while todo:
        n = todo.pop()
        if all(n is not s for s in seen):
            seen.append(n)
            todo.extend(n.node_args)
    return seen
