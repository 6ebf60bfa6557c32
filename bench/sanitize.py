#!/usr/bin/env python
"""The sanitizer sweep: compute-sanitizer's memcheck, racecheck, synccheck and initcheck over every example and
every GPU feature / unseen / scan / atomic / block-pointer / dtype / dot kernel case and the other GPU test files
(group "files": attention, TMA, packing, fp8, inline asm, autodiff, ...), at the small sizes the
cases use (so racecheck finishes), with a table of errors per tool and kernel.

    OUT=folder python bench/sanitize.py [--tools memcheck,racecheck] [--groups features,dot] [--jobs 8]
    (bench/sanitize.sh is the one command for the H200)

How: the cases are split in units (a group's cases, a few dozen at a time; a slow test file's shard, every k-th
of its tests, or a few fast files in one pytest session: `FILE_SECONDS`). Each unit runs once without a
sanitizer first (it fills the kernel cache, so the sanitized runs do not time NVRTC, and says which cases give
wrong results on their own), then under each tool in its own process with a time limit (`--timeout`), several
at once (`--jobs`): a unit's four sanitized runs are queued the moment its plain run ends, ahead of the plain
runs still waiting, and the longest units go first (no pass waits for the slowest unit of the one before; a
budget cut leaves out whole units of the shortest, each under every tool). Every run has TRANSPILER_TEST_SIZES=small: the row tests' cases keep their
kernels over fewer rows (tests/gpu_sizes.py). The sanitizer's log goes to a file per run, and each error
record in it is attributed to the kernel named in its `at <kernel>+0x...` line. A run that times out or crashes
is reported as such for every kernel of its unit (never as 0 errors); a unit whose plain run timed out is not
run under the tools (reported "not run (plain timeout)"). Kernels that ran come from the launcher's record of
launches (`runtime/launcher.recent_launches`, unbounded in the worker).

For one H200 device call of at most 400 s (16 cores): `bash bench/sanitize.sh --jobs 16 --budget 330
--timeout 100` (no run starts after 330 s, none runs past 355 s).

Writes `$OUT/sanitize/summary.md` (per kernel: errors per tool; per run: status, errors, time), `summary.json`
and the logs. Exit status 0 only when every run finished with 0 errors and every result was right.
Run it after every change to the emission of barriers, shared memory or pipelines.
"""
from __future__ import annotations

import argparse
import collections
import heapq
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
TOOL_OPTIONS = {
    "memcheck": ["--leak-check", "no"],
    "racecheck": ["--racecheck-report", "hazard"],
    "synccheck": [],
    "initcheck": [],
}
# The case groups: each runs a case through the GPU test's own per-case function (its inputs, poisoning and
# check against NumPy), named by (test module, test function, the module's list of case names, extra args).
CASE_TESTS = {
    "features": ("test_gpu_features", "test_feature_matches_numpy_on_gpu", "NAMES", {}),
    "unseen": ("test_gpu_unseen_kernels", "test_unseen_kernel_matches_numpy_on_gpu", "NAMES", {}),
    "libdevice": ("test_gpu_unseen_kernels", "test_libdevice_function_matches_numpy_on_gpu", "LIBDEVICE_NAMES", {}),
    "scans": ("test_gpu_scans", "test_scan_matches_numpy_on_gpu", "NAMES", {}),
    "atomics": ("test_gpu_atomics", "test_atomic_kernel_matches_numpy_on_gpu", "NAMES", {"repeat": 0}),
    "block_ptr": ("test_gpu_block_pointers", "test_block_pointer_kernel_matches_numpy_on_gpu", "NAMES", {}),
    "dtypes": ("test_gpu_dtypes", "test_dtype_case_matches_numpy_on_gpu", "IDS", {}),
}
# Planted faults, each run only under the tool that must find it: a sweep whose tool misses its control is not
# trusted (the table says MISSED and the exit status is 1). Racecheck has none: the language has no way to
# write a shared-memory race.
CONTROLS = {"planted_oob_store": "memcheck", "planted_uninit_read": "initcheck"}
# Whole GPU test files for the features that have no per-case function (group "files", one file per unit, run
# through pytest in the worker). Left out: test_gpu_faults (it plants faults on purpose), the launch, runtime,
# options, autotune and AOT files (host paths, timing, nvcc builds: no kernel code of their own), and the Triton
# front-end file (Triton's kernels). Triton is hidden from these runs (bench/no_triton), so a test's Triton
# comparison skips and the sanitizer sees our kernels only.
TEST_FILES = ("test_gpu_attention", "test_gpu_dot_dtypes", "test_gpu_tma", "test_gpu_realworld_core",
              "test_gpu_program_packing", "test_gpu_membound", "test_gpu_row_ring", "test_gpu_prefix_mask", "test_gpu_inline_asm",
              "test_gpu_packed_rows",
              "test_gpu_fp8_compute",
              "test_gpu_host_tensor_descriptors", "test_gpu_conversion_chunks", "test_gpu_fuzz_findings",
              "test_gpu_autodiff", "test_gpu_random", "test_gpu_cache_hints", "test_gpu_bool_arithmetic",
              "test_gpu_conditional_expressions", "test_gpu_minmax_typing", "test_gpu_assigned_numbers",
              "test_gpu_vs_interpreter", "test_gpu_torch", "test_gpu_continued_lines",
              "test_gpu_dot_scaled", "test_gpu_pointer_condition",
              "test_gpu_fp_contraction", "test_gpu_compile_size", "test_gpu_triton_names",
              "test_gpu_gather", "test_gpu_dot3d", "test_gpu_const_pointers")
