"""The differential fuzzer on a GPU: random kernels (tests/fuzz/) compiled by us and by Triton from the same source,
on the same inputs, against each other, against our interpreter and against the NumPy evaluation of their DAG.

    python bench/fuzz.py --count 2000 --seed 0 --out DIR [--budget 220] [--jobs 8] [--batch 40] [--cpu]

Kernels run in batches, each batch in a subprocess of its own (a fault cannot poison the CUDA context of the
others; a crash or a hang loses only the rest of its batch), several batches at a time (Triton's compile is
CPU-bound). Each worker appends one JSON line per kernel; the parent stops handing out batches when the time
budget is spent and writes DIR/summary.json: kernels run, equal, mismatches by kind, and for each mismatch the
seed, what differed and the kernel's source. Kinds: ours_vs_triton, ours_vs_interpreter, interpreter_vs_numpy,
triton_vs_numpy (the generator's typing against Triton's), signed_zero (exact float outputs equal but for the
sign of a zero, ours against Triton), ours_error, triton_error, interpreter_error, worker_lost. With --cpu only
the interpreter and the NumPy evaluation run (the machinery, tried where there is no GPU). The kernels' files and
the workers' logs go to a scratch folder (--work), so DIR holds only the summary.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# `bench/` first on sys.path would make `import fuzz` this very file: the fuzzer package lives in tests/.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]


# ---- one kernel, in a worker ----------------------------------------------------------------------------

def _torch_args(args):
    import numpy as np
    import torch
    return [torch.from_numpy(np.ascontiguousarray(a)).cuda() if hasattr(a, "dtype") and getattr(a, "ndim", 0)
            else a for a in args]


def _launch(kernel, case, inputs):
    """Run `kernel` (ours or Triton's) on the GPU; the outputs as host arrays."""
    import torch
    from fuzz import runner
    args = _torch_args(runner.launch_args(case, inputs, runner.fresh_outputs(case)))
    kernel[case.grid](*args, num_warps=case.num_warps, **case.constexprs)
    torch.cuda.synchronize()
    n_in = len(case.inputs)
    return [a.cpu().numpy() for a in args[n_in:n_in + len(case.outputs)]]


def _signed_zero_differences(case, ours, theirs):
    import numpy as np
    found = []
    for i, ((node, _), a, b) in enumerate(zip(case.outputs, ours, theirs)):
        if a.dtype.kind != "f" or not node.facts.exact:
            continue
        zeros = (a == 0) & (b == 0)
        differ = zeros & (np.signbit(a) != np.signbit(b))
        if differ.any():
            first = tuple(np.argwhere(differ)[0])
            found.append(f"OUT{i} ({node.name}, {node.dtype}): {int(differ.sum())} zeros of another sign, first at "
                         f"{first}: ours {a[first]!r}, Triton {b[first]!r}")
    return found


def check_one(seed, kernels_dir, gpu=True):
    """{seed, results: {kind: [details]}, source} for one generated kernel."""
    import numpy as np
    from fuzz import runner
    from fuzz.evaluate import evaluate
    from fuzz.generator import generate

    case = generate(seed)
    path = runner.write_module(case, kernels_dir)
    inputs = runner.make_inputs(case, np.random.default_rng(seed))
    found = {}
    if gpu:
        from bench.twins import load as load_twin

    def attempt(kind, fn):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001  (every failure is a finding of its kind)
            found.setdefault(kind, []).append(f"{type(e).__name__}: {str(e)[:1500]}")
            return None

    expected = evaluate(case, inputs)
    ours_module = runner.load_ours(path)
    kernel = getattr(ours_module, case.kernel_name)
    interpreted = attempt("interpreter_error", lambda: runner.run_interpreter(ours_module, case, inputs))
    ours = theirs = None
    if gpu:
        ours = attempt("ours_error", lambda: _launch(kernel, case, inputs))
        twin = attempt("triton_error", lambda: load_twin(path, "triton"))
        theirs = twin and attempt("triton_error", lambda: _launch(getattr(twin, case.kernel_name), case, inputs))
    pairs = [("interpreter_vs_numpy", interpreted, expected), ("ours_vs_interpreter", ours, interpreted),
             ("ours_vs_triton", ours, theirs), ("triton_vs_numpy", theirs, expected)]
    for kind, got, want in pairs:
        if got is not None and want is not None:
            problems = runner.compare(case, got, want)
            if problems:
                found[kind] = problems
    if ours is not None and theirs is not None:
        zeros = _signed_zero_differences(case, ours, theirs)
        if zeros:
            found["signed_zero"] = zeros
    return {"seed": seed, "results": found, "verdict": verdict(found), "source": case.source if found else ""}


def verdict(found) -> str:
    """Who is alone in a disagreement: 'ours' (Triton, the interpreter and NumPy agree), 'triton' (ours, the
    interpreter and NumPy agree), 'gpu_vs_cpu' (ours agrees with Triton, the interpreter with NumPy: a rounding
    the generator's tolerance does not cover, or a model of the generator's), or the kind itself."""
    kinds = set(found)
    if not kinds:
        return "equal"
    if kinds <= {"ours_vs_triton", "ours_vs_interpreter", "signed_zero"} and "ours_vs_interpreter" in kinds \
            and "ours_vs_triton" in kinds:
        return "ours"
    if kinds <= {"ours_vs_triton", "triton_vs_numpy", "signed_zero"} and kinds >= {"ours_vs_triton",
                                                                                   "triton_vs_numpy"}:
        return "triton"
    if kinds == {"ours_vs_interpreter", "triton_vs_numpy"}:
        return "gpu_vs_cpu"
    return "+".join(sorted(kinds))


def worker(seeds, out_file, kernels_dir, deadline, gpu):
    Path(kernels_dir).mkdir(parents=True, exist_ok=True)
    with open(out_file, "a") as f:
        for seed in seeds:
            if time.time() > deadline:
                break
            try:
                row = check_one(seed, kernels_dir, gpu)
            except Exception as e:  # noqa: BLE001  (the generator or the evaluation itself failed)
                row = {"seed": seed, "results": {"fuzzer_error": [f"{type(e).__name__}: {e}"]}, "source": ""}
            f.write(json.dumps(row) + "\n")
            f.flush()


# ---- the parent: batches in subprocesses, a time budget, the summary -----------------------------------

def _read_lines(path):
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            pass     # a worker killed mid-line
    return rows


def run(count, first_seed, out, budget, jobs, batch, work=None, gpu=True):
    import tempfile
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(work or tempfile.mkdtemp(prefix="fuzz_work_"))
    (work / "parts").mkdir(parents=True, exist_ok=True)
    start = time.time()
    deadline = start + budget
    batches = [list(range(s, min(s + batch, first_seed + count))) for s in range(first_seed, first_seed + count, batch)]
    running, rows, lost = [], [], []

    def reap(block):
        for proc, seeds, part in list(running):
            if block:
                try:
                    proc.wait(timeout=max(1.0, deadline + 30 - time.time()))
                except subprocess.TimeoutExpired:
                    proc.kill()
            if proc.poll() is None:
                continue
            running.remove((proc, seeds, part))
            done = _read_lines(part)
            rows.extend(done)
            seen = {r["seed"] for r in done}
            if proc.returncode != 0:
                missing = [s for s in seeds if s not in seen]
                if missing:   # the first seed left undone is the one the worker died on
                    log = (work / "parts" / f"seeds_{seeds[0]}.log").read_text()[-3000:]
                    lost.append({"seed": missing[0], "results": {"worker_lost": [f"exit {proc.returncode}: {log}"]},
                                 "source": _source_of(missing[0])})
                    batches.insert(0, missing[1:])

    while (batches or running) and time.time() < deadline:
        while batches and len(running) < jobs and time.time() < deadline:
            seeds = batches.pop(0)
            if not seeds:
                continue
            part = work / "parts" / f"seeds_{seeds[0]}.jsonl"
            cmd = [sys.executable, __file__, "--worker", "--seeds", ",".join(map(str, seeds)), "--part", str(part),
                   "--kernels", str(work / "kernels"), "--deadline", str(deadline)] + ([] if gpu else ["--cpu"])
            log = open(work / "parts" / f"seeds_{seeds[0]}.log", "w")
            running.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), seeds, part))
        time.sleep(0.5)
        reap(block=False)
    reap(block=True)
    return summarize(rows + lost, count, time.time() - start, out)


