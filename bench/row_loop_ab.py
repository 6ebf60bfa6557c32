#!/usr/bin/env python
"""A/B of the row loop (analysis/row_loop.py) on the row kernels: ours folded, ours one row per program
(TRANSPILER_ROW_LOOP=0, the same source loaded as a second module so both live in one process), and Triton on the
same source. Each point: results checked against Triton's, then `--rounds` interleaved do_bench medians (L2
flushed), GB/s and the fraction of the copy ceiling measured in the same process. Writes `row_loop_ab.json`.

    python bench/row_loop_ab.py --out DIR [--rounds 3] [--quick]

Broken as bench/switch_ab.py is since the launch key holds the code-changing environment: the unfolded variant
is built under TRANSPILER_ROW_LOOP=0, then timed without it, which launches the default build. Its recorded
results (results/row_loop_ab_issue18.json) predate that key; compare variants one process each, as
`bench/ring_ab.py` does.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from twins import BENCH, EXAMPLES, load  # noqa: E402

POINTS = [   # (workload, dtype, shape)
    ("softmax", "float16", (8192, 4096)), ("softmax", "float16", (4096, 4096)), ("softmax", "float16", (4096, 16384)),
    ("softmax", "float16", (4096, 8192)), ("softmax", "float16", (32768, 1024)), ("softmax", "float32", (8192, 4096)),
    ("softmax", "float32", (4096, 2048)), ("layernorm", "float16", (4096, 12288)),
    ("layernorm", "float16", (16384, 4096)), ("layernorm", "float16", (8192, 8192)),
    ("argmax", "float16", (32768, 1024)), ("argmax", "float32", (32768, 1024)), ("argmax", "float16", (4096, 8192)),
]
QUICK = [0, 1, 5, 7, 8, 10, 11]
SOURCES = {"softmax": (EXAMPLES / "softmax.py", "softmax"), "layernorm": (EXAMPLES / "layernorm.py", "layer_norm"),
           "argmax": (BENCH / "kernels.py", "row_argmax")}


def load_again(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import torch
    from triton.testing import do_bench

    def ms(fn):
        return do_bench(fn, warmup=25, rep=100, return_mode="median")
    src = torch.randn(2**28, device="cuda")
    dst = torch.empty_like(src)
    ceiling = 2 * src.numel() * 4 / ms(lambda: dst.copy_(src)) / 1e6
    del src, dst
    print(f"copy ceiling {ceiling:.0f} GB/s", flush=True)
    rows = []
    for i, (wl, dt, shape) in enumerate(POINTS):
        if args.quick and i not in QUICK:
            continue
        path, fn_name = SOURCES[wl]
        on = getattr(load(path, "ours"), fn_name)
        off = getattr(load_again(path, f"_ours_off_{path.stem}"), fn_name)
        tri = getattr(load(path, "triton"), fn_name)
        dtype = getattr(torch, dt)
        x = torch.randn(shape, device="cuda", dtype=dtype)
        if wl == "layernorm":
            w, b = torch.randn(shape[1], device="cuda", dtype=dtype), torch.randn(shape[1], device="cuda", dtype=dtype)
            calls = {k: (lambda f=f: f(x, w, b)) for k, f in (("on", on), ("off", off), ("triton", tri))}
            moved = 2 * x.numel() * x.element_size() + 2 * shape[1] * x.element_size() + 8 * shape[0]
        else:
            calls = {k: (lambda f=f: f(x)) for k, f in (("on", on), ("off", off), ("triton", tri))}
            moved = x.numel() * x.element_size() * (2 if wl == "softmax" else 1) + (4 * shape[0] if wl == "argmax" else 0)
        os.environ["TRANSPILER_ROW_LOOP"] = "0"
        ref = calls["off"]()                     # the off variant is built while the switch says 0
        os.environ["TRANSPILER_ROW_LOOP"] = "1"
        got = calls["on"]()
        expect = calls["triton"]()
        errors = []
        for name, out in (("on", got), ("off", ref)):
            a, e = (out[0], expect[0]) if isinstance(out, tuple) else (out, expect)
            if not torch.allclose(a.float(), e.float(), rtol=2e-2, atol=2e-2):
                errors.append(f"{name} differs from Triton")
        times = {k: [] for k in calls}
        for _ in range(args.rounds):
            for k, fn in calls.items():
                times[k].append(ms(fn))
        row = {"workload": wl, "dtype": dt, "shape": "x".join(map(str, shape)), "bytes": moved, "errors": errors}
        for k, t in times.items():
            row[f"{k}_gbs"] = moved / statistics.median(t) / 1e6
        row["on/triton"] = row["on_gbs"] / row["triton_gbs"]
        row["off/triton"] = row["off_gbs"] / row["triton_gbs"]
        row["on/copy"], row["triton/copy"] = row["on_gbs"] / ceiling, row["triton_gbs"] / ceiling
        rows.append(row)
        print(f"{wl:9} {dt:8} {row['shape']:11} fold {row['on_gbs']:6.0f} off {row['off_gbs']:6.0f} triton "
              f"{row['triton_gbs']:6.0f}  fold/tri {row['on/triton']:.2f} off/tri {row['off/triton']:.2f} "
              f"fold/copy {row['on/copy']:.2f} {' '.join(errors)}", flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "row_loop_ab.json").write_text(json.dumps({"ceiling": ceiling, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
