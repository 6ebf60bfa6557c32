#!/usr/bin/env python
"""A/B of one code-generation switch per point on the row kernels: ours as built by default ("on"), ours with the
point's switch set (the same source loaded as a second module, built while the switch is set, so both live in
one process) and Triton on the same source. Each point: results checked against Triton's, then `--rounds`
interleaved do_bench medians (L2 flushed), GB/s and the fraction of the copy ceiling measured in the same
process. Writes `switch_ab.json` after every point.

    python bench/switch_ab.py --out DIR [--rounds 3] [--sets packing,barriers]

Sets: `packing`, `packing_large` (analysis/program_packing.py off: TRANSPILER_PACK_PROGRAMS=0), `prefetch` (packed
programs folded into a persistent row loop with 64 bytes a thread ahead), `barriers` (a barrier before
every cross-warp reduction write of a loop: TRANSPILER_LOOP_REDUCTION_BARRIER=1), `row_loop` (the fold off:
TRANSPILER_ROW_LOOP=0).

Broken since the launch key holds the code-changing environment (transpiler/options.py): the "off" variant is
built under its switch, then timed without it, which launches the default build (found in session 7). Compare
variants one process each, as `bench/ring_ab.py` does.
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

SETS = {   # name -> (switch, its value in the variant compared, [(workload, dtype, shape)])
    "packing": ("TRANSPILER_PACK_PROGRAMS", "0", [
        ("softmax", "float16", (4096, 512)), ("softmax", "float32", (4096, 512)),
        ("softmax", "float16", (4096, 1024))]),
    "packing_large": ("TRANSPILER_PACK_PROGRAMS", "0", [
        ("softmax", "float16", (32768, 1024)), ("argmax", "float16", (32768, 1024))]),
    "prefetch": ("TRANSPILER_ROW_LOOP_BYTES", "64", [
        ("softmax", "float16", (32768, 1024)), ("argmax", "float16", (32768, 1024))]),
    "barriers": ("TRANSPILER_LOOP_REDUCTION_BARRIER", "1", [("softmax", "float16", (8192, 4096))]),
    "row_loop": ("TRANSPILER_ROW_LOOP", "0", [
        ("softmax", "float16", (8192, 4096)), ("softmax", "float16", (4096, 16384)),
        ("layernorm", "float16", (16384, 4096)), ("argmax", "float16", (32768, 1024))]),
}
SOURCES = {"softmax": (EXAMPLES / "softmax.py", "softmax"), "layernorm": (EXAMPLES / "layernorm.py", "layer_norm"),
           "argmax": (BENCH / "kernels.py", "row_argmax")}


def load_again(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _calls(wl, fns, torch, dtype, shape):
    """(calls per flavor, bytes moved) of one point."""
    x = torch.randn(shape, device="cuda", dtype=dtype)
    if wl == "layernorm":
        w = 1 + 0.5 * torch.randn(shape[1], device="cuda", dtype=dtype)
        b = 0.5 * torch.randn(shape[1], device="cuda", dtype=dtype)
        moved = 2 * x.numel() * x.element_size() + 2 * shape[1] * x.element_size() + 8 * shape[0]
        return {k: (lambda f=f: f(x, w, b)) for k, f in fns.items()}, moved
    moved = x.numel() * x.element_size() * (2 if wl == "softmax" else 1) + (4 * shape[0] if wl == "argmax" else 0)
    return {k: (lambda f=f: f(x)) for k, f in fns.items()}, moved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sets", default="packing,barriers")
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
    for set_name in args.sets.split(","):
        switch, value, points = SETS[set_name]
        for wl, dt, shape in points:
            path, fn_name = SOURCES[wl]
            fns = {"on": getattr(load(path, "ours"), fn_name),
                   "off": getattr(load_again(path, f"_ours_{set_name}_{path.stem}"), fn_name),
                   "triton": getattr(load(path, "triton"), fn_name)}
            calls, moved = _calls(wl, fns, torch, getattr(torch, dt), shape)
            os.environ[switch] = value
            try:
                ref = calls["off"]()                     # the compared variant is built while the switch is set
            finally:
                os.environ.pop(switch)
            got, expect = calls["on"](), calls["triton"]()
            errors = []
            for name, out in (("on", got), ("off", ref)):
                a, e = (out[0], expect[0]) if isinstance(out, tuple) else (out, expect)
                if not torch.allclose(a.float(), e.float(), rtol=2e-2, atol=2e-2):
                    errors.append(f"{name} differs from Triton")
            times = {k: [] for k in calls}
            for fn in calls.values():     # a round not kept: the first timings after a compile ran 10-70% slow
                ms(fn)
            for _ in range(args.rounds):
                for k, fn in calls.items():
                    times[k].append(ms(fn))
            row = {"set": set_name, "switch": f"{switch}={value}", "workload": wl, "dtype": dt,
                   "shape": "x".join(map(str, shape)), "bytes": moved, "errors": errors,
                   "times_ms": times}
            for k, t in times.items():
                row[f"{k}_gbs"] = moved / statistics.median(t) / 1e6
            row["on/off"] = row["on_gbs"] / row["off_gbs"]
            row["on/triton"], row["off/triton"] = row["on_gbs"] / row["triton_gbs"], row["off_gbs"] / row["triton_gbs"]
            row["on/copy"], row["off/copy"] = row["on_gbs"] / ceiling, row["off_gbs"] / ceiling
            rows.append(row)
            print(f"{set_name:8} {wl:9} {dt:8} {row['shape']:11} on {row['on_gbs']:6.0f} off {row['off_gbs']:6.0f} "
                  f"triton {row['triton_gbs']:6.0f}  on/off {row['on/off']:.3f} on/tri {row['on/triton']:.2f} "
                  f"off/tri {row['off/triton']:.2f} on/copy {row['on/copy']:.2f} {' '.join(errors)}", flush=True)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "switch_ab.json").write_text(json.dumps({"ceiling": ceiling, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
