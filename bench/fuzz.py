"""The differential fuzzer on a GPU: random kernels (tests/fuzz/) compiled by us and by Triton from the same source,
on the same inputs, against each other, against our interpreter and against the NumPy reference (the DAG's
evaluation, or a family's own).

    python bench/fuzz.py --count 10000 --seed 0 --out DIR [--budget 540] [--jobs 14] [--cap 60] [--cpu [--nvrtc]]

A pool of `--jobs` worker processes stays up for the whole run (imports and CUDA contexts are paid once per
worker) and takes one seed at a time from the parent, so no worker idles while others hold a batch. A worker
whose kernel runs past `--cap` seconds is killed and the kernel reported as `timeout` (with the step it was
in); a worker that dies (a fault, a crash) is reported as `worker_lost` for its seed and replaced. A worker
whose CUDA context is broken after a kernel exits and is replaced too, so one fault poisons one kernel. No seed
is handed out after `--budget` seconds. DIR/summary.json is rewritten every few seconds while the run goes on
(so a killed run still leaves its counts) and once at the end: kernels run, equal, mismatches by kind, the time
spent per step (generation, interpreter, reference, ours = our compile and launch, triton = Triton's compile
and launch, checks) and the slowest kernels, and for each mismatch the seed, what differed and the source.
DIR/rows.jsonl has one line per kernel, written as they finish. Kinds: ours_vs_triton, ours_vs_interpreter,
interpreter_vs_numpy, triton_vs_numpy (the generator's model against Triton's), signed_zero (exact float
outputs equal but for the sign of a zero, ours against Triton), ours_error, triton_error, interpreter_error,
timeout, worker_lost, fuzzer_error. With --cpu only the interpreter and the reference run (no GPU, no
Triton); --nvrtc adds our NVRTC compile of the kernel's CUDA for sm_90a (the CPU share of `ours`).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
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


class Step:
    """Which step a worker is in, and the seconds each step took (a timeout names the step it hit)."""

    def __init__(self):
        self.current = "start"
        self.seconds = {}

    def run(self, name, fn):
        self.current = name
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - t0, 4)


def check_one(seed, kernels_dir, gpu=True, nvrtc=False, step=None):
    """{seed, results: {kind: [details]}, verdict, seconds: {step: s}, source} for one generated kernel."""
    import numpy as np
    from fuzz import runner
    from fuzz.generator import generate

    step = step or Step()
    case = step.run("generate", lambda: generate(seed))
    path = runner.write_module(case, kernels_dir)
    inputs = runner.make_inputs(case, np.random.default_rng(seed))
    found = {}
    if gpu:
        from bench.twins import load as load_twin

    def attempt(kind, name, fn):
        try:
            return step.run(name, fn)
        except Exception as e:  # noqa: BLE001  (every failure is a finding of its kind)
            found.setdefault(kind, []).append(f"{type(e).__name__}: {str(e)[:1500]}")
            return None

    expected = step.run("reference", lambda: runner.expected_outputs(case, inputs))
    ours_module = runner.load_ours(path)
    kernel = getattr(ours_module, case.kernel_name)
    interpreted = attempt("interpreter_error", "interpreter", lambda: runner.run_interpreter(ours_module, case, inputs))
    ours = theirs = None
    if nvrtc:
        def compile_ours():
            ok, log = runner.nvrtc_compile(runner.cuda_source(ours_module, case, inputs), "sm_90a")
            if not ok:
                raise RuntimeError(log[:1500])
        attempt("ours_error", "ours_nvrtc", compile_ours)
    if gpu:
        ours = attempt("ours_error", "ours", lambda: _launch(kernel, case, inputs))
        twin = attempt("triton_error", "triton", lambda: load_twin(path, "triton"))
        theirs = twin and attempt("triton_error", "triton",
                                  lambda: _launch(getattr(twin, case.kernel_name), case, inputs))
    pairs = [("interpreter_vs_numpy", interpreted, expected), ("ours_vs_interpreter", ours, interpreted),
             ("ours_vs_triton", ours, theirs), ("triton_vs_numpy", theirs, expected)]

    def checks():
        for kind, got, want in pairs:
            if got is not None and want is not None:
                problems = runner.compare(case, got, want)
                if problems:
                    found[kind] = problems
        if ours is not None and theirs is not None and not runner.is_family(case):
            zeros = _signed_zero_differences(case, ours, theirs)
            if zeros:
                found["signed_zero"] = zeros
    step.run("checks", checks)
    return {"seed": seed, "family": getattr(case, "family", "dag"), "results": found, "verdict": verdict(found),
            "seconds": step.seconds, "source": case.source if found else ""}


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


def _context_broken() -> bool:
    """Whether this process's CUDA context is unusable (a kernel faulted): the worker must be replaced."""
    try:
        import torch
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return False
    except Exception:  # noqa: BLE001
        return True


