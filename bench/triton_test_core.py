"""Run Triton's language tests (python/test/unit/language/test_core.py of Triton 3.6) against transpiler and
count the outcomes per test function.

The test file and Triton's helpers (`_internal_testing.py`) are public code kept OUT of this repository: fetch
them into a folder of your own (default /work/triton_tests) and point --tests at it. pytest then runs in a
subprocess with tests/triton_compat/plugin.py, which makes `import triton` mean transpiler in that process only.

    python bench/triton_test_core.py --device cpu                    # CPU: our interpreter (TRITON_INTERPRET=1)
    python bench/triton_test_core.py --device cuda --budget 240      # GPU: compiled through NVRTC
    python bench/triton_test_core.py --device cpu -k "test_where or test_cast" --table

torch is needed by the tests (CPU build is enough on the CPU): --site adds a folder holding it to the path.
Writes the per-test records (JSON) to --report and prints one line per test function:
passed / failed, "ran+IR" (the kernels ran, then the test read Triton's IR or PTX: a skip), the tests' own
skips (a dtype or size the test skips on this device), "internal" (the skip list: checks of Triton's compiler
only) and "unrun" (past the --budget).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_pytest(args) -> int:
    env = dict(os.environ)
    paths = [os.path.join(ROOT, "tests"), ROOT] + ([args.site] if args.site else [])
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["TRITON_COMPAT_HELPERS"] = os.path.join(args.tests, "_internal_testing.py")
    env["TRITON_COMPAT_REPORT"] = os.path.abspath(args.report)
    env["TRITON_COMPAT_TEST_TIMEOUT"] = str(args.timeout)
    if args.per_function:
        env["TRITON_COMPAT_MAX_PER_FUNCTION"] = str(args.per_function)
    if args.budget:
        env["TRITON_COMPAT_DEADLINE"] = str(time.time() + args.budget)
    interpret = args.device == "cpu"
    for name in ("TRITON_INTERPRET", "TRANSPILER_INTERPRET"):
        if interpret:
            env[name] = "1"
        else:
            env.pop(name, None)
    cmd = [sys.executable, "-m", "pytest", "-p", "triton_compat.plugin", "-p", "no:cacheprovider", "-q",
           "-W", "ignore", "--device", args.device, "-rN", os.path.join(args.tests, "test_core.py")]
    if args.k:
        cmd += ["-k", args.k]
    if args.workers > 1:
        cmd += ["-n", str(args.workers)]
    cmd += args.pytest_args
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd, env=env, cwd=args.tests)


def load_records(path) -> dict:
    """The plugin's records: one file, or one per xdist worker (`<path>.gw0`, ...), merged into `path`."""
    records = {}
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    parts = [n for n in sorted(os.listdir(folder)) if n == base or n.startswith(base + ".gw")]
    for name in parts:
        with open(os.path.join(folder, name)) as f:
            records.update(json.load(f))
    with open(path, "w") as f:
        json.dump(records, f, indent=1)
    for name in parts:
        if name != base:
            os.remove(os.path.join(folder, name))
    return records


def outcome_class(record) -> str:
    if record["outcome"] != "skipped":
        return record["outcome"]
    reason = record.get("reason", "")
    if "Triton internals" in reason:
        return "internal"
    if "then the test read" in reason or "results checked" in reason:
        return "ran+IR"
    if "time budget" in reason:
        return "unrun"
    return "skipped"


COLUMNS = ("passed", "failed", "ran+IR", "skipped", "internal", "unrun")


def summarize(records: dict):
    """Counts per test function (in file order of first appearance) and in total."""
    per_function = collections.OrderedDict()
    for record in records.values():
        counts = per_function.setdefault(record["function"], collections.Counter())
        counts[outcome_class(record)] += 1
    total = collections.Counter()
    for counts in per_function.values():
        total.update(counts)
    return per_function, total


