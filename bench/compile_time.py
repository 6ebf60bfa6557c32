#!/usr/bin/env python
"""Compile time, ours vs Triton: cold (fresh process, empty caches) and warm (fresh process, filled caches).

For each kernel (softmax fp32 8192x4096; matmul fp16 4096^3; `attention`: the causal flash-attention forward
of `bench/attention_kernels.py`, about 250 lines with two inlined copies of its key loop, fp16 [4, 16, 2048, 128])
and each compiler, in new processes:
  cold  TRANSPILER_CACHE_DIR, TRITON_CACHE_DIR and CUPY_CACHE_DIR point at new empty folders; the time of the
        first call (for ours: parse, analysis, emission, NVRTC, load; for Triton: its whole pipeline) plus
        its launch, then of the second call (launch only, for scale);
  warm  another new process on the caches the cold one filled: time to first launch.
Each process's start-up (imports, CUDA context, inputs) is measured apart and left out of those figures. First
the installation is primed as an install would (`prime_installation`: our modules byte-compiled, our Jinja
templates compiled into the installation; Triton's installed package has its bytecode already).
`--offline` needs no GPU: both compilers' compile for an sm_90a device of what each kernel's launch would compile,
step by step, in fresh processes on empty caches (`compile_offline.py`; Triton through its bundled ptxas), with
each cubin's registers and stack frame.

    python bench/compile_time.py [--out DIR] [--kernels softmax,matmul,attention]
    python bench/compile_time.py --offline [--kernels attention]   (Triton importable for its half)
    python bench/compile_time.py --child KERNEL FLAVOR    (one measurement; prints one JSON line)
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
KERNELS = ("softmax", "matmul", "attention")
FLAVORS = ("ours", "triton")
CHILD_TIMEOUT_S = 150  # a cold Triton compile takes seconds; more means something hangs
ATTENTION_SHAPE = (4, 16, 2048, 128)   # batch, heads, sequence, head dim


def child(kernel: str, flavor: str) -> dict:
    """Runs in the fresh process: build inputs, then time the first and the second call."""
    started = time.perf_counter()
    import torch

    sys.path.insert(0, str(HERE))
    from twins import BENCH, EXAMPLES, load

    torch_ready = time.perf_counter()
    module = load({"softmax": EXAMPLES / "softmax.py", "attention": BENCH / "attention_kernels.py"}
                  .get(kernel, BENCH / "kernels.py"), flavor)      # imports the compiler (triton, transpiler)
    loaded = time.perf_counter()
    if kernel == "softmax":
        x = torch.randn(8192, 4096, device="cuda")
        y = torch.empty_like(x)
        call = lambda: module.softmax(x, out=y)  # noqa: E731
    elif kernel == "attention":
        q, k, v = (torch.randn(*ATTENTION_SHAPE, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        call = lambda: module.attention(q, k, v, out=o)  # noqa: E731
    else:
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        c = torch.empty_like(a)
        call = lambda: module.matmul(a, b, out=c)  # noqa: E731
    torch.cuda.synchronize()
    setup = time.perf_counter()
    call()
    torch.cuda.synchronize()
    first = time.perf_counter()
    call()
    torch.cuda.synchronize()
    second = time.perf_counter()
    # Triton imports its whole compiler with the kernel module (in start-up); ours imports parser, passes and
    # NVRTC on the first compile (in the first call): `compiler_import_s` is the module's import, apart.
    return {"startup_s": setup - started, "compiler_import_s": loaded - torch_ready, "first_call_s": first - setup,
            "second_call_s": second - first}


def run_child(kernel: str, flavor: str, cache_root: Path) -> dict:
    env = dict(os.environ)
    for name in ("TRANSPILER_CACHE_DIR", "TRITON_CACHE_DIR", "CUPY_CACHE_DIR"):
        env[name] = str(cache_root / name.lower())
    try:
        done = subprocess.run([sys.executable, __file__, "--child", kernel, flavor], env=env, capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT_S} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def measure_offline(kernels, flavors=FLAVORS) -> dict:
    """Each kernel x compiler by `compile_offline.py` in a fresh process on empty caches (no GPU needed)."""
    results = {}
    for kernel in kernels:
        for flavor in flavors:
            with tempfile.TemporaryDirectory(prefix=f"compile-offline-{kernel}-{flavor}-") as cache:
                env = dict(os.environ)
                for name in ("TRANSPILER_CACHE_DIR", "TRITON_CACHE_DIR", "CUPY_CACHE_DIR"):
                    env[name] = str(Path(cache) / name.lower())
                done = subprocess.run([sys.executable, str(HERE / "compile_offline.py"), kernel, flavor], env=env,
                                      capture_output=True, text=True, timeout=CHILD_TIMEOUT_S * 4)
            if done.returncode != 0:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                result = {"error": f"exit {done.returncode}: {tail[:300]}"}
            else:
                result = json.loads(done.stdout.strip().splitlines()[-1])
            results[f"{kernel}/{flavor}"] = result
            summary = (f"compile {result['compile_s']:6.2f} s, CPU {result['compile_cpu_s']:6.2f} s "
                       f"(imports {result['imports_s']:.2f} s), "
                       f"{result['registers']} registers, stack {result['stack_frame_bytes']} B"
                       if "error" not in result else result["error"])
            print(f"  {kernel:10} {flavor:7} {summary}", flush=True)
            print(f"             {json.dumps(result.get('split_s', {}))} {json.dumps(result.get('nvrtc_phases_ms', {}))}",
                  flush=True)
    return results


def measure_all(out: Path | None, kernels=KERNELS) -> dict:
    """Every kernel x compiler, cold then warm; the JSON is rewritten after each so a cut-short run keeps some."""
    results = {}
    for kernel in kernels:
        for flavor in FLAVORS:
            with tempfile.TemporaryDirectory(prefix=f"compile-{kernel}-{flavor}-") as cache:
                cold = run_child(kernel, flavor, Path(cache))
                warm = run_child(kernel, flavor, Path(cache)) if "error" not in cold else {"error": "no cold run"}
            results[f"{kernel}/{flavor}"] = {"cold": cold, "warm": warm}
            print(f"  {kernel:8} {flavor:7} {describe(cold, warm)}", flush=True)
            if out:
                out.mkdir(parents=True, exist_ok=True)
                (out / "compile_time.json").write_text(json.dumps(results, indent=1))
    return results


def describe(cold: dict, warm: dict) -> str:
    if "error" in cold:
        return f"failed: {cold['error']}"
    text = (f"cold first call {cold['first_call_s']:7.3f} s (second {cold['second_call_s'] * 1e3:6.2f} ms, "
            f"start-up {cold['startup_s']:.1f} s; with the compiler's import "
            f"{cold['first_call_s'] + cold.get('compiler_import_s', 0.0):.3f} s)")
    if "error" in warm:
        return text + f"; warm failed: {warm['error']}"
    return text + f"; warm first call {warm['first_call_s']:7.3f} s"


def prime_installation() -> str:
    """Do what an install does before any process runs (pip byte-compiles the modules; `template_cache.prime`
    compiles our Jinja templates into the installation): a source checkout copied to a machine has neither, and
    its first process would count them in its first compile. Triton's installed package has its bytecode
    already. Each process's cold compile then counts compile work only, for both compilers."""
    root = HERE.parent
    folders = [str(root / name) for name in ("transpiler", "runtime", "templates", "examples")]
    started = time.perf_counter()
    steps = [[sys.executable, "-m", "compileall", "-q", *folders],
             [sys.executable, "-c", "from transpiler.runtime.template_cache import prime; print(prime())"]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root)] + [p for p in
                                                                     os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for step in steps:
        done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return f"priming failed ({' '.join(step[1:3])}): {(done.stderr.strip().splitlines() or ['?'])[-1][:200]}"
    return f"installation primed (bytecode of our modules, compiled templates) in {time.perf_counter() - started:.1f} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write compile_time.json here")
    parser.add_argument("--kernels", default=None, help="comma-separated subset of " + ",".join(KERNELS))
    parser.add_argument("--offline", action="store_true", help="no GPU: both compilers, compile for sm_90a step by step")
    parser.add_argument("--child", nargs=2, metavar=("KERNEL", "FLAVOR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    kernels = tuple(args.kernels.split(",")) if args.kernels else KERNELS
    print(prime_installation(), flush=True)
    if args.offline:
        print("compile of each kernel for sm_90a without a GPU (fresh process, empty caches; bench/compile_offline.py)")
        results = measure_offline(kernels)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "compile_time_offline.json").write_text(json.dumps(results, indent=1))
        return 0
    print("compile time in fresh processes (cold: empty caches; warm: the caches the cold run filled):")
    measure_all(args.out, kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
