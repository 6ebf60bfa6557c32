#!/usr/bin/env python
"""A/B of the row ring (analysis/row_ring.py) on the row kernels, one process per variant: `default` (ours as
built by default), `regs` (TRANSPILER_ROW_RING=0: no ring, the register fold of session 6), `main` (also
TRANSPILER_LANE_COMBINE=0: the code main built before session 7), `ring_all` (every eligible row in the ring, one
wave always), `stream_stores` (the outputs stored evict-first: TRANSPILER_STREAM_STORES=1), each against Triton on the same source in the same process. One process per variant because the
launch key holds the code-changing environment (transpiler/options.py): a switch set around a call sends that
launch down the slow host path, which do_bench then partly times (measured: two variants compiling to the same
code 14% apart). Per point: ours checked against Triton, `--rounds` interleaved do_bench medians (L2 flushed),
GB/s, the fraction of the copy ceiling measured in the same process, ours/Triton, the blocks launched. Writes
`ring_ab_<variant>.json` after every point.

    python bench/ring_ab.py --out DIR [--each default,regs,main] [--rounds 2] [--points all|NAME,...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS = {"default": {}, "regs": {"TRANSPILER_ROW_RING": "0"}, "over16": {"TRANSPILER_ROW_RING": "1"},
            "main": {"TRANSPILER_ROW_RING": "0", "TRANSPILER_LANE_COMBINE": "0"},
            "ring_all": {"TRANSPILER_ROW_RING": "2", "TRANSPILER_ROW_RING_WAVES": "0"},
            "stream_stores": {"TRANSPILER_STREAM_STORES": "1"}}
POINTS = [("softmax", "float32", (4096, 1024)), ("softmax", "float32", (8192, 4096)),
          ("layernorm", "float16", (16384, 4096)), ("softmax", "float16", (8192, 4096)),
          ("softmax", "float16", (4096, 8192)), ("softmax", "float16", (4096, 4096)),
          ("softmax", "bfloat16", (8192, 4096))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--each", default="default", help="variants, one process each, in this order")
    ap.add_argument("--variant", help=argparse.SUPPRESS)          # the one this process times
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--points", default="all")
    args = ap.parse_args()
    if args.variant is None:
        for v in args.each.split(","):
            subprocess.run([sys.executable, __file__, "--out", str(args.out), "--variant", v, "--rounds",
                            str(args.rounds), "--points", args.points], check=False)
        return
    os.environ.update(VARIANTS[args.variant])          # before anything is built
    import torch
    from triton.testing import do_bench

    from switch_ab import SOURCES, _calls, load_again
    from transpiler.runtime import launcher
    from twins import load

    def ms(fn, rep=100):
        return do_bench(fn, warmup=25, rep=rep, return_mode="median")
    src = torch.randn(2**28, device="cuda")
    dst = torch.empty_like(src)
    ceiling = 2 * src.numel() * 4 / ms(lambda: dst.copy_(src)) / 1e6
    del src, dst
    print(f"[{args.variant}] copy ceiling {ceiling:.0f} GB/s", flush=True)
    wanted = None if args.points == "all" else set(args.points.split(","))
    rows = []
    for n, (wl, dt, shape) in enumerate(POINTS):
        label = f"{wl}_{dt}_{'x'.join(map(str, shape))}"
        if wanted and label not in wanted:
            continue
        t0 = time.time()
        path, fn_name = SOURCES[wl]
        fns = {"ours": getattr(load_again(path, f"_ring_ab_{n}"), fn_name),
               "triton": getattr(load(path, "triton"), fn_name)}
        calls, moved = _calls(wl, fns, torch, getattr(torch, dt), shape)
        out = calls["ours"]()
        torch.cuda.synchronize()
        grid = launcher.recent_launches[-1][1]            # the blocks ours launched
        expect = calls["triton"]()
        a, e = (out[0], expect[0]) if isinstance(out, tuple) else (out, expect)
        errors = [] if torch.allclose(a.float(), e.float(), rtol=2e-2, atol=2e-2) else ["differs from Triton"]
        for fn in calls.values():
            ms(fn, rep=20)                           # warm: the first timings after a compile run slow
        times = {k: [] for k in calls}
        for _ in range(args.rounds):
            for k, fn in calls.items():
                times[k].append(ms(fn))
        row = {"variant": args.variant, "workload": wl, "dtype": dt, "shape": "x".join(map(str, shape)),
               "bytes": moved, "errors": errors, "times_ms": times, "ceiling": ceiling, "grid_x": grid}
        for k, t in times.items():
            row[f"{k}_gbs"] = moved / statistics.median(t) / 1e6
            row[f"{k}/copy"] = row[f"{k}_gbs"] / ceiling
        row["ours/triton"] = row["ours_gbs"] / row["triton_gbs"]
        rows.append(row)
        print(f"[{args.variant}] {wl:9} {dt:8} {row['shape']:10} ours {row['ours_gbs']:5.0f} "
              f"({row['ours/copy']:.2f} of copy, {row['ours/triton']:.2f}x Triton) triton {row['triton_gbs']:5.0f} "
              f"grid {grid} [{time.time() - t0:.1f}s] {' '.join(errors)}", flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"ring_ab_{args.variant}.json").write_text(json.dumps({"ceiling": ceiling, "rows": rows},
                                                                          indent=1))


if __name__ == "__main__":
    main()
