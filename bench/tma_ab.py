#!/usr/bin/env python
"""TMA staging on the bench's matmul (bench/kernels.py, 128x128x32, 4 warps, 4 stages): ours, Triton on the same
source and torch (cuBLAS), interleaved rounds, do_bench medians; each result checked against torch first. Run it
once as is (the TMA ring) and once under TRANSPILER_TMA=0 (the cp.async ring) for the A/B: a process builds each
variant once, so the switch cannot change between launches of one process.

    python bench/tma_ab.py [--rounds 3] [--out results/tma_ab.json]
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
import triton.testing  # noqa: E402

from twins import load  # noqa: E402

SHAPES = [("float16", 4096), ("bfloat16", 4096), ("float16", 8192), ("bfloat16", 8192), ("float16", 2048)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--shapes", default=None, help="dtype:size,... (default: the five of SHAPES)")
    ap.add_argument("--config", default=None, help="JSON tile config for both compilers (default: the bench's)")
    args = ap.parse_args()
    shapes = [(d, int(n)) for d, n in (x.split(":") for x in args.shapes.split(","))] if args.shapes else SHAPES
    config = json.loads(args.config) if args.config else None
    path = Path(__file__).resolve().parent / "kernels.py"
    ours, theirs = load(path, "ours"), load(path, "triton")
    rows = []
    for dtype, s in shapes:
        a = torch.randn((s, s), device="cuda", dtype=getattr(torch, dtype))
        b = torch.randn((s, s), device="cuda", dtype=getattr(torch, dtype)) / s ** 0.5
        ref = torch.matmul(a, b)
        outs = {k: torch.empty_like(ref) for k in ("ours", "triton")}
        impls = {"ours": lambda: ours.matmul(a, b, out=outs["ours"], config=config),
                 "triton": lambda: theirs.matmul(a, b, out=outs["triton"], config=config),
                 "torch": lambda: torch.matmul(a, b)}
        for name, fn in impls.items():
            fn()
            if name in outs:
                err = ((outs[name].float() - ref.float()).norm() / ref.float().norm()).item()
                assert err < 2e-2, f"{name} {dtype} {s}: relative error {err:.2e}"
        times = {k: [] for k in impls}
        for _ in range(args.rounds):
            for name, fn in impls.items():
                times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
        tflops = {k: 2 * s ** 3 / (statistics.median(v) * 1e-3) / 1e12 for k, v in times.items()}
        row = dict(tma=os.environ.get("TRANSPILER_TMA", "1"), in_flight=os.environ.get("TRANSPILER_TMA_IN_FLIGHT", "1"),
                   config=config, dtype=dtype, shape=s,
                   **{k: round(v, 1) for k, v in tflops.items()},
                   vs_triton=round(tflops["ours"] / tflops["triton"], 3),
                   vs_cublas=round(tflops["ours"] / tflops["torch"], 3))
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
