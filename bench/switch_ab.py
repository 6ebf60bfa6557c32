#!/usr/bin/env python
"""A/B of code-generation switches and launch options on the row kernels (softmax, layernorm, row argmax): the one
A/B tool of the memory-bound kernels (it replaces `ring_ab.py` and `row_loop_ab.py`).

Each variant runs in a process of its own, its switches set before anything is imported: the launch key holds the
code-changing environment (transpiler/options.py), so a switch set around one call of a process either launches
the default build at every later call (the variant is never timed) or sends every call down the slow host path
(a launch slower than do_bench's L2 flush shows in the GPU time): both happened in sessions 6 and 7. A variant may
also change a launch option (`warps`: the num_warps of ours and of Triton's twin both, as a user could write it).

Per point, in each variant's process: ours and Triton launched on the same source, ours checked against Triton,
a warm-up, then `--rounds` interleaved do_bench medians (L2 flushed), GB/s, the fraction of the copy ceiling
measured in that process, ours/Triton, the blocks and threads ours launched. Each process writes
`ab_<variant>.json` after every point; the parent then prints one table (each variant against the first one)
and writes `ab.json`.

    python bench/switch_ab.py --out DIR [--variants default,launched_warps] [--points all|NAME,...] [--rounds 2]
    python bench/switch_ab.py --list          (the variants and points)
    ncu ... python bench/switch_ab.py --out DIR --variant V --profile [--points ...]
        (one launch of ours per point at its own num_warps, then one at the variant's if that differs: for ncu)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass(frozen=True)
class Variant:
    doc: str
    env: dict = field(default_factory=dict)
    warps: object = None        # None: each point's own num_warps; else a function of it (ours and Triton's)


VARIANTS = {
    "default": Variant("ours as built by default"),
    "launched_warps": Variant("every program on the launch's num_warps (analysis/program_warps.py off)",
                              {"TRANSPILER_PROGRAM_WARPS": "0"}),
    "warps_64": Variant("fewer warps down to 64 bytes a thread of the widest row",
                        {"TRANSPILER_PROGRAM_WARPS": "64"}),
    "launched_half_warps": Variant("num_warps halved at launch, program_warps.py off (for ncu: both warps)",
                                   {"TRANSPILER_PROGRAM_WARPS": "0"}, warps=lambda w: max(1, w // 2)),
    "ring": Variant("rows over 16 bytes a thread ahead in a shared-memory ring", {"TRANSPILER_ROW_RING": "1"}),
    "ring_all": Variant("every eligible row in the ring, one wave always",
                        {"TRANSPILER_ROW_RING": "2", "TRANSPILER_ROW_RING_WAVES": "0"}),
    "no_row_loop": Variant("one row per program, no persistent row loop", {"TRANSPILER_ROW_LOOP": "0"}),
    "unpacked": Variant("one program per block, never one warp each", {"TRANSPILER_PACK_PROGRAMS": "0"}),
    "loop_barriers": Variant("a barrier before every cross-warp reduction write of a loop",
                             {"TRANSPILER_LOOP_REDUCTION_BARRIER": "1"}),
    "prefix_mask": Variant("a run under a prefix mask tested on its last lane (analysis/mask_runs.py)",
                           {"TRANSPILER_PREFIX_MASK": "1"}),
    "packed_rows": Variant("16-bit rows held as loaded words across cross-warp reductions, tails run by runs "
                           "(analysis/packed_rows.py)", {"TRANSPILER_PACKED_ROWS": "1"}),
    "half_warps": Variant("num_warps halved at launch (ours and Triton)", warps=lambda w: max(1, w // 2)),
    "double_warps": Variant("num_warps doubled at launch (ours and Triton): fewer registers a thread for long rows",
                            warps=lambda w: min(32, 2 * w)),
}

POINTS = [   # (workload, dtype, rows, columns[, row stride in elements: the columns when left out])
    ("softmax", "float16", 8192, 4096), ("softmax", "bfloat16", 8192, 4096), ("layernorm", "float16", 16384, 4096),
    ("layernorm", "bfloat16", 8192, 8192), ("softmax", "float32", 8192, 4096), ("softmax", "float32", 4096, 1024),
    ("softmax", "float16", 4096, 4096), ("softmax", "float16", 4096, 8192), ("softmax", "float16", 32768, 1024),
    ("argmax", "float16", 32768, 1024), ("argmax", "float32", 32768, 1024), ("layernorm", "float16", 4096, 12288),
    ("softmax", "float16", 32768, 4093, 4096), ("softmax", "float32", 32768, 4093, 4096),
    ("layernorm", "bfloat16", 4096, 12288), ("layernorm", "float16", 8192, 8192), ("layernorm", "float16", 4096, 1024),
    ("softmax", "float16", 4096, 16384),
]


def label(point):
    wl, dt, rows, cols, *stride = point
    return f"{wl}_{dt}_{rows}x{cols}" + (f"_stride{stride[0]}" if stride else "")


def _next_pow2(n):
    return 1 << (n - 1).bit_length()


def default_warps(wl, block):
    """The examples' own rules (examples/softmax.py, examples/layernorm.py, bench/kernels.py)."""
    if wl in ("layernorm", "argmax"):
        return min(max(block // 256, 1), 8)
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _launches(point, modules, torch, warps_rule):
    """(name -> a call launching that flavour's kernel directly with the variant's num_warps, bytes moved, warps,
    name -> the call's output to compare)."""
    wl, dt, rows, cols, *pitch = point
    stride = pitch[0] if pitch else cols
    dtype = getattr(torch, dt)
    x = torch.randn((rows, stride), device="cuda", dtype=dtype)[:, :cols]
    block = _next_pow2(cols)
    warps = default_warps(wl, block)
    warps = warps_rule(warps) if warps_rule else warps
    calls, outs = {}, {}

    def rows_like_x():                          # an output with x's row stride, as bench/run.py's
        return torch.empty((rows, stride), device="cuda", dtype=dtype)[:, :cols]
    for name, mod in modules.items():
        if wl == "softmax":
            y = rows_like_x()
            calls[name] = (lambda k=mod.softmax_kernel, y=y: k[(rows,)](y, x, stride, stride, cols, BLOCK=block,
                                                                         num_warps=warps))
            outs[name] = y
        elif wl == "layernorm":
            if "w" not in outs:
                outs["w"] = 1 + 0.5 * torch.randn(cols, device="cuda", dtype=dtype)
                outs["b"] = 0.5 * torch.randn(cols, device="cuda", dtype=dtype)
            w, b = outs["w"], outs["b"]
            y = rows_like_x()
            mean, rstd = (torch.empty(rows, device="cuda", dtype=torch.float32) for _ in range(2))
            calls[name] = (lambda k=mod.layernorm_kernel, y=y, mean=mean, rstd=rstd: k[(rows,)](
                x, y, w, b, mean, rstd, stride, stride, cols, 1e-5, BLOCK=block, num_warps=warps))
            outs[name] = y
        else:
            y = torch.empty(rows, device="cuda", dtype=torch.int32)
            calls[name] = (lambda k=mod.argmax_kernel, y=y: k[(rows,)](x, y, cols, stride, BLOCK=block,
                                                                        num_warps=warps))  # (x, out, n, stride)
            outs[name] = y
    element = x.element_size()
    moved = {"softmax": 2 * rows * cols * element, "layernorm": 2 * rows * cols * element + 2 * cols * element
             + 8 * rows, "argmax": rows * cols * element + 4 * rows}[wl]
    return calls, moved, warps, outs


def profile_variant(args, variant):
    """One launch of ours per point at the point's own num_warps, then one at the variant's (for ncu); prints
    what each launched."""
    import torch

    from transpiler.runtime import launcher
    from twins import BENCH, EXAMPLES
    paths = {"softmax": EXAMPLES / "softmax.py", "layernorm": EXAMPLES / "layernorm.py", "argmax": BENCH / "kernels.py"}
    wanted = None if args.points == "all" else set(args.points.split(","))
    for n, point in enumerate(POINTS):
        if wanted and label(point) not in wanted:
            continue
        rules = [None] + ([variant.warps] if variant.warps else [])
        for i, rule in enumerate(rules):
            module = _module(paths[point[0]], f"_ab_profile_{n}_{i}")
            calls, _, warps, _ = _launches(point, {"ours": module}, torch, rule)
            calls["ours"]()
            torch.cuda.synchronize()
            print(f"[{args.variant} profile] launch {label(point)} w{warps} grid {launcher.recent_launches[-1][1]}",
                  flush=True)


def copy_ceiling(torch, ms):
    """GB/s of a 1 GiB device-to-device copy (read + write), in this process."""
    src = torch.randn(2**28, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.numel() * 4 / ms(lambda: dst.copy_(src), 100) / 1e6


def same_bytes_copy(torch, ms, nbytes):
    """GB/s of a copy moving `nbytes` (read plus written), timed as the points are: a per-call fixed cost weighs
    on a 100 MB point as it does not on the 1 GiB copy (bench/run.py `same_bytes_copy_gbs`)."""
    src = torch.empty(max(nbytes // 2 // 16 * 16, 16), dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    return 2 * src.numel() / ms(lambda: dst.copy_(src), 60) / 1e6


def run_variant(args):
    variant = VARIANTS[args.variant]
    os.environ.update(variant.env)              # before anything is built
    if args.profile:
        return profile_variant(args, variant)
    import torch
    from triton.testing import do_bench

    from transpiler.runtime import launcher
    from twins import BENCH, EXAMPLES, load

    def ms(fn, rep):
        return do_bench(fn, warmup=10, rep=rep, return_mode="median")
    ceiling = copy_ceiling(torch, ms)
    print(f"[{args.variant}] copy ceiling {ceiling:.0f} GB/s ({variant.doc})", flush=True)
    paths = {"softmax": EXAMPLES / "softmax.py", "layernorm": EXAMPLES / "layernorm.py", "argmax": BENCH / "kernels.py"}
    wanted = None if args.points == "all" else set(args.points.split(","))
    rows = []
    for n, point in enumerate(POINTS):
        if wanted and label(point) not in wanted:
            continue
        t0 = time.time()
        wl = point[0]
        modules = {"ours": _module(paths[wl], f"_ab_ours_{n}"), "triton": load(paths[wl], "triton")}
        calls, moved, warps, outs = _launches(point, modules, torch, variant.warps)
        calls["ours"]()
        torch.cuda.synchronize()
        grid = launcher.recent_launches[-1][1]      # the blocks ours launched
        calls["triton"]()
        a, e = outs["ours"].float(), outs["triton"].float()
        ok = torch.equal(a, e) if wl == "argmax" else torch.allclose(a, e, rtol=2e-2, atol=2e-2)
        errors = [] if ok else ["differs from Triton"]
        for fn in calls.values():
            ms(fn, 20)                              # warm: the first timings after a compile run slow
        times = {k: [] for k in calls}
        for _ in range(args.rounds):
            for k, fn in calls.items():
                times[k].append(ms(fn, args.rep))
        row = {"variant": args.variant, "point": label(point), "warps": warps, "bytes": moved, "errors": errors,
               "times_ms": times, "ceiling": ceiling, "grid_x": grid}
        for k, t in times.items():
            row[f"{k}_gbs"] = moved / statistics.median(t) / 1e6
            row[f"{k}/copy"] = row[f"{k}_gbs"] / ceiling
        row["ours/triton"] = row["ours_gbs"] / row["triton_gbs"]
        row["copy_same_bytes_gbs"] = same_bytes_copy(torch, ms, moved)
        row["ours/copy_same_bytes"] = row["ours_gbs"] / row["copy_same_bytes_gbs"]
        rows.append(row)
        print(f"[{args.variant}] {label(point):28} w{warps:<2} ours {row['ours_gbs']:5.0f} ({row['ours/copy']:.2f} "
              f"of copy, {row['ours/triton']:.2f}x Triton) triton {row['triton_gbs']:5.0f} ({row['triton/copy']:.2f})"
              f" grid {grid}; {row['ours/copy_same_bytes']:.2f} of a copy of the same bytes [{time.time() - t0:.1f}s] "
              f"{' '.join(errors)}", flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"ab_{args.variant}.json").write_text(json.dumps({"ceiling": ceiling, "rows": rows}, indent=1))


def summarize(out, variants):
    """One table: per point, each variant's ours/copy and ours/Triton, and its time against the first variant."""
    results = {}
    for v in variants:
        path = out / f"ab_{v}.json"
        if path.exists():
            for row in json.loads(path.read_text())["rows"]:
                results.setdefault(row["point"], {})[v] = row
    print(f"\n{'point':28} " + " ".join(f"{v[:16]:>24}" for v in variants))
    for point, by in results.items():
        base = by.get(variants[0])
        cells = []
        for v in variants:
            r = by.get(v)
            if r is None:
                cells.append(f"{'-':>24}")
                continue
            rel = f" {r['ours_gbs'] / base['ours_gbs']:.3f}" if base else ""
            cells.append(f"{r['ours/copy']:.3f}c {r['ours/triton']:.2f}t{rel}{'!' if r['errors'] else ''}".rjust(24))
        print(f"{point:28} " + " ".join(cells))
    out.mkdir(parents=True, exist_ok=True)
    print("(per variant: ours/copy ceiling 'c', ours/Triton 't', ours against the first variant; '!' differs)")
    (out / "ab.json").write_text(json.dumps(results, indent=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--variants", default="default,launched_warps", help="one process each, in this order")
    ap.add_argument("--variant", help=argparse.SUPPRESS)          # the one this process times
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rep", type=int, default=60, help="do_bench's rep (ms) per timing")
    ap.add_argument("--points", default="all")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per variant process (the first: twice)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--profile", action="store_true", help="with --variant: one launch of ours per point, for ncu")
    args = ap.parse_args()
    if args.list:
        for name, v in VARIANTS.items():
            print(f"{name:16} {v.doc} {v.env or ''}")
        print("points:", ", ".join(map(label, POINTS)))
        return
    if args.out is None:
        ap.error("--out is required")
    if args.variant is not None:
        return run_variant(args)
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown} (--list)")
    for i, v in enumerate(variants):
        # the first process compiles Triton's kernels too (a cold cache): measured 9 s were not enough for one point
        limit = args.timeout * (2 if i == 0 else 1)
        try:
            subprocess.run([sys.executable, __file__, "--out", str(args.out), "--variant", v, "--rounds",
                            str(args.rounds), "--rep", str(args.rep), "--points", args.points], check=False,
                           timeout=limit)
        except subprocess.TimeoutExpired:
            print(f"[{v}] stopped after {limit:.0f} s", flush=True)
    summarize(args.out, variants)


if __name__ == "__main__":
    main()
