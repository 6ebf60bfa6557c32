#!/usr/bin/env python
"""Compile time, ours vs Triton: cold (fresh process, empty caches) and warm (fresh process, filled caches).

For each kernel (softmax fp32 8192x4096; matmul fp16 4096^3; `attention`: the causal flash-attention forward
of `bench/attention_kernels.py`, about 250 lines with two inlined copies of its key loop, fp16 [4, 16, 2048, 128])
and each compiler, in new processes:
  cold  TRANSPILER_CACHE_DIR, TRITON_CACHE_DIR and CUPY_CACHE_DIR point at new empty folders; the time of the
        first call (for ours: parse, analysis, emission, NVRTC, load; for Triton: its whole pipeline) plus
        its launch, then of the second call (launch only, for scale);
  warm  another new process on the caches the cold one filled: time to first launch.
Each process's start-up (imports, CUDA context, inputs) is measured apart and left out of those figures.
`--offline` needs no GPU: for our compiler only, the attention kernel's time of parse + analysis + emission (each
step apart, the lazy imports first) and of the one NVRTC run a launch makes (sm_90a, NVRTC's phases from its
`-time` report) in a fresh process on an empty cache, with the source's line count and the cubin's stack frame (spills).

    python bench/compile_time.py [--out DIR] [--kernels softmax,matmul,attention]
    python bench/compile_time.py --offline [--kernels attention]
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

    if kernel == "softmax":
        module = load(EXAMPLES / "softmax.py", flavor)
        x = torch.randn(8192, 4096, device="cuda")
        y = torch.empty_like(x)
        call = lambda: module.softmax(x, out=y)  # noqa: E731
    elif kernel == "attention":
        module = load(BENCH / "attention_kernels.py", flavor)
        q, k, v = (torch.randn(*ATTENTION_SHAPE, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        call = lambda: module.attention(q, k, v, out=o)  # noqa: E731
    else:
        module = load(BENCH / "kernels.py", flavor)
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
    return {"startup_s": setup - started, "first_call_s": first - setup, "second_call_s": second - first}


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


def offline_child(kernel: str) -> dict:
    """Runs in the fresh process (no GPU needed): our emission of `kernel` step by step, then the one NVRTC run
    a launch makes (`compiler.compile_cubin`'s options, with NVRTC's own `-time` report of its phases)."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from twins import BENCH, EXAMPLES  # noqa: F401  (puts examples/ on sys.path)
    import attention_kernels as attention_module

    if kernel != "attention":
        raise SystemExit(f"--offline measures the attention kernel only, not {kernel!r}")
    z, h, n, d = ATTENTION_SHAPE
    q = np.zeros((z, h, n, d), np.float16)
    lse = np.zeros((z, h, n), np.float32)
    st = lambda a: [x // a.itemsize for x in a.strides]  # noqa: E731
    config = dict(attention_module.ATTENTION_CONFIG)
    num_warps, num_stages = config.pop("num_warps", 4), config.pop("num_stages", 3)
    args = [q, q, q, None, 1.0 / d ** 0.5, lse, q, *st(q), *st(q), *st(q), *st(q), *[0] * 10, *st(lse), None, None,
            0.0, 0, 0, None, None]
    constexprs = dict(HQ=h, HK=h, ACTUAL_BLOCK_DMODEL=d, MAX_SEQLENS_Q=n, MAX_SEQLENS_K=n, IS_VARLEN=False,
                      IS_CAUSAL=True, BLOCK_DMODEL=d, PRE_LOAD_V=False, USE_BIAS=False, ENABLE_DROPOUT=False,
                      RETURN_SCORES=False, USE_ALIBI=False, USE_EXP2=True, **config)
    kernel_obj = attention_module.attn_fwd
    clock = time.perf_counter
    started = clock()
    from transpiler.analysis import analyze
    from transpiler.emit_cuda import emit_kernel
    from transpiler.parse import build_kernel_ir, source as source_module
    imported = clock()
    values = kernel_obj._bind_for_compile(tuple(args), constexprs, num_warps)
    key = kernel_obj.spec_key(values)                 # compiles the kernel's launch binder
    keyed = clock()
    opts = kernel_obj.variant_options(key, num_warps, num_stages, "sm_90a")
    libcst_s = [0.0]
    real_parse = source_module.parsed_function

    def timed_parse(fn):
        t = clock()
        try:
            return real_parse(fn)
        finally:
            libcst_s[0] += clock() - t
    import transpiler.parse.builder as builder_module
    builder_module.parsed_function = timed_parse      # the builder's name for it (imported from parse/source.py)
    t0 = clock()
    ir = build_kernel_ir(kernel_obj.fn, kernel_obj._arg_specs(key, values), opts)
    t1 = clock()
    analysis = analyze(ir, opts)
    t2 = clock()
    source = emit_kernel(ir, analysis).source
    emitted = clock()
    phases, cubin, nvrtc_s = _nvrtc_with_phases(source, "sm_90a")
    from transpiler.runtime.occupancy import cubin_resources
    resources = cubin_resources(cubin)
    return {"emit_s": emitted - started, "cuda_lines": len(source.splitlines()), "nvrtc_s": nvrtc_s,
            "stack_frame_bytes": resources.frame_bytes if resources is not None else None,   # spills, local arrays
            "split_s": {"imports (libcst, jinja2, our passes)": imported - started,
                        "binder (compile of the launch pass)": keyed - imported,
                        "parse to IR": t1 - t0, "  of which libcst parse + positions": libcst_s[0],
                        "analysis": t2 - t1, "emission (Jinja templates compiled on first use)": emitted - t2},
            "nvrtc_phases_ms": phases}


def _nvrtc_with_phases(source, arch):
    """`(phases, cubin, seconds)` of the NVRTC run a launch makes, with NVRTC's `-time` report ({phase: ms})."""
    from cupy.cuda import nvrtc
    from transpiler.runtime.compiler import nvrtc_options
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "time.csv")
        prog = nvrtc.createProgram(source, "attention.cu", [], [])
        try:
            started = time.perf_counter()
            nvrtc.compileProgram(prog, list(nvrtc_options(arch)) + [f"-time={report}"])
            seconds = time.perf_counter() - started
            cubin = nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)
        phases = {}
        if os.path.exists(report):
            for line in open(report).read().splitlines()[1:]:
                fields = [f.strip() for f in line.split(",")]
                if len(fields) == 4 and fields[3] == "ms":
                    phases[fields[1]] = phases.get(fields[1], 0) + float(fields[2])
    return phases, cubin, seconds