def worker(kernels_dir, gpu, nvrtc):
    """Seeds from stdin, one per line; one JSON row per seed on stdout, the step it starts on stderr's log."""
    Path(kernels_dir).mkdir(parents=True, exist_ok=True)
    out = sys.stdout
    sys.stdout = sys.stderr        # prints of kernels or libraries stay out of the protocol
    stall = os.environ.get("FUZZ_TEST_STALL_SEED")      # tests of the time cap: this seed hangs
    for line in sys.stdin:
        seed = int(line)
        step = Step()
        if stall is not None and seed == int(stall):
            time.sleep(3600)
        try:
            row = check_one(seed, kernels_dir, gpu, nvrtc, step)
        except Exception as e:  # noqa: BLE001  (the generator or the reference itself failed)
            row = {"seed": seed, "results": {"fuzzer_error": [f"{type(e).__name__}: {e}"]}, "verdict": "fuzzer_error",
                   "seconds": step.seconds, "source": ""}
        out.write(json.dumps(row) + "\n")
        out.flush()
        if gpu and _context_broken():
            sys.exit(3)


# ---- the parent: a pool of workers fed one seed at a time, a time budget, the summary ---------------------

class _Worker:
    def __init__(self, index, work, gpu, nvrtc):
        import subprocess
        self.index = index
        self.log_path = work / "logs" / f"worker_{index}.log"
        self.log = open(self.log_path, "a")
        cmd = [sys.executable, __file__, "--worker", "--kernels", str(work / "kernels")] + \
            ([] if gpu else ["--cpu"]) + (["--nvrtc"] if nvrtc else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     bufsize=1)
        self.seed = None
        self.started = 0.0

    def give(self, seed):
        self.seed, self.started = seed, time.time()
        self.proc.stdin.write(f"{seed}\n")
        self.proc.stdin.flush()

    def log_tail(self, n=3000):
        self.log.flush()
        try:
            return self.log_path.read_text()[-n:]
        except OSError:
            return ""

    def stop(self):
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass
        self.log.close()