# Seconds a test file's plain run took on the H200 (this project's sweep of 2026-12-01, NVRTC included, sizes
# before tests/gpu_sizes.py): a file is split in shards of about SHARD_SECONDS (shard i of k runs every k-th
# of its tests), so that no unit is the sweep's long pole, and files of a few seconds share a unit.
FILE_SECONDS = {"test_gpu_row_ring": 157, "test_gpu_membound": 122, "test_gpu_autodiff": 105,
                "test_gpu_attention": 79, "test_gpu_program_packing": 73, "test_gpu_tma": 60,
                "test_gpu_dot_dtypes": 48, "test_gpu_random": 43, "test_gpu_torch": 41,
                "test_gpu_vs_interpreter": 35, "test_gpu_realworld_core": 18, "test_gpu_host_tensor_descriptors": 18,
                "test_gpu_minmax_typing": 18, "test_gpu_bool_arithmetic": 17, "test_gpu_conditional_expressions": 17,
                "test_gpu_assigned_numbers": 17, "test_gpu_dot_scaled": 17, "test_gpu_fp8_compute": 17,
                "test_gpu_inline_asm": 16, "test_gpu_pointer_condition": 14, "test_gpu_fp_contraction": 13,
                "test_gpu_conversion_chunks": 12, "test_gpu_continued_lines": 10, "test_gpu_fuzz_findings": 9,
                "test_gpu_cache_hints": 9, "test_gpu_compile_size": 9}
SHARD_SECONDS = 40
# Seconds per case of a group's plain run (the same sweep): the order the units start in, longest first.
CASE_SECONDS = {"examples": 3.0, "dot": 1.5, "dtypes": 0.8, "unseen": 0.6}
NOT_SWEPT = {   # GPU test files outside the sweep, and why
    "test_gpu_faults": "plants faults on purpose", "test_gpu_aot": "nvcc-built programs",
    "test_gpu_launch_args": "launch validation (host)", "test_gpu_launch_fast_path": "host launch path",
    "test_gpu_native_launch": "host launch path (compiled launcher)",
    "test_gpu_runtime": "host runtime", "test_gpu_options": "launch options (host)",
    "test_gpu_autotune": "timing", "test_gpu_triton_frontend": "Triton's own kernels",
    "test_multigpu_runtime": "two GPUs",
    # covered case by case by the other groups
    "test_gpu_features": "group features", "test_gpu_unseen_kernels": "groups unseen, libdevice",
    "test_gpu_scans": "group scans", "test_gpu_atomics": "group atomics", "test_gpu_block_pointers": "group block_ptr",
    "test_gpu_dtypes": "group dtypes", "test_gpu_dot": "group dot"}
GROUPS = ("examples", "features", "unseen", "dot", "scans", "atomics", "block_ptr", "libdevice", "dtypes", "files")
NO_TRITON = ROOT / "bench" / "no_triton"
# The runs go side by side, one a core: the host references' BLAS and torch's CPU ops keep to one thread each
# (a process each spinning up a thread per core would share the cores --jobs times over).
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
ERROR_AT = re.compile(r"\bat (?:0x[0-9a-f]+ in )?([A-Za-z_]\w*)(?:\(|\+0x)")
SUMMARY = re.compile(r"(?:ERROR SUMMARY|RACECHECK SUMMARY): (\d+) (?:errors?|hazards? displayed \((\d+) errors?)")


