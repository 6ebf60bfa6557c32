"""Public real-world Triton kernels on the GPU: Triton and our compiled path on the same inputs, one line a kernel.

    python3 bench/rw_s7core_gpu.py --cases DIR [--jobs 12] [--timeout 50]

DIR holds case modules (kept out of this repository: their kernels are public code): each `*.py` there imports
`triton` / `triton.language as tl`, defines its kernels as written upstream and a list `CASES` of dicts
(`name`, `kernel`, `grid`, `args` (NumPy arrays and scalars, made from a seeded generator at import, so every
process sees the same inputs), optional `constexprs` (launch keywords, `num_warps` included), `rtol`, `atol`).
Every module runs in two processes at once: one with Triton itself (torch CUDA tensors), one where `import
triton` means transpiler (`tests/triton_compat/shim.py`, CuPy arrays). Each process saves every array argument
after its launch; the parent compares them (integers exactly, floats within the case's tolerance, NaN where
the other has NaN) and prints `same`, `differs` (with the worst error), `ours fails` / `refused` (our error
text) or `Triton fails` per kernel, then the totals. A module that does not finish within `--timeout` seconds
reports its unfinished cases as `timeout`.

Two rules follow from what the kernels compute, not from the results:
- A case may name outputs whose values depend on the order programs run in (`order_dependent`: arg index ->
  a NumPy function of the output and the case's inputs giving a bool array, True where the value is one the
  kernel can produce under some order; e.g. overlapping stores racing). Each side checks its own output with
  it (every element must be possible); the two sides are not compared element by element there.
- Where a case's array arguments hold fp16 or bf16, the kernel computes in that precision, and compiled code may
  round differently from Triton without either being wrong: which product of `a*b - c*d` an FMA keeps exact
  (Triton's LLVM fuses the first, ptxas may fuse the other), and fp16/bf16 sums, which we accumulate in fp32
  (docs/language.md) where Triton adds in the element type. An element off by more than the case's tolerance
  but by at most HALF_UNITS units of that precision at its scale (|ours - Triton| <= HALF_UNITS * eps *
  max(1, |Triton|)) is reported as `same (fp16 rounding)` / `same (bf16 rounding)`, with the largest
  difference in those units, apart from `same`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HALF_UNITS = 4          # fp16 / bf16 roundings a compiled difference may reach at a value's scale (see above)
HALF_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _load(path: Path):
    import importlib.util
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def run_side(flavor: str, path: Path, out: Path, chunk: list) -> None:
    """Launch every case of the module at `path` under `flavor` ('triton' or 'ours'); one JSON line each."""
    if os.environ.get("RW_CPU"):
        return _run_side_on_cpu(flavor, path, out, chunk)
    if flavor == "ours":
        sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
        from triton_compat import shim
        shim.install()
        import cupy

        def to_device(a):
            return cupy.asarray(a)

        def to_host(a):
            return cupy.asnumpy(a)

        def sync():
            cupy.cuda.runtime.deviceSynchronize()
    else:
        import torch

        def to_device(a):
            return torch.from_numpy(a.copy()).cuda()

        def to_host(a):
            return a.cpu().numpy()

        def sync():
            torch.cuda.synchronize()
    _launch_all(flavor, [_load(path).CASES[i] for i in chunk], out, lambda case: case["kernel"], to_device, to_host,
                sync)


def _run_side_on_cpu(flavor, path, out, chunk):
    """`RW_CPU=1`: the plumbing checked without a GPU, both interpreters (Triton's with CPU torch tensors)."""
    if flavor == "ours":
        sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
        from triton_compat import shim
        shim.install()
        pick = lambda case: case["kernel"].interpret       # noqa: E731
        to_device = to_host = lambda a: a.copy()           # noqa: E731
    else:
        os.environ["TRITON_INTERPRET"] = "1"
        import torch
        import triton.runtime.interpreter as interpreter
        patch_tensor = interpreter._patch_lang_tensor

        def index_of_one_element(tensor, scope):    # NumPy 2.4 refuses int() of a 1-element array
            patch_tensor(tensor, scope)
            scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
        interpreter._patch_lang_tensor = index_of_one_element
        pick = lambda case: case["kernel"]                 # noqa: E731
        to_device, to_host = (lambda a: torch.from_numpy(a.copy())), (lambda a: a.numpy())
    _launch_all(flavor, [_load(path).CASES[i] for i in chunk], out, pick, to_device, to_host, lambda: None)


def _launch_all(flavor, cases, out, pick, to_device, to_host, sync):
    import numpy as np
    for case in cases:
        record = {"name": case["name"], "rtol": case.get("rtol", 1e-5), "atol": case.get("atol", 1e-5)}
        start = time.time()
        try:
            args = [to_device(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
            options = dict(case.get("constexprs", {}))
            if "num_warps" in case:
                options["num_warps"] = case["num_warps"]
            pick(case)[case["grid"]](*args, **options)
            sync()
            arrays = [to_host(a) for a, original in zip(args, case["args"]) if isinstance(original, np.ndarray)]
            np.savez(out / f"{flavor}__{case['name']}.npz", *arrays)
            record["run"] = "ok"
            record["order_dependent"] = order_dependent_checks(case, args, to_host)
            record["half"] = half_precision(case["args"])
        except Exception as e:  # noqa: BLE001  reported per kernel
            record["run"] = "fail"
            record["error"] = f"{type(e).__name__}: {str(e).strip()}"[-600:]
            record["refused"] = "not supported yet" in str(e) or "not Triton's language" in str(e)
            if os.environ.get("RW_TRACEBACK"):
                traceback.print_exc()
        record["s"] = round(time.time() - start, 2)
        print(json.dumps(record), flush=True)


def order_dependent_checks(case, args, to_host) -> dict:
    """{saved array name: elements no order of the programs can produce} for the case's `order_dependent`
    outputs, checked on this side's own result."""
    import numpy as np
    names = {i: f"arr_{k}" for k, i in enumerate(i for i, a in enumerate(case["args"]) if isinstance(a, np.ndarray))}
    return {names[i]: int((~np.asarray(possible(to_host(args[i]), case["args"]), bool)).sum())
            for i, possible in case.get("order_dependent", {}).items()}


def half_precision(inputs):
    """'float16' / 'bfloat16' where the case's arrays hold one (the coarsest), else None."""
    import numpy as np
    kinds = {a.dtype.name for a in inputs if isinstance(a, np.ndarray)}
    return "bfloat16" if "bfloat16" in kinds else "float16" if "float16" in kinds else None


def compare(out: Path, name: str, rtol: float, atol: float, ours_record=None, theirs_record=None
            ) -> tuple[str, str]:
    """'same', 'same (fp16 rounding)' (the rule of the module's docstring) or 'differs', and the details."""
    import numpy as np
    ours, theirs = np.load(out / f"ours__{name}.npz"), np.load(out / f"triton__{name}.npz")
    ours_record, theirs_record = ours_record or {}, theirs_record or {}
    racy = {**theirs_record.get("order_dependent", {}), **ours_record.get("order_dependent", {})}
    half = ours_record.get("half")
    problems, rounding = [], []
    for key in ours.files:
        a, b = ours[key], theirs[key]
        if key in racy:                      # each side's values checked against what some order produces
            bad = {side: record.get("order_dependent", {}).get(key) for side, record in
                   (("ours", ours_record), ("Triton", theirs_record))}
            if any(v for v in bad.values()) or None in bad.values():
                problems.append(f"{key}: values no program order produces: " +
                                ", ".join(f"{side} {v}" for side, v in bad.items()))
            else:
                rounding.append(f"{key}: order-dependent, {int((a != b).sum())}/{a.size} differ, both possible")
            continue
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} vs {b.shape}")
            continue
        if a.dtype.kind in "iub":
            wrong = int((a != b).sum())
            if wrong:
                problems.append(f"{key}: {wrong}/{a.size} integers differ")
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        close = np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            both = ~close & np.isfinite(a64) & np.isfinite(b64)
            worst = float(np.abs(a64 - b64)[both].max()) if both.any() else float("nan")
            if half and both.sum() == (~close).sum():
                units = np.abs(a64 - b64)[both] / (HALF_EPS[half] * np.maximum(1.0, np.abs(b64[both])))
                if units.max() <= HALF_UNITS:
                    rounding.append(f"{key}: {int((~close).sum())}/{a.size} differ by at most {units.max():.2f} "
                                    f"{half} units (max error {worst:.3g})")
                    continue
            problems.append(f"{key}: {int((~close).sum())}/{a.size} differ, max error {worst:.3g}")
    if problems:
        return "differs", "; ".join(problems + rounding)
    if rounding:
        return ("same (order-dependent)" if racy and all("order-dependent" in r for r in rounding) else
                f"same ({'fp16' if half == 'float16' else 'bf16'} rounding)"), "; ".join(rounding)
    return "same", ""


def _kernel_name(kernel) -> str:
    while not hasattr(kernel, "arg_names") and hasattr(kernel, "fn"):      # autotuner / heuristics wrappers
        kernel = kernel.fn
    return getattr(kernel, "__name__", repr(kernel))


def _chosen_cases(path: Path, per_kernel: int) -> list:
    """The indices of the module's cases to run: the first `per_kernel` of each kernel (the module is loaded
    here with `import triton` meaning transpiler: quick, nothing launched)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from triton_compat import shim
    shim.install()
    seen, chosen = {}, []
    for i, case in enumerate(_load(path).CASES):
        name = _kernel_name(case["kernel"])
        seen[name] = seen.get(name, 0) + 1
        if per_kernel <= 0 or seen[name] <= per_kernel:
            chosen.append(i)
    return chosen


def _side_process(flavor, path, chunk, out, deadline):
    env = dict(os.environ)
    if not env.get("RW_CPU"):
        env.pop("TRITON_INTERPRET", None)
    command = [sys.executable, __file__, "--side", flavor, "--module", str(path), "--out", str(out),
               "--chunk", ",".join(str(i) for i in chunk)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(1.0, deadline - time.time()),
                              env=env)
        text, err = done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = "timeout"
    records = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
            records[record["name"]] = record
        except (ValueError, KeyError):
            pass
    return records, err


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, help="folder of case modules")
    parser.add_argument("--jobs", type=int, default=16, help="processes at once")
    parser.add_argument("--budget", type=float, default=50.0, help="seconds for the whole run; cases not done "
                        "by then are reported as timeout")
    parser.add_argument("--per-process", type=int, default=6, help="cases a process launches")
    parser.add_argument("--per-kernel", type=int, default=2, help="cases run per kernel (0: all)")
    parser.add_argument("--only", help="only the modules whose name contains one of these (comma-separated)")
    parser.add_argument("--keep", type=Path, help="a folder to keep every side's arrays in (.npz per case)")
    parser.add_argument("--side", choices=("triton", "ours"), help=argparse.SUPPRESS)
    parser.add_argument("--module", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--chunk", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        run_side(args.side, args.module, args.out, [int(v) for v in args.chunk.split(",") if v])
        return 0
    deadline = time.time() + args.budget
    modules = sorted(p for p in args.cases.glob("*.py") if p.name != "common.py" and not p.name.startswith("_"))
    if args.only:
        modules = [m for m in modules if any(part in m.stem for part in args.only.split(","))]
    out = args.keep or Path(tempfile.mkdtemp(prefix="rw_s7core_"))
    out.mkdir(parents=True, exist_ok=True)
    chosen = {m: _chosen_cases(m, args.per_kernel) for m in modules}
    chunks = [(m, chosen[m][i:i + args.per_process]) for m in modules for i in range(0, len(chosen[m]), args.per_process)]
    chunks.sort(key=lambda c: -len(c[1]))        # the fullest first, so the last wave is short
    jobs = [(flavor, m, chunk) for m, chunk in chunks for flavor in ("triton", "ours")]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda j: _side_process(j[0], j[1], j[2], out, deadline), jobs))
    results = {}
    for (flavor, module, _), (records, err) in zip(jobs, done):
        mine = results.setdefault((flavor, module), ({}, []))
        mine[0].update(records)
        mine[1].append(err)
    counts = {}
    for module in modules:
        theirs, triton_err = results[("triton", module)]
        ours, ours_err = results[("ours", module)]
        triton_err, ours_err = " ".join(triton_err), " ".join(ours_err)
        names = list(dict.fromkeys(list(ours) + list(theirs)))
        if not names:
            print(f"{module.stem}: no case ran (ours: {ours_err.strip()[-300:]}; Triton: {triton_err.strip()[-300:]})")
            counts["module failed"] = counts.get("module failed", 0) + 1
        for name in names:
            o, t = ours.get(name), theirs.get(name)
            if o is None or t is None:
                verdict, detail = "timeout", ("ours" if o is None else "Triton") + " did not finish"
            elif t["run"] != "ok":
                verdict, detail = "Triton fails", t.get("error", "")
            elif o["run"] != "ok":
                verdict, detail = ("refused" if o.get("refused") else "ours fails"), o.get("error", "")
            else:
                verdict, detail = compare(out, name, o["rtol"], o["atol"], o, t)
            counts[verdict] = counts.get(verdict, 0) + 1
            print(f"{verdict:12s} {module.stem}/{name}  {detail}".rstrip())
    total = sum(counts.values())
    print("total", total, " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
