#!/usr/bin/env python
"""Warm start: how long a new process spends before its first launch of a kernel compiled by an earlier one.

For each flavor (ours with CuPy arrays, ours with torch tensors, Triton with torch tensors) two new processes
run in turn on the same fresh cache folders (TRANSPILER_CACHE_DIR, TRITON_CACHE_DIR, CUPY_CACHE_DIR): the
first (cold) compiles, the second (warm) finds everything on disk. Each child reports, in milliseconds since
the parent started it (so interpreter start-up counts):
  framework  numpy + cupy / torch imported, inputs made, CUDA context up (the same for every flavor);
  import     `import transpiler` (or triton) and the kernel module (`examples/vector_add.py`);
  launch     the first `add(x, y, out=z)` call, until it returns (no synchronisation);
  total      interpreter start to the first launch's return.
Our target is import + launch under 30 ms in the warm process: no libcst, no analysis, no NVRTC there.

    python bench/warm_start.py [--out DIR]
    python bench/warm_start.py --child FLAVOR START   (one measurement; prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLAVORS = ("ours-cupy", "ours-torch", "triton-torch")


def child(flavor: str, start: float) -> dict:
    def ms():
        return (time.time() - start) * 1e3

    marks = {"interpreter": ms()}
    import numpy as np
    if flavor == "ours-cupy":
        import cupy
        x = cupy.asarray(np.arange(1 << 20, dtype=np.float32))
        y = cupy.ones(1 << 20, cupy.float32)
        z = cupy.empty_like(x)
        cupy.cuda.runtime.deviceSynchronize()
    else:
        import torch
        x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
        y = torch.ones_like(x)
        z = torch.empty_like(x)
        torch.cuda.synchronize()
    marks["framework"] = ms()
    sys.path.insert(0, str(HERE))
    from twins import EXAMPLES, load
    module = load(EXAMPLES / "vector_add.py", "triton" if flavor.startswith("triton") else "ours")
    marks["import"] = ms()
    module.add(x, y, out=z)
    marks["launch"] = ms()
    if flavor == "ours-cupy":
        cupy.cuda.runtime.deviceSynchronize()
        ok = bool((z.get() == np.arange(1 << 20, dtype=np.float32) + 1).all())
    else:
        torch.cuda.synchronize()
        ok = bool(torch.equal(z, x + 1))
    heavy = [m for m in ("libcst", "jinja2", "transpiler.parse", "transpiler.analysis", "transpiler.emit_cuda")
             if m in sys.modules]
    if flavor == "ours-torch" and "cupy" in sys.modules:      # torch users should not pay for importing CuPy
        heavy.append("cupy")
    return {"marks_ms": marks, "correct": ok, "heavy_modules": heavy}


def run_child(flavor: str, cache_root: Path) -> dict:
    env = dict(os.environ)
    for name in ("TRANSPILER_CACHE_DIR", "TRITON_CACHE_DIR", "CUPY_CACHE_DIR"):
        env[name] = str(cache_root / name.lower())
    env["PYTHONPATH"] = str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    # Bytecode as an installed package has it (pip writes .pyc files): the cold process writes them, the warm one
    # reads them, even where PYTHONDONTWRITEBYTECODE is set for the session.
    env["PYTHONDONTWRITEBYTECODE"] = ""
    env["PYTHONPYCACHEPREFIX"] = str(cache_root / "pycache")
    start = time.time()
    done = subprocess.run([sys.executable, __file__, "--child", flavor, repr(start)], env=env, capture_output=True,
                          text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def phases(result: dict) -> dict:
    m = result["marks_ms"]
    return {"start-up": m["interpreter"], "framework": m["framework"] - m["interpreter"],
            "import": m["import"] - m["framework"], "launch": m["launch"] - m["import"], "total": m["launch"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write warm_start.json here")
    parser.add_argument("--child", nargs=2, metavar=("FLAVOR", "START"), help=argparse.SUPPRESS)
    parser.add_argument("--flavors", nargs="*", default=list(FLAVORS))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], float(args.child[1]))))
        return 0
    results = {}
    print("new process to first launch, ms (warm = caches filled by the cold process just before):")
    print(f"  {'flavor':13} {'run':5} {'start-up':>9} {'framework':>10} {'import':>8} {'launch':>8} {'total':>8}")
    for flavor in args.flavors:
        with tempfile.TemporaryDirectory(prefix=f"warm-{flavor}-") as cache:
            for run in ("cold", "warm"):
                result = run_child(flavor, Path(cache))
                results[f"{flavor}/{run}"] = result
                if "error" in result:
                    print(f"  {flavor:13} {run:5} failed: {result['error']}")
                    break
                p = phases(result)
                note = "" if result["correct"] else "  WRONG RESULT"
                if result["heavy_modules"] and run == "warm" and flavor.startswith("ours"):
                    note += f"  imported {result['heavy_modules']}"
                print(f"  {flavor:13} {run:5} {p['start-up']:9.1f} {p['framework']:10.1f} {p['import']:8.1f} "
                      f"{p['launch']:8.1f} {p['total']:8.1f}{note}", flush=True)
    print("  (target for ours, warm: import + launch under 30 ms)")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "warm_start.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