def run(count, first_seed, out, budget, jobs, cap=60.0, work=None, gpu=True, nvrtc=False, every=5.0):
    import selectors
    import tempfile
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(work or tempfile.mkdtemp(prefix="fuzz_work_"))
    (work / "logs").mkdir(parents=True, exist_ok=True)
    start = time.time()
    deadline = start + budget
    pending = list(range(first_seed, first_seed + count))
    rows = []
    rows_file = open(out / "rows.jsonl", "w")
    sel = selectors.DefaultSelector()
    workers = {}

    def record(row):
        rows.append(row)
        rows_file.write(json.dumps(row) + "\n")
        rows_file.flush()

    def start_worker(index):
        w = _Worker(index, work, gpu, nvrtc)
        workers[index] = w
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        feed(w)

    def feed(w):
        if pending and time.time() < deadline:
            w.give(pending.pop(0))
        else:
            w.seed = None

    def retire(w, kind, detail):
        sel.unregister(w.proc.stdout)
        w.stop()
        if w.seed is not None:
            record({"seed": w.seed, "results": {kind: [detail]}, "verdict": kind, "seconds": {},
                    "source": _source_of(w.seed)})
        del workers[w.index]
        if pending and time.time() < deadline:
            start_worker(w.index)

    def stopped(signum, frame):
        raise SystemExit(f"stopped by signal {signum}")
    signal.signal(signal.SIGTERM, stopped)     # a killed run still writes its summary and ends its workers
    try:
        for i in range(jobs):
            start_worker(i)
        last_summary = 0.0
        while workers:
            for key, _ in sel.select(timeout=1.0):
                w = key.data
                line = w.proc.stdout.readline()
                if not line:        # the worker died, or left after a fault
                    code = w.proc.wait()
                    retire(w, "worker_lost", f"exit {code} on this seed: {w.log_tail()}")
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                record(row)
                w.seed = None
                feed(w)
            now = time.time()
            for w in list(workers.values()):
                if w.seed is not None and now - w.started > cap:
                    retire(w, "timeout", f"over the {cap:.0f} s cap per kernel; the worker's last words: "
                                         f"{w.log_tail(800)}")
                elif w.seed is None:       # nothing left to hand out
                    sel.unregister(w.proc.stdout)
                    w.stop()
                    del workers[w.index]
                elif now > deadline + cap:
                    retire(w, "timeout", "the run's budget ended while it ran")
            if now - last_summary > every:
                summarize(rows, count, now - start, out, quiet=True)
                last_summary = now
    finally:
        for w in list(workers.values()):
            w.stop()
        rows_file.close()
        summarize(rows, count, time.time() - start, out, quiet=True)
    return summarize(rows, count, time.time() - start, out)


def _source_of(seed):
    try:
        from fuzz.generator import generate
        return generate(seed).source
    except Exception as e:  # noqa: BLE001
        return f"(the generator failed: {e})"


def summarize(rows, requested, elapsed, out, quiet=False):
    by_kind, by_verdict, by_family, seconds = {}, {}, {}, {}
    mismatches = []
    for r in rows:
        fam = by_family.setdefault(r.get("family", "?"), {"run": 0, "equal": 0})
        fam["run"] += 1
        for kind, details in r["results"].items():
            by_kind[kind] = by_kind.get(kind, 0) + 1
        for name, s in r.get("seconds", {}).items():
            seconds[name] = seconds.get(name, 0.0) + s
        if r["results"]:
            mismatches.append(r)
            v = r.get("verdict") or verdict(r["results"])
            by_verdict[v] = by_verdict.get(v, 0) + 1
        else:
            fam["equal"] += 1
    slowest = sorted(rows, key=lambda r: -sum(r.get("seconds", {}).values()))[:10]
    summary = {"requested": requested, "run": len(rows), "equal": len(rows) - len(mismatches),
               "mismatches_by_kind": by_kind, "mismatches_by_who_is_alone": by_verdict, "by_family": by_family,
               "elapsed_s": round(elapsed, 1), "seconds_per_step": {k: round(v, 1) for k, v in seconds.items()},
               "slowest": [{"seed": r["seed"], "family": r.get("family"), "seconds": r.get("seconds")}
                           for r in slowest],
               "mismatches": sorted(mismatches, key=lambda r: r["seed"])}
    tmp = Path(out) / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1))
    tmp.replace(Path(out) / "summary.json")
    if not quiet:
        print(json.dumps({k: v for k, v in summary.items() if k not in ("mismatches", "slowest")}))
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="fuzz_out")
    p.add_argument("--budget", type=float, default=220.0, help="seconds; no seed is handed out after it")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) - 2))
    p.add_argument("--cap", type=float, default=60.0, help="seconds one kernel may take before it is a timeout")
    p.add_argument("--work", help="scratch folder for the kernels' files and the workers' logs")
    p.add_argument("--cpu", action="store_true", help="interpreter and reference only (no GPU, no Triton)")
    p.add_argument("--nvrtc", action="store_true", help="also our NVRTC compile for sm_90a (timed)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kernels", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker(a.kernels, not a.cpu, a.nvrtc)
        return
    run(a.count, a.seed, a.out, a.budget, a.jobs, a.cap, a.work, not a.cpu, a.nvrtc)


if __name__ == "__main__":
    main()