# ---- the worker: runs cases of one group on the GPU, one after another -------------------------------------

def _paths():
    for p in (ROOT, ROOT / "tests", ROOT / "examples"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))


def case_names(group):
    _paths()
    if group == "controls":
        return list(CONTROLS)
    if group in CASE_TESTS:
        module, _, names, _ = CASE_TESTS[group]
        return list(getattr(__import__(module), names))
    if group == "dot":
        from dot_kernels import CASES
        return [c.id for c in CASES]
    if group == "files":
        names = []
        for name in (n for n in TEST_FILES if (ROOT / "tests" / f"{n}.py").exists()):
            shards = -(-FILE_SECONDS.get(name, 0) // SHARD_SECONDS)
            names += [f"{name}@{i}/{shards}" for i in range(shards)] if shards > 1 else [name]
        return names
    return [f"{ex}:{i}" for ex, cases in _example_cases().items() for i in range(len(cases))]


def _example_cases():
    """Each example's small cases (its CPU_CASES, run on the GPU) and tensor-core matmuls with the default
    configuration (pipelined cp.async stages; TMA rings on sm_90a), small enough for racecheck."""
    import importlib
    out = {}
    for path in sorted((ROOT / "examples").glob("*.py")):
        if path.stem.startswith("_"):
            continue
        mod = importlib.import_module(path.stem)
        out[path.stem] = list(getattr(mod, "CPU_CASES", []))
    if "matmul" in out:
        # cp.async stages (rows of B 280 bytes: no tensor map); on sm_90a a TMA ring for tiles that do not wrap
        # and the cp.async loop for the one that does (136 rows); TMA for every tile.
        out["matmul"] += [dict(dtype="float16", shape=(130, 140, 96)), dict(dtype="float16", shape=(136, 144, 96)),
                          dict(dtype="bfloat16", shape=(256, 256, 128))]
    return out


def _run_case(group, name):
    if group == "controls":
        _run_control(name)
    elif group in CASE_TESTS:
        module, test, _, extra = CASE_TESTS[group]
        getattr(__import__(module), test)(name, **extra)
    elif group == "dot":
        import test_gpu_dot
        from dot_kernels import CASES
        test_gpu_dot.test_dot_case(next(c for c in CASES if c.id == name))
    else:
        import importlib
        import _harness as H
        example, index = name.split(":")
        case = _example_cases()[example][int(index)]
        lib = H.pick_library(case["dtype"], True)
        if lib is None:
            raise RuntimeError("skipped: bf16 needs torch")
        importlib.import_module(example).run_case(lib, **case)


class _Shard:
    """A pytest plugin keeping every `count`-th collected test from `index` on (a shard of one file)."""

    def __init__(self, index, count):
        self.index, self.count = index, count

    def pytest_collection_modifyitems(self, config, items):
        kept = items[self.index::self.count]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


class _Outcomes:
    """A pytest plugin counting, per test file, the tests that passed and those that failed (setup included; a
    file that does not import counts as one failure)."""

    def __init__(self):
        self.passed, self.failed = collections.Counter(), collections.Counter()

    def pytest_runtest_logreport(self, report):
        name = Path(report.nodeid.split("::")[0]).stem
        if report.failed:
            self.failed[name] += 1
        elif report.passed and report.when == "call":
            self.passed[name] += 1

    def pytest_collectreport(self, report):
        if report.failed:
            self.failed[Path(report.nodeid.split("::")[0]).stem] += 1


def _run_test_files(names):
    """The unit's GPU test files (several small ones, or one shard of a slow one: `file@index/count`) through
    one pytest session in this process (their kernels land in the launcher's record); {name: status}."""
    import pytest
    files, shard = [n.partition("@")[0] for n in names], names[0].partition("@")[2]
    outcomes = _Outcomes()
    plugins = [outcomes] + ([_Shard(*map(int, shard.split("/")))] if shard else [])
    rc = pytest.main([str(ROOT / "tests" / f"{name}.py") for name in files] +
                     ["-q", "-m", "gpu", "-p", "no:cacheprovider", "--continue-on-collection-errors",
                      "-W", "ignore::pytest.PytestUnraisableExceptionWarning"], plugins=plugins)
    statuses = {}
    for name, file in zip(names, files):
        if outcomes.failed[file]:
            statuses[name] = f"wrong {outcomes.failed[file]} failed (the run's .out file says which)"
        elif outcomes.passed[file]:
            statuses[name] = "ok"
        elif rc not in (0, 1, 5):                               # the session broke: every file says so
            statuses[name] = f"error pytest exit status {int(rc)}"
        else:
            statuses[name] = "skipped"
    return statuses


def _run_control(name):
    import cupy
    import controls_kernels as C
    if name == "planted_oob_store":
        x = cupy.zeros(1024, cupy.float32)
        C.planted_oob_store[(1,)](x, 1 << 36, BLOCK=128)        # 256 GiB past x: no allocation there
    else:
        cupy.cuda.set_allocator(None)                           # a fresh cudaMalloc, never written
        x, y = cupy.empty(1000, cupy.float32), cupy.zeros(1000, cupy.float32)
        C.planted_uninit_read[(1,)](x, y, 1000, BLOCK=1024)
    cupy.cuda.runtime.deviceSynchronize()


def worker(group, names):
    """Run the cases; print one `CASE name status` line each and the kernels launched."""
    _paths()
    from transpiler.runtime import launcher
    launcher.recent_launches = collections.deque()          # every launch, not the last 16
    if group == "files":                                     # one pytest session for the unit's files
        for name, status in _run_test_files(names).items():
            print(f"CASE {name} {status}", flush=True)
        names = []
    for name in names:
        try:
            _run_case(group, name)
            status = "ok"
        except AssertionError as e:
            status = "wrong " + (str(e).splitlines()[0][:200] if str(e) else "")
        except Exception as e:                               # noqa: BLE001 (reported, not hidden)
            status = f"error {type(e).__name__}: " + (str(e).splitlines()[0][:200] if str(e) else "")
        except BaseException as e:                           # pytest.skip / importorskip inside a test
            if type(e).__name__ != "Skipped":
                raise
            status = "skipped"
        print(f"CASE {name} {status}", flush=True)
    print("KERNELS " + json.dumps(sorted({entry[0] for entry in launcher.recent_launches})), flush=True)
    return 0


# ---- the driver ------------------------------------------------------------------------------------------

def units(groups, chunk):
    out = []
    for group in groups:
        if group == "controls":
            continue                          # run apart, each under its own tool (`main`)
        names = case_names(group)
        if group == "files":
            out += [(group, files) for files in _file_units(names)]
            continue
        for i in range(0, len(names), chunk):
            out.append((group, names[i:i + chunk]))
    return out


def _file_units(names):
    """The files group's units: a shard alone; files of a few seconds together, up to SHARD_SECONDS a unit (one
    process and one pytest session fewer per tool for each file packed)."""
    out, pack = [[name] for name in names if "@" in name], []
    for name in (n for n in names if "@" not in n):
        if pack and estimate("files", pack + [name]) > SHARD_SECONDS:
            out.append(pack)
            pack = []
        pack.append(name)
    return out + ([pack] if pack else [])


def estimate(group, names):
    """Seconds a unit's plain run is expected to take (its place in the queue before it has run)."""
    if group == "files":
        return sum(FILE_SECONDS.get(name.partition("@")[0], 15) /
                   (int(name.partition("@")[2].split("/")[1]) if "@" in name else 1) for name in names)
    return len(names) * CASE_SECONDS.get(group, 0.4)


def schedule(todo, tools, controls, jobs, run):
    """Runs every unit of `todo` plain, then under each tool, on `jobs` threads; `run(tool or None, group,
    names)` returns a result. Queue order: the controls, then sanitized runs before plain ones (a unit's four
    are queued when its plain run ends), each kind longest first (by the plain run's seconds, else `estimate`),
    so that the sweep's end is not one long unit started last. Results: plain runs, then sanitized, in `todo`
    order, each unit's tools in `tools` order."""
    queue, done, tiebreak = [], [], itertools.count()
    order = {tuple(u[1]): i for i, u in enumerate(todo)}
    state = threading.Condition()
    left = [len(controls) + len(todo)]        # runs queued or running

    def push(priority, seconds, item):
        heapq.heappush(queue, (priority, -seconds, next(tiebreak), item))

    for tool, group, names in controls:
        push(0, 0, (tool, group, names))
    for group, names in todo:
        push(2, estimate(group, names), (None, group, names))

    def worker():
        while True:
            with state:
                while not queue and left[0]:
                    state.wait()
                if not queue:
                    return
                _, _, _, (tool, group, names) = heapq.heappop(queue)
            try:
                result = run(tool, group, names)
            except Exception as e:            # noqa: BLE001 (a driver error: said as the run's status)
                result = dict(tool=tool or "plain", group=group, names=names, status=f"driver error {e!r}",
                              seconds=0, cases={}, kernels=[], errors={}, total_errors=0, log="")
            with state:
                done.append(result)
                if tool is None:
                    for t in tools:
                        if result["status"] == "timeout":       # the tools would time out too: said, not run
                            done.append(dict(result, tool=t, status="not run (plain timeout)", seconds=0,
                                             errors={}, total_errors=0, log=""))
                        else:
                            push(1, result["seconds"], (t, group, names))
                            left[0] += 1
                left[0] -= 1
                state.notify_all()
    threads = [threading.Thread(target=worker) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rank = {None: -1, "plain": -1, **{t: i for i, t in enumerate(tools)}}
    return sorted(done, key=lambda r: (r["group"] != "controls", r["tool"] != "plain",
                                       order.get(tuple(r["names"]), -1), rank.get(r["tool"], 0)))


def run_unit(tool, group, names, logdir: Path, timeout, sanitizer, deadline=float("inf")):
    if time.monotonic() > deadline:
        return dict(tool=tool or "plain", group=group, names=names, status="not run (budget)", seconds=0,
                    cases={}, kernels=[], errors={}, total_errors=0, log="")
    timeout = max(10.0, min(timeout, deadline + timeout / 4 - time.monotonic()))
    tag = f"{tool or 'plain'}-{group}-{re.sub(r'[^A-Za-z0-9_.-]', '_', names[0])}"
    log = logdir / f"{tag}.log"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", group, *names]
    if tool:
        cmd = [sanitizer, "--tool", tool, "--log-file", str(log), "--print-limit", "10000",
               "--report-api-errors", "no", *TOOL_OPTIONS[tool], *cmd]
    start = time.monotonic()
    try:
        path = f"{NO_TRITON}:{ROOT}" if group == "files" else f"{ROOT}"
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=f"{path}:{os.environ.get('PYTHONPATH', '')}",
                                       TRANSPILER_TEST_SIZES="small", **ONE_THREAD))
        stdout, rc, status = done.stdout, done.returncode, "finished"
        (logdir / f"{tag}.out").write_text(stdout + "\n--- stderr ---\n" + done.stderr)
    except subprocess.TimeoutExpired as e:
        stdout = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, status = None, "timeout"
    seconds = time.monotonic() - start
    cases = dict(re.findall(r"^CASE (\S+) (.*)$", stdout, re.M))
    kernels = json.loads(re.search(r"^KERNELS (.*)$", stdout, re.M).group(1)) if "KERNELS " in stdout else []
    if status == "finished" and rc != 0:
        status = f"exit {rc}"
    errors, total = _parse_log(log) if tool else ({}, 0)
    return dict(tool=tool or "plain", group=group, names=names, status=status, seconds=round(seconds, 1),
                cases=cases, kernels=kernels, errors=errors, total_errors=total, log=str(log))