def _source_of(seed):
    try:
        from fuzz.generator import generate
        return generate(seed).source
    except Exception as e:  # noqa: BLE001
        return f"(the generator failed: {e})"


def summarize(rows, requested, elapsed, out):
    by_kind, by_verdict = {}, {}
    mismatches = []
    for r in rows:
        for kind, details in r["results"].items():
            by_kind[kind] = by_kind.get(kind, 0) + 1
        if r["results"]:
            mismatches.append(r)
            v = r.get("verdict") or verdict(r["results"])
            by_verdict[v] = by_verdict.get(v, 0) + 1
    summary = {"requested": requested, "run": len(rows), "equal": len(rows) - len(mismatches),
               "mismatches_by_kind": by_kind, "mismatches_by_who_is_alone": by_verdict,
               "elapsed_s": round(elapsed, 1),
               "mismatches": sorted(mismatches, key=lambda r: r["seed"])}
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "mismatches"}))
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="fuzz_out")
    p.add_argument("--budget", type=float, default=220.0, help="seconds; no batch starts after it")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--batch", type=int, default=40)
    p.add_argument("--work", help="scratch folder for the kernels' files and the workers' logs")
    p.add_argument("--cpu", action="store_true", help="interpreter and NumPy only (no GPU, no Triton)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seeds", help=argparse.SUPPRESS)
    p.add_argument("--part", help=argparse.SUPPRESS)
    p.add_argument("--kernels", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker([int(s) for s in a.seeds.split(",")], a.part, a.kernels, a.deadline, not a.cpu)
        return
    run(a.count, a.seed, a.out, a.budget, a.jobs, a.batch, a.work, not a.cpu)


if __name__ == "__main__":
    main()
