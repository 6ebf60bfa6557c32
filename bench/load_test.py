#!/usr/bin/env python
"""Load test (H200): 16 threads x 2 CuPy streams each launch a mix of kernels for a given time, every result
checked, and the runtime must hold up: no specialization generated or compiled twice, caches bounded, host and
GPU memory flat.

    python bench/load_test.py [--duration 60] [--threads 16] [--out folder]

The mix: three kernels (an elementwise axpy at four block sizes, a masked row softmax, a column sum that goes
through shared memory) over sizes that are not multiples of the blocks, so each thread keeps hitting several
specializations at once, on both of its streams. Each launch's output is poisoned (NaN) on its stream before
the launch and compared with a float64 reference on the host after the stream is synchronised.

Counted by wrapping the build steps: variant builds (parse -> emission) per (kernel, key) and NVRTC runs per
(source, architecture): each must be 1. Sampled after warm-up and at the end: RSS (/proc/self/status),
GPU memory in use (cudaMemGetInfo) and CuPy's pool; launchers per kernel, the binder table, the grid-launch
table and the fault record (`launcher.recent_launches`) must not grow after warm-up. Kernel modules stay loaded
for the life of the process (a module is not unloaded when a Kernel object is dropped: a captured CUDA graph or
a launch still queued on a stream may use its function, and cuModuleUnload gives no way to wait for those);
what is loaded is bounded by the kernels and specializations a program has.

Which path launched: the compiled launcher's counts per kernel (`compiled_path_launches`, `handed_to_python` in
the timed window); where the compiled path is loaded, none of the window's launches may go to the Python path.

Exit status 0 when there were 0 wrong results, every count is 1, memory grew by less than the limits and the
compiled path (where loaded) took every launch of the timed window.
Writes `load_test.json` into --out (default $OUT) when given.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import transpiler  # noqa: E402
import transpiler.language as tl  # noqa: E402
from transpiler.runtime import build_events, launch_key, launcher  # noqa: E402

RSS_LIMIT_MB = 64
GPU_LIMIT_MB = 64


@transpiler.jit
def axpy(X, Y, OUT, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(OUT + offs, a * tl.load(X + offs, mask=mask) + tl.load(Y + offs, mask=mask), mask=mask)


@transpiler.jit
def softmax_rows(OUT, IN, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(IN + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(OUT + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@transpiler.jit
def column_sum(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    rows = tl.arange(0, BM)
    acc = tl.zeros((BN,), dtype=tl.float32)
    for start in range(0, M, BM):
        r = start + rows
        acc += tl.sum(tl.load(X + r[:, None] * N + cols[None, :], mask=(r[:, None] < M) & (cols[None, :] < N),
                              other=0.0), axis=0)
    tl.store(OUT + cols, acc, mask=cols < N)


def _jobs(rng):
    """(name, make inputs) of the mix: each returns (launch(stream, out), out, expected float64 array)."""
    import cupy

    def axpy_job(n, block):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        dx, dy = cupy.asarray(x), cupy.asarray(y)
        expected = 1.5 * x.astype(np.float64) + y
        return (lambda s, out: axpy[(transpiler.cdiv(n, block),)](dx, dy, out, 1.5, n, BLOCK=block, stream=s),
                cupy.empty(n, np.float32), expected, 1e-6)

    def softmax_job(rows, cols):
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        dx = cupy.asarray(x)
        block = 1 << (cols - 1).bit_length()
        return (lambda s, out: softmax_rows[(rows,)](out, dx, cols, cols, BLOCK=block, stream=s),
                cupy.empty((rows, cols), np.float32), e / e.sum(axis=1, keepdims=True), 1e-5)

    def colsum_job(m, n):
        x = rng.standard_normal((m, n)).astype(np.float32)
        dx = cupy.asarray(x)
        return (lambda s, out: column_sum[(transpiler.cdiv(n, 32),)](dx, out, m, n, BM=64, BN=32, num_warps=4,
                                                                     stream=s),
                cupy.empty(n, np.float32), x.astype(np.float64).sum(axis=0), 1e-4)

    return [("axpy", lambda: axpy_job(3001, 128)), ("axpy", lambda: axpy_job(10007, 256)),
            ("axpy", lambda: axpy_job(777, 512)), ("axpy", lambda: axpy_job(65537, 1024)),
            ("softmax", lambda: softmax_job(37, 100)), ("softmax", lambda: softmax_job(5, 1000)),
            ("column_sum", lambda: colsum_job(300, 70)), ("column_sum", lambda: colsum_job(1000, 33))]


class Counts:
    """Variant builds per (kernel, key) and NVRTC runs per (source, arch), counted from the build events
    (`runtime/build_events.py`)."""

    def __init__(self):
        self.builds = collections.Counter()
        self.nvrtc = collections.Counter()
        self.lock = threading.Lock()
        build_events.subscribe(self.count)

    def count(self, event):
        with self.lock:
            if event.kind == "variant":
                self.builds[(event.kernel.__name__, event.key, event.opts)] += 1
            elif event.kind == "nvrtc":
                self.nvrtc[(hash(event.source), event.arch, event.options)] += 1


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _sample():
    import cupy
    free, total = cupy.cuda.runtime.memGetInfo()
    return dict(rss_mb=round(_rss_mb(), 1), gpu_used_mb=round((total - free) / 2**20, 1),
                pool_mb=round(cupy.get_default_memory_pool().used_bytes() / 2**20, 1),
                launchers={k.__name__: len(k._launchers) for k in (axpy, softmax_rows, column_sum)},
                binders=len(launch_key._binders), grid_functions=sum(len(k._grid_launches)
                                                                     for k in (axpy, softmax_rows, column_sum)),
                recent_launches=len(launcher.recent_launches), compiled_path=_compiled_path_counts())


def _compiled_path_counts():
    """{kernel: launches the compiled C launcher made / handed to the Python path} (runtime/native_launch.py),
    None for a kernel without the compiled path: which path the load ran through."""
    out = {}
    for k in (axpy, softmax_rows, column_sum):
        table = k._native_table
        out[k.__name__] = dict(table.counts()) if table else None
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--streams", type=int, default=2, help="streams per thread")
    parser.add_argument("--out", default=os.environ.get("OUT"))
    args = parser.parse_args(argv)
    import cupy
    counts = Counts()
    stop = threading.Event()
    per_thread = [collections.Counter() for _ in range(args.threads)]     # launches checked, per kernel
    failures = []
    ready = threading.Barrier(args.threads + 1)

    def thread_main(index):
        rng = np.random.default_rng(index)
        cupy.cuda.Device(0).use()
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(args.streams)]
        jobs = [(name, make()) for name, make in _jobs(rng)]
        outs = {(j, s): jobs[j][1][1].copy() for j in range(len(jobs)) for s in range(len(streams))}
        ready.wait(timeout=300)
        try:
            loop(index, streams, jobs, outs)
        except Exception as e:                      # noqa: BLE001 (a thread that dies is a failure, said)
            failures.append(("error", index, sum(per_thread[index].values()), f"{type(e).__name__}: {e}"))

    def loop(index, streams, jobs, outs):
        stats = per_thread[index]
        i = 0
        while not stop.is_set():
            # every (job, stream) pair in turn: the stream advances once per pass over the jobs (i % len(streams)
            # alone is tied to the job when both counts are even)
            j, s = (i * 7 + index) % len(jobs), (i + i // len(jobs)) % len(streams)
            name, (run, _, expected, tol) = jobs[j]
            stream, out = streams[s], outs[(j, s)]
            with stream:
                out.fill(np.nan)
            run(stream, out)
            stream.synchronize()
            got = cupy.asnumpy(out).astype(np.float64)
            if not np.allclose(got, expected, rtol=tol, atol=tol):
                failures.append((name, index, i, float(np.nanmax(np.abs(got - expected)))))
            stats[name] += 1
            i += 1

    threads = [threading.Thread(target=thread_main, args=(i,), daemon=True) for i in range(args.threads)]
    for t in threads:
        t.start()
    ready.wait(timeout=300)
    # The warm-up: at least min(5 s, a quarter of the run), and until every thread has run each job of the mix
    # twice (every specialization built, so the timed window meets no first launch; at most 120 s).
    warmup, n_jobs = min(5.0, args.duration / 4), len(_jobs(None))     # (the jobs' inputs are made per thread)
    warmup_end, warmup_cap = time.monotonic() + warmup, time.monotonic() + 120
    while time.monotonic() < warmup_end or (
            min(sum(c.values()) for c in per_thread) < 2 * n_jobs and not failures
            and time.monotonic() < warmup_cap):
        time.sleep(0.1)
    start = _sample()
    t0, n0 = time.monotonic(), sum(sum(c.values()) for c in per_thread)
    time.sleep(max(0.0, args.duration - warmup))
    end = _sample()
    elapsed, launches = time.monotonic() - t0, sum(sum(c.values()) for c in per_thread) - n0
    stats = sum(per_thread, collections.Counter())
    stop.set()
    for t in threads:
        t.join(timeout=30)
    twice = {str(k): n for k, n in list(counts.builds.items()) + list(counts.nvrtc.items()) if n != 1}
    grew = {k: (start[k], end[k]) for k in ("launchers", "binders", "grid_functions") if end[k] != start[k]}
    rss_growth, gpu_growth = end["rss_mb"] - start["rss_mb"], end["gpu_used_mb"] - start["gpu_used_mb"]
    report = dict(threads=args.threads, streams_per_thread=args.streams, seconds=round(elapsed, 1),
                  launches_checked=launches, launches_per_s=round(launches / elapsed),
                  per_kernel=dict(stats), wrong_results=len(failures), first_wrong=failures[:5],
                  variant_builds=len(counts.builds), nvrtc_runs=len(counts.nvrtc), built_or_compiled_twice=twice,
                  caches_grew=grew, start=start, end=end, rss_growth_mb=round(rss_growth, 1),
                  gpu_growth_mb=round(gpu_growth, 1))
    window = {which: {name: c[which] - (start["compiled_path"][name] or {}).get(which, 0)
                      for name, c in end["compiled_path"].items() if c} for which in ("compiled", "handed_over")}
    report["compiled_path_launches"] = window["compiled"]   # in the timed window; absent kernels: Python path only
    report["handed_to_python"] = window["handed_over"]
    # After the warm-up every specialization has its launcher, so the compiled path, where it is loaded, takes
    # every launch of the mix (CuPy arrays, Python scalars, constexprs, an explicit CuPy stream).
    through_c = all(n == 0 for n in window["handed_over"].values())
    ok = (not failures and not twice and not grew and rss_growth < RSS_LIMIT_MB and gpu_growth < GPU_LIMIT_MB
          and end["recent_launches"] <= launcher.recent_launches.maxlen and launches > 0 and through_c)
    report["ok"] = ok
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "load_test.json").write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