def _parse_log(log: Path):
    """({kernel: errors}, total) from a compute-sanitizer log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return {}, 0
    per_kernel = collections.Counter()
    record = []
    for line in text.splitlines() + ["========= "]:
        if not line.startswith("========="):
            continue
        body = line[len("========="):]
        if body.startswith("     ") and record:
            record.append(body)
            continue
        if record and _is_error(record[0]):
            m = next((ERROR_AT.search(r) for r in record if ERROR_AT.search(r)), None)
            per_kernel[m.group(1) if m else "(unattributed)"] += 1
        record = [body.strip()]
    totals = [int(m.group(2) if m.group(2) is not None else m.group(1)) for m in SUMMARY.finditer(text)]
    return dict(per_kernel), sum(totals)


def _is_error(head: str) -> bool:
    if not head or head.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "Target application",
                                    "Saved host backtrace", "Host Frame", "Program hit")):
        return False
    return not head.startswith("WARN") or "hazard" in head.lower()


def summarize(results, tools, out: Path):
    per_kernel = collections.defaultdict(dict)
    controls = {n: ("caught (%d)" % r["errors"].get(n, 0) if r["errors"].get(n) else f"MISSED ({r['status']})")
                for r in results if r["group"] == "controls" for n in r["names"]}
    for r in results:
        if r["tool"] == "plain" or r["group"] == "controls":
            continue
        for k in r["kernels"] or ["(unit " + r["group"] + ":" + r["names"][0] + ")"]:
            cell = per_kernel[k].get(r["tool"], 0)
            if r["status"] != "finished":
                per_kernel[k][r["tool"]] = r["status"]
            elif not isinstance(cell, str):
                per_kernel[k][r["tool"]] = cell + r["errors"].get(k, 0)
        for k, n in r["errors"].items():
            if k not in r["kernels"]:
                per_kernel[k][r["tool"]] = per_kernel[k].get(r["tool"], 0) + n if not isinstance(
                    per_kernel[k].get(r["tool"], 0), str) else per_kernel[k][r["tool"]]
    wrong = [(r["group"], name, status) for r in results if r["tool"] == "plain"
             for name, status in r["cases"].items() if status not in ("ok", "skipped")]
    lines = ["# Sanitizer sweep", "", f"{len(per_kernel)} kernels, tools: {', '.join(tools)}", "",
             "| kernel | " + " | ".join(tools) + " |", "|---|" + "---|" * len(tools)]
    for k in sorted(per_kernel):
        lines.append(f"| {k} | " + " | ".join(str(per_kernel[k].get(t, "-")) for t in tools) + " |")
    lines += ["", "## Controls (planted faults; each must be caught by its tool)", ""]
    lines += [f"- {n} under {CONTROLS[n]}: {s}" for n, s in controls.items()] or ["- not run"]
    lines += ["", "## Runs", "", "| tool | group | first case | cases | status | errors (summary line) | s |",
              "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['tool']} | {r['group']} | {r['names'][0]} | {len(r['names'])} | {r['status']} | "
                     f"{r['total_errors']} | {r['seconds']} |")
    lines += ["", "## Cases not right without a sanitizer", ""] + [f"- {g} {n}: {s}" for g, n, s in wrong] + \
        (["- none"] if not wrong else [])
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(results, indent=1))
    clean = all(r["status"] == "finished" and r["total_errors"] == 0 and not r["errors"] for r in results
                if r["tool"] != "plain" and r["group"] != "controls") and not wrong
    clean = clean and all(s.startswith("caught") for s in controls.values())
    return clean, "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--groups", default=",".join(GROUPS + ("controls",)))
    parser.add_argument("--chunk", type=int, default=40, help="cases per sanitized process")
    parser.add_argument("--budget", type=float, default=float("inf"),
                        help="seconds from the start after which no run starts (those left are reported 'not run')")
    parser.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 4))
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per sanitized process")
    parser.add_argument("--out", default=os.environ.get("OUT", "sanitize_out"))
    parser.add_argument("--only", default="",
                        help="comma-separated names: keep the units whose first case or file starts with one "
                             "(a rerun of what a sweep flagged, e.g. --groups files --only test_gpu_torch)")
    parser.add_argument("--list", action="store_true", help="print the units and exit")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker[0], args.worker[1:])
    tools = [t for t in args.tools.split(",") if t]
    todo = units([g for g in args.groups.split(",") if g], args.chunk)
    if args.only:
        keep = tuple(n for n in args.only.split(",") if n)
        todo = [(group, names) for group, names in todo if names[0].startswith(keep)]
    if args.list:
        for group, names in todo:
            print(group, " ".join(names))
        return 0
    import glob
    sanitizer = shutil.which("compute-sanitizer") or next(iter(sorted(
        glob.glob("/usr/local/cuda*/bin/compute-sanitizer") + glob.glob("/opt/nvidia/*/compute-sanitizer*/compute-sanitizer")
    )), None)
    if sanitizer is None and tools:
        print("compute-sanitizer not found (PATH, /usr/local/cuda/bin)", file=sys.stderr)
        return 2
    out = Path(args.out) / "sanitize"
    (out / "logs").mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget
    controls = [(t, "controls", [n]) for n, t in CONTROLS.items() if t in tools and "controls" in args.groups]

    def run(tool, group, names):
        return run_unit(tool, group, names, out / "logs", args.timeout * (1 if tool else 2),
                        sanitizer if tool else None, deadline)
    results = schedule(todo, tools, controls, args.jobs, run)
    clean, table = summarize(results, tools, out)
    print(table)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