def in_file_order(per_function, test_file):
    """The functions in the order the test file defines them (when it is at hand)."""
    if not os.path.exists(test_file):
        return per_function
    with open(test_file) as f:
        names = [line[4:line.index("(")] for line in f if line.startswith("def test_")]
    rank = {name: i for i, name in enumerate(names)}
    return collections.OrderedDict(sorted(per_function.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def print_table(per_function, total):
    print("| test function | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for name, counts in per_function.items():
        print(f"| {name} | " + " | ".join(str(counts.get(c, 0)) for c in COLUMNS) + " |")
    print("| **total** | " + " | ".join(str(total.get(c, 0)) for c in COLUMNS) + " |")


def print_failures(records, limit):
    """The distinct failure messages per function, most frequent first: the list to classify."""
    by_function = collections.defaultdict(collections.Counter)
    for record in records.values():
        if record["outcome"] == "failed":
            text = f"{record.get('error')}: {record.get('message', '')}"
            if record.get("cause"):
                text += f" (cause {record['cause']})"
            by_function[record["function"]][text[:240]] += 1
    for name, messages in by_function.items():
        print(f"\n## {name}")
        for text, n in messages.most_common(limit):
            print(f"  {n:5d}  {text}")


# Why a test of test_core.py fails here, by the failure's text (first match wins). Classes:
#   unsupported  a feature transpiler does not have yet (docs/language.md lists it)
#   frontend     a front-end gap already filed (fp8 dtypes, tl.tensor, methods on Python numbers)
#   wording      the kernel is refused as Triton refuses it, but the test matches Triton's exact words or class
#   naming       a name Triton's own implementation prints (the repr of a dtype)
#   triton-fails the test expects Triton's compiler to fail where ours compiles the kernel
#   interpreter  the test expects what only a compiler sees (both branches' types) or a GPU launch refuses (host
#                memory): the interpreter, like Triton's, runs it; the compiled path does what the test expects
#   reference    the test's own reference is less exact than our result (checked against a float64 one)
#   environment  the test needs what this machine lacks (a CUDA torch) or more time than the interpreter takes
#   fixed        failures of the 2026-12-01 runs whose cause was fixed since (texts of the old failures)
# A refusal's kind opens its message ("not supported yet: ...", transpiler/errors.py), so any refusal not
# matched by a named pattern above the generic one is still counted as unsupported.
FAILURE_CLASSES = [
    ("fixed", r"static_assert failed|cudaErrorInsufficientDriver|too many ':' in index|too many indices for a "
              r"block|no attribute 'fp_mantissa_width'",
     "shapes vs lists, launches without arrays, ':' past the rank, keep_dims, dtype layout attributes"),
    ("environment", r"Torch not compiled with CUDA|pin_memory=True requires|'<' not supported between instances "
                    r"of 'NoneType'|TestTimeout", "needs a CUDA torch, or ran past the per-test limit"),
    ("unsupported", r"has no attribute '(dot_scaled|gather|histogram|inline_asm_elementwise|const|pi32_t)'",
     "tl.dot_scaled, tl.gather, tl.histogram, tl.inline_asm_elementwise, tl.const, tl.pi32_t"),
    ("unsupported", r"tl\.dot needs two 2-D blocks", "batched (3-D) tl.dot in the compiler"),
    ("unsupported", r"batched \(3-D\) tl\.dot\b", "batched (3-D) tl.dot, refused on both paths since its H200 run "
                                                  "wrote NaN"),
    ("unsupported", r"interpreter cannot convert tl\.u?int64 to pointer",
     "an integer cast to a pointer in the interpreter (its pointers are offsets into the arguments' arrays)"),
    ("unsupported", r"tl\.dot needs M, N and K of at least 16", "tl.dot with M, N or K below 16 (Triton on "
                                                                "NVIDIA skips those too)"),
    ("unsupported", r"extra\.cuda' has no attribute", "tl.extra.cuda.num_threads / globaltimer / smid"),
    ("unsupported", r"Descriptor block shape|make_tensor_descriptor", "tensor descriptors (TMA)"),
    ("unsupported", r"return inside a runtime if \(with a value\)", "a value-returning return in a runtime if"),
    ("unsupported", r"conditional expression on a runtime condition whose branches have effects",
     "a runtime conditional expression whose branches store"),
    ("unsupported", r"in host memory", "host (CPU or pinned) memory passed to a GPU launch"),
    ("unsupported", r"not supported yet: ", "other refusals whose kind is 'not supported yet' (the error says so)"),
    ("frontend", r"float8|fp8", "fp8 dtypes (names, arrays, casts)"),
    ("frontend", r"has no attribute 'tensor'", "tl.tensor"),
    ("frontend", r"a (int|float) has no attribute|'(int|float)' object has no attribute",
     "methods on Python numbers (`(0).to(tl.int64)`, `x.dtype`)"),
    ("reference", r"test_scaled_dot: AssertionError: Tensor-likes are not close",
     "the test's reference (CPU torch matmul in fp16/bf16) rounds its sums more than we do: with it computed in "
     "float64 and rounded once, these pass"),
    ("interpreter", r"test_const: (Failed: DID NOT RAISE|AssertionError: Wrong error message)",
     "a runtime if / conditional expression / helper whose branches give a `tl.const` and a plain pointer: the "
     "compiler refuses it in Triton's words, the interpreter (Triton's too) runs the branch taken"),
    ("interpreter", r"test_pointer_arguments: Failed: DID NOT RAISE ValueError",
     "host memory given to a launch: the interpreter runs on it (the compiled path raises a ValueError)"),
    ("wording", r"Regex pattern did not match|DID NOT RAISE|invalid axis|assert None\b|must be a power of 2|"
                r"power of two between|does not fit its parameter type|does not fit in 64 bits",
     "refused with other words or another exception class than Triton's"),
    ("naming", r"triton\.language\.", "repr(tl.int8) is 'tl.int8', not 'triton.language.int8'"),
    ("triton-fails", r"assert '' != ''", "test_call expects Triton to fail on noinline helpers; we inline them"),
]


def classify(record):
    text = f"{record['function']}: {record.get('error')}: {record.get('message', '')} {record.get('cause', '')}"
    for name, pattern, note in FAILURE_CLASSES:
        if re.search(pattern, text):
            return name, note
    return "unexplained", text[:200]


def print_classes(records):
    counts = collections.Counter()
    unexplained = collections.Counter()
    for record in records.values():
        if record["outcome"] != "failed":
            continue
        name, note = classify(record)
        counts[(name, note)] += 1
        if name == "unexplained":
            unexplained[(record["function"], note)] += 1
    print("\n| class | failures | what |\n|---|---|---|")
    for (name, note), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1])):
        print(f"| {name} | {n} | {note if name != 'unexplained' else 'see below'} |")
    for (function, text), n in unexplained.most_common():
        print(f"  unexplained {n:4d}  {function}: {text}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", default="/work/triton_tests", help="folder holding test_core.py and "
                                                                      "_internal_testing.py")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--site", default=None, help="extra folder on the path (a CPU torch, say)")
    parser.add_argument("--report", default="triton_test_core.json")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per test")
    parser.add_argument("--budget", type=float, default=0, help="seconds for the whole run (then skip)")
    parser.add_argument("--per-function", type=int, default=0, help="run at most N parametrizations of each "
                                                                     "test function (evenly spread)")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers")
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument("--summary-only", action="store_true", help="only summarize an existing --report")
    parser.add_argument("--failures", type=int, default=0, help="print up to N distinct failure messages "
                                                                "per function")
    parser.add_argument("--classify", action="store_true", help="count the failures by why they fail")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    args.tests = os.path.abspath(args.tests)     # pytest runs in that folder: a relative path would not resolve
    if not args.summary_only:
        for stale in [args.report] + [f"{args.report}.gw{i}" for i in range(64)]:
            if os.path.exists(stale):
                os.remove(stale)
        run_pytest(args)
    records = load_records(args.report)
    per_function, total = summarize(records)
    per_function = in_file_order(per_function, os.path.join(args.tests, "test_core.py"))
    print_table(per_function, total)
    if args.classify:
        print_classes(records)
    if args.failures:
        print_failures(records, args.failures)


if __name__ == "__main__":
    main()