def measure_offline(kernels) -> dict:
    results = {}
    for kernel in kernels:
        with tempfile.TemporaryDirectory(prefix=f"compile-offline-{kernel}-") as cache:
            env = dict(os.environ, TRANSPILER_CACHE_DIR=cache)
            done = subprocess.run([sys.executable, __file__, "--offline-child", kernel], env=env,
                                  capture_output=True, text=True, timeout=CHILD_TIMEOUT_S * 4)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            results[kernel] = {"error": f"exit {done.returncode}: {tail[:300]}"}
        else:
            results[kernel] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  {kernel:10} {results[kernel]}", flush=True)
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
            f"start-up {cold['startup_s']:.1f} s)")
    if "error" in warm:
        return text + f"; warm failed: {warm['error']}"
    return text + f"; warm first call {warm['first_call_s']:7.3f} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write compile_time.json here")
    parser.add_argument("--kernels", default=None, help="comma-separated subset of " + ",".join(KERNELS))
    parser.add_argument("--offline", action="store_true", help="ours only, no GPU: emission and NVRTC times")
    parser.add_argument("--child", nargs=2, metavar=("KERNEL", "FLAVOR"), help=argparse.SUPPRESS)
    parser.add_argument("--offline-child", metavar="KERNEL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if args.offline_child:
        print(json.dumps(offline_child(args.offline_child)))
        return 0
    kernels = tuple(args.kernels.split(",")) if args.kernels else KERNELS
    if args.offline:
        print("our compile of each kernel without a GPU (fresh process, empty cache): emission, then NVRTC sm_90a")
        results = measure_offline([k for k in kernels if k == "attention"] or ["attention"])
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "compile_time_offline.json").write_text(json.dumps(results, indent=1))
        return 0
    print("compile time in fresh processes (cold: empty caches; warm: the caches the cold run filled):")
    measure_all(args.out, kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
