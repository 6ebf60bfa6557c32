#!/usr/bin/env python
"""The bench's matmul (bench/kernels.py, its per-shape configuration) in several code-generation settings at once,
against Triton on the same source and torch (cuBLAS): one process, interleaved rounds, do_bench medians, every
result checked against torch first.

Each setting (`--variants name=VAR=value+VAR=value,...`; `default` is the switches as they are) is a copy of the
kernel module loaded under a name of its own, built, checked and timed while the environment holds the setting:
the launch key holds the code-changing environment (transpiler/options.py), so a variant launched outside its
setting is the default build. (Until session 10 the timing ran outside it: every A/B of this script from
2026-12-01 14:39, commit 8405db6, on timed the default build under each variant's name; bench/NOTES.md.)

    python bench/hopper_ab.py [--shapes float16:1024x1024x1024,...] [--variants ...] [--rounds 3] [--out x.json]
    python bench/hopper_ab.py --shapes float16:16x8192x8192@5   # `@S`: num_stages S for every implementation
    python bench/hopper_ab.py --profile float16:2048x2048x2048   # one launch of each, for ncu
"""
import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
import triton.testing  # noqa: E402

from twins import load  # noqa: E402

KERNELS = Path(__file__).resolve().parent / "kernels.py"
SHAPES = ("float16:1024x1024x1024,bfloat16:1024x1024x1024,float16:2048x2048x2048,bfloat16:2048x2048x2048,"
          "float16:4096x4096x4096,bfloat16:4096x4096x4096,float16:8192x8192x512,float16:16x8192x8192")
VARIANTS = "default=,cp_async=TRANSPILER_TMA=0"


def parse_variants(text):
    out = {}
    if text == "none":
        return out
    for item in text.split(","):
        name, _, settings = item.partition("=")
        out[name] = dict(s.split("=", 1) for s in settings.split("+") if s)
    return out


@contextlib.contextmanager
def environment(settings):
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_copy(name):
    spec = importlib.util.spec_from_file_location(f"_ours_kernels_{name}", KERNELS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def parse_shape(text):
    """`dtype:MxNxK`, optionally `@S` (num_stages S instead of the configuration's): (dtype, (m, n, k), S or None)."""
    text, _, stages = text.partition("@")
    dtype, dims = text.split(":")
    return dtype, tuple(int(x) for x in dims.split("x")), int(stages) if stages else None


def config_of(module, m, n, k, stages):
    config = module.matmul_config(m, n, k)
    return dict(config, num_stages=stages) if stages else config


def build(variants, a, b, ref, stages=None):
    """name -> zero-argument callable, each variant built (and checked) under its own setting."""
    impls = {}
    m, k = a.shape
    n = b.shape[1]
    for name, settings in variants.items():
        module = load_copy(name)
        config = config_of(module, m, n, k, stages)
        c = torch.full_like(ref, float("nan"))
        with environment(settings):
            module.matmul(a, b, out=c, config=config)
        torch.cuda.synchronize()
        err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
        assert err < 2e-2, f"{name}: relative error {err:.2e}"
        impls[name] = (lambda m, c, cfg: lambda: m.matmul(a, b, out=c, config=cfg))(module, c, config)
    return impls


def setting_of(variants, name):
    """The environment `name` is timed under: its variant's setting (none for Triton and torch)."""
    return environment(variants.get(name, {}))


def watch_variants_made():
    """Count the kernel variants made from now on (runtime/build_events.py's "variant" event: an in-memory miss);
    the returned function stops counting and gives the count. Every variant was built and launched in `build`
    under its own setting, so a timing that makes one ran a build other than the one checked (the fault of this
    script's A/Bs from 8405db6 to 43a9fb8): the timing must make none."""
    from transpiler.runtime import build_events
    count = [0]

    def observe(event):
        if event.kind == "variant":
            count[0] += 1
    stop = build_events.subscribe(observe)

    def made():
        stop()
        return count[0]
    return made


def host_time_us(fn, n=200):
    """Wall time per call of `n` calls in a row, synchronised once: the launch rate the host sustains (a
    kernel shorter than this is launch-bound outside do_bench, whose cache flush hides the host)."""
    import time
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--variants", default=VARIANTS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", default=None, help="dtype:MxNxK,...: launch each variant and Triton once, no timing")
    ap.add_argument("--warm", action="store_true", help="only build (and check) the variants at each shape, or "
                    "Triton's with --variants none: run one such process per setting in parallel to fill the caches")
    args = ap.parse_args()
    variants = parse_variants(args.variants)
    theirs = load(KERNELS, "triton")
    rows = []
    for text in (args.profile or args.shapes).split(","):
        dtype, (m, n, k), stages = parse_shape(text)
        dt = getattr(torch, dtype)
        a = torch.randn((m, k), device="cuda", dtype=dt)
        b = torch.randn((k, n), device="cuda", dtype=dt) / k ** 0.5
        ref = torch.matmul(a, b)
        impls = build(variants, a, b, ref, stages)
        their_config = config_of(theirs, m, n, k, stages)
        if args.warm and variants:
            print(f"built {text}: {', '.join(impls)}", flush=True)
            continue
        c_t = torch.full_like(ref, float("nan"))
        theirs.matmul(a, b, out=c_t, config=their_config)
        err = ((c_t.float() - ref.float()).norm() / ref.float().norm()).item()
        assert err < 2e-2, f"triton: relative error {err:.2e}"
        impls["triton"] = lambda: theirs.matmul(a, b, out=c_t, config=their_config)
        if args.warm:
            print(f"built {text}: triton", flush=True)
            continue
        if args.profile:        # each built and launched once above: one profiled launch per implementation
            torch.cuda.synchronize()
            print(f"profiled {text}:", ", ".join(impls), flush=True)
            continue
        c_cublas = torch.empty_like(ref)
        impls["torch"] = lambda: torch.matmul(a, b, out=c_cublas)
        times = {name: [] for name in impls}
        made = watch_variants_made()
        for _ in range(args.rounds):
            for name, fn in impls.items():
                with setting_of(variants, name):
                    times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
        flop = 2 * m * n * k
        host_us = {}
        if flop < 2e10:          # small problems: is the host's launch path slower than the kernel?
            for name, fn in impls.items():
                with setting_of(variants, name):
                    host_us[name] = round(host_time_us(fn), 1)
        made = made()
        if made:       # a variant launched outside the setting it was built and checked under
            print(f"WARNING {text}: {made} variants made while timing: a timing ran another build", flush=True)
        tflops = {name: flop / (statistics.median(v) * 1e-3) / 1e12 for name, v in times.items()}
        spread = {name: round((max(v) - min(v)) / statistics.median(v), 3) for name, v in times.items()}
        row = dict(dtype=dtype, shape=f"{m}x{n}x{k}" + (f"@{stages}" if stages else ""), config=their_config,
                   tflops={name: round(v, 1) for name, v in tflops.items()},
                   vs_triton={name: round(v / tflops["triton"], 3) for name, v in tflops.items()},
                   spread=spread, host_us_per_launch=host_us, variants_made_while_timing=made)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out and rows:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    names = list(rows[0]["tflops"]) if rows else []
    print(f"{'shape':>24} " + " ".join(f"{n:>14}" for n in names))
    for r in rows:
        print(f"{r['dtype'][:4] + ' ' + r['shape']:>24} " +
              " ".join(f"{r['tflops'][n]:7.1f} {r['vs_triton'][n]:5.2f}x" for n in names))


if __name__ == "__main__":
    main()
