#!/usr/bin/env python
"""What a memory-bound bench point's time is made of (issue 18, session 9): the kernel, or the call around it.

For the points a `bench/run.py` run missed a target on (read from its bench.json: >= 64 MiB and under 0.90 of the
copy ceiling, softmax/layernorm large shapes under 0.95, or under 1.0x Triton), the same cases as the bench
(`bench/run.py`'s workloads) plus two copies of the point's own bytes: `memcpy` (torch `copy_` of bytes, as the
bench's o/cpB) and `copy_kernel` (a plain Triton 1-D copy, 16-byte accesses: a kernel ncu can profile).

    python bench/membound_probe.py --bench DIR/bench.json --out DIR --time      (timings, probe.json)
    ncu ... python bench/membound_probe.py --bench DIR/bench.json --profile      (one launch each, for ncu)

`--time`, per point and implementation (ms per call):
- `do_bench`: triton.testing.do_bench median, L2 flushed by a 256 MB memset before each call (the bench's timer);
- `read_flush`: CUDA events around one call after an L2 flush by *reading* 256 MB (a clean L2, no dirty lines
  to write back while the call runs);
- `no_flush`: events around one call, nothing before it but the previous call;
- `stream_N`: N calls back to back between two events, divided by N (the GPU's steady rate: launch gaps hidden
  behind the queue, no flush);
- `graph_N`: the same N calls captured in one CUDA graph, replayed, divided by N (where capture works).
The differences tell the fixed cost per call (launch gap, flush write-back) from the kernel's own time.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (bench/run.py: its workloads and cases)

MIB64 = 64 * 2**20
LARGE = {("softmax", "8192x4096"), ("softmax", "4096x16384"), ("softmax", "32768x1024"),
         ("layernorm", "16384x4096"), ("layernorm", "8192x8192"), ("layernorm", "4096x12288")}


def misses(rows, limit):
    """The rows missing a target, worst first: (workload, dtype, shape label, why)."""
    out = []
    for r in rows:
        if r.get("unit") != "GB/s" or not r.get("ours"):
            continue
        why, score = [], 1.0
        big = (r.get("bytes") or 0) >= MIB64
        oc, ot = r.get("ours/copy") or 0, r.get("ours/triton") or 0
        if big and oc < 0.90:
            why.append(f"{oc:.2f} of ceiling")
            score = min(score, oc / 0.90)
        if (r["workload"], r["shape"].split(" ")[0]) in LARGE and oc < 0.95:
            why.append(f"{oc:.2f} < 0.95 (large shape)")
            score = min(score, oc / 0.95)
        if ot and ot < 1.0:
            why.append(f"{ot:.2f}x Triton")
            score = min(score, ot)
        if why:
            out.append((score, r["workload"], r["dtype"], r["shape"], "; ".join(why)))
    out.sort()
    chosen, seen = [], set()
    for o in out:                   # bf16 runs the fp16 point's kernel: one of the two is enough
        key = (o[1], "16" if o[2] in ("fp16", "bf16") else o[2], o[3])
        if key not in seen and len(chosen) < limit:
            seen.add(key)
            chosen.append(o[1:])
    return chosen


def find_point(name, dtype, label):
    wl = bench.WORKLOADS[name]
    for p in wl.points(False):
        if bench.SHORT[p.dtype] == dtype and wl.label(p) == label:
            return wl, p
    raise KeyError((name, dtype, label))


def copy_impls(torch, nbytes):
    """Two copies of `nbytes` (read + written): torch's memcpy and a plain Triton copy kernel."""
    import triton
    import triton.language as tl

    @triton.jit
    def plain_copy_kernel(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(Y + offs, tl.load(X + offs, mask=mask), mask=mask)

    words = max(nbytes // 2 // 16 * 4, 4)            # int32 words read (= written)
    src = torch.empty(words, dtype=torch.int32, device="cuda").random_()
    dst, dst2 = torch.empty_like(src), torch.empty_like(src)
    block = 4096
    grid = (triton.cdiv(words, block),)
    return {"memcpy": lambda: dst.copy_(src),
            "copy_kernel": lambda: plain_copy_kernel[grid](src, dst2, words, BLOCK=block, num_warps=8)}, 8 * words


def time_modes(torch, fn, n_stream=40):
    from triton.testing import do_bench
    res = {"do_bench": do_bench(fn, warmup=10, rep=40, return_mode="median")}
    flush = torch.empty(64 * 2**20, dtype=torch.int32, device="cuda")      # 256 MB
    flush.fill_(1)
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731

    def single(before, reps=15):
        times = []
        for _ in range(reps):
            if before:
                before()
            s, e = ev(), ev()
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)
    sink = torch.empty(1, device="cuda", dtype=torch.int64)
    res["read_flush"] = single(lambda: sink.copy_(flush.sum()))
    res["memset_flush"] = single(lambda: flush.zero_())
    res["no_flush"] = single(None)
    for _ in range(3):
        fn()
    s, e = ev(), ev()
    s.record()
    for _ in range(n_stream):
        fn()
    e.record()
    e.synchronize()
    res[f"stream_{n_stream}"] = s.elapsed_time(e) / n_stream

    return res


def graph_ms(torch, fn, n_stream=40):
    """Per call of `n_stream` calls captured in one CUDA graph (None and the error where capture fails)."""
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    res = {}
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()                                     # warm on the capture stream
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n_stream):
                fn()
        g.replay()
        torch.cuda.synchronize()
        s, e = ev(), ev()
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        res["graph"] = s.elapsed_time(e) / n_stream
    except Exception as error:                       # our launcher may not capture: say so
        res["graph"] = None
        res["graph_error"] = f"{type(error).__name__}: {str(error)[:160]}"
        try:
            torch.cuda.synchronize()
        except Exception as later:
            res["graph_error"] += f"; then {type(later).__name__}"
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--extra", default="", help="workload/dtype/label;... always probed")
    args = ap.parse_args()
    import torch
    bench.torch = torch
    rows = json.loads(args.bench.read_text())["rows"]
    chosen = misses(rows, args.limit)
    for item in filter(None, args.extra.split(";")):
        name, dtype, label = item.split("/")
        if not any(c[:3] == (name, dtype, label) for c in chosen):
            chosen.append((name, dtype, label, "extra"))
    print("probed:", *[" ".join(c) for c in chosen], sep="\n  ", flush=True)
    results, impl_sets = [], []
    twins_cache = {}
    for name, dtype, label, why in chosen:
        wl, point = find_point(name, dtype, label)
        if wl.source not in twins_cache:
            twins_cache[wl.source] = bench.load_twins(wl.source)
        case = wl.make(twins_cache[wl.source], point)
        impls = {k: case.impls[k] for k in ("ours", "triton") if k in case.impls}
        copies, copy_bytes = copy_impls(torch, case.bytes)
        impls.update(copies)
        if args.profile:
            for k in ("ours", "triton", "copy_kernel"):
                impls[k]()
                torch.cuda.synchronize()
                print(f"[profile] {name} {dtype} {label}: launched {k}", flush=True)
            continue
        t0 = time.time()
        row = {"workload": name, "dtype": dtype, "shape": label, "why": why, "bytes": case.bytes,
               "copy_bytes": copy_bytes, "ms": {}}
        for k, fn in impls.items():
            fn()
            torch.cuda.synchronize()
            row["ms"][k] = time_modes(torch, fn)
        results.append(row)
        line = [f"{name} {dtype} {label} ({case.bytes / 1e6:.0f} MB; {why}) [{time.time() - t0:.1f}s]"]
        for k, m in row["ms"].items():
            nb = case.bytes if k in ("ours", "triton") else copy_bytes
            cells = " ".join(f"{mode}={v * 1e3:.1f}us/{nb / v / 1e6:.0f}GB/s" for mode, v in m.items()
                             if isinstance(v, float))
            line.append(f"    {k:11} {cells} {m.get('graph_error', '')}")
        print("\n".join(line), flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "probe.json").write_text(json.dumps(results, indent=1))
        impl_sets.append(impls)
    # CUDA graphs last, each saved as it comes: a launch that refuses capture must not cost the timings above.
    for row, impls in zip(results, impl_sets):
        for k, fn in impls.items():
            g = graph_ms(torch, fn)
            row["ms"][k].update({"graph_40": g.get("graph")} | ({"graph_error": g["graph_error"]}
                                                                  if "graph_error" in g else {}))
            nb = row["bytes"] if k in ("ours", "triton") else row["copy_bytes"]
            print(f"graph {row['workload']} {row['dtype']} {row['shape']} {k:11} "
                  + (f"{g['graph'] * 1e3:.1f}us/{nb / g['graph'] / 1e6:.0f}GB/s" if g.get("graph") else
                     g.get("graph_error", "")), flush=True)
            (args.out / "probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
