#!/usr/bin/env python
"""Time our transpiled kernels against Triton (compiled from the same source) and torch, on one GPU.

For every point of every workload, in one process: verify our output and Triton's against torch once, then
time torch, Triton and ours with `triton.testing.do_bench(warmup=25, rep=100, return_mode="median")` (CUDA
events with an L2 flush when Triton is missing), `--rounds` times interleaved (default 3), and report the
median of the rounds: single timings of one kernel vary by a few percent from run to run on this machine. The
device-to-device copy ceiling is measured in the same process, and each row reports ours against Triton, torch
and that ceiling. Inputs are fresh random data.

Kernel sources: `examples/*.py` and `bench/kernels.py`, each loaded twice by `bench/twins.py` (ours, and
Triton's with `transpiler` standing for Triton): same text, same host wrapper, same launch parameters.

Results go to `--out`: bench.json (rows + run metadata) and bench.csv after every point, bench.png (one
subplot per workload) at the end, and the table is printed last on stdout. A failure of one point or one
implementation is recorded in its row and the run goes on. A fault that leaves the CUDA context unusable
(an illegal address in a generated kernel, say) makes the script restart itself in a fresh process, which
keeps the rows already written and carries on with the next point.

    python bench/run.py --out results [--quick] [--only softmax,layernorm] [--budget-s 300] [--rounds 3]
    python bench/run.py --list
    python bench/run.py --table --out results     # an earlier run's table again (and its plot)
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from twins import BENCH, EXAMPLES, Twins, load_twins  # noqa: E402  (stdlib only: --help needs no GPU)
from _harness import ITEMSIZE  # noqa: E402  (examples/, put on sys.path by twins; NumPy only)

torch = None  # imported by main() once arguments are parsed, so that --help and --list need no GPU stack

DEVICE = "cuda"
MAX_RESTARTS = 8
SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
# Tolerances for the one-time check against torch: it catches wrong kernels, not last-bit differences
# (torch and Triton use different exp/division approximations).
CHECK_TOL = {"float32": (1e-4, 1e-5), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}
IMPLS = ("torch", "triton", "ours")  # timing order: ours last, so a fault in it loses nothing measured before


# ---- workloads ------------------------------------------------------------------------------------------------


@dataclass
class Point:
    """One measurement: element type, shape, and a variant name for points plotted as their own series."""

    dtype: str
    shape: tuple
    variant: str = ""


@dataclass
class Case:
    """One point made ready: callables per implementation (each writing its own outputs), sizes, checks."""

    impls: dict[str, Callable]
    bytes: int
    compare: Callable  # compare(output, reference) raises on a mismatch
    flops: int = 0
    reference: Callable | None = None  # what ours and Triton must match (default: impls["torch"])


@dataclass
class Workload:
    name: str
    source: Path
    points: Callable[[bool], list[Point]]  # quick -> points
    make: Callable[[Twins, Point], Case]
    label: Callable[[Point], str] = lambda p: "x".join(map(str, p.shape))
    unit: str = "GB/s"


WORKLOADS: dict[str, Workload] = {}


def workload(name, source, points, **options):
    def register(make):
        WORKLOADS[name] = Workload(name, source, points, make, **options)
        return make

    return register


def grid(dtypes, shapes, variant=""):
    return [Point(d, s, variant) for d in dtypes for s in shapes]


def randn(shape, dtype, scale=1.0):
    x = torch.randn(shape, device=DEVICE, dtype=getattr(torch, dtype))
    return x.mul_(scale) if scale != 1.0 else x


def flavors(twins: Twins, make_impl) -> dict[str, Callable]:
    """`make_impl(module)` for each flavor that loaded: each gets its own outputs from `make_impl`."""
    return {flavor: make_impl(module) for flavor in ("ours", "triton")
            if (module := getattr(twins, flavor)) is not None}


def close(dtype):
    rtol, atol = CHECK_TOL[dtype]

    def compare(out, ref):
        outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
        for o, r in zip(outs, refs):
            torch.testing.assert_close(o.float(), r.float(), rtol=rtol, atol=atol, equal_nan=False)

    return compare


def _vector_add_points(quick):
    if quick:
        return grid(["float32"], [(2**20,), (2**24,), (2**28,)]) + grid(["float16"], [(2**24,)])
    sizes = [(2**k,) for k in (20, 22, 24, 26, 28)]
    return grid(["float32", "float16"], sizes)


@workload("vector_add", EXAMPLES / "vector_add.py", _vector_add_points)
def vector_add_case(twins, p):
    (n,) = p.shape
    x, y = randn(n, p.dtype), randn(n, p.dtype)

    def impl(module):
        z = torch.empty_like(x)
        return lambda: module.add(x, y, out=z)

    z_torch = torch.empty_like(x)
    return Case({"torch": lambda: torch.add(x, y, out=z_torch), **flavors(twins, impl)},
                bytes=3 * n * ITEMSIZE[p.dtype], compare=close(p.dtype))


def _softmax_points(quick):
    shapes = [(4096, 512), (4096, 1024), (4096, 2048), (4096, 4096), (4096, 8192), (4096, 16384),
              (32768, 1024), (8192, 4096)]
    ragged = [(32768, 4093, 4096)]  # rows of 4093 in a buffer of 4096-wide rows
    if quick:
        return (grid(["float32"], [(4096, 1024), (8192, 4096), (4096, 16384)]) + grid(["float32"], ragged, "ragged")
                + grid(["float16", "bfloat16"], [(8192, 4096)]))
    dtypes = ["float32", "float16", "bfloat16"]
    return grid(dtypes, shapes) + grid(dtypes, ragged, "ragged")


def _softmax_label(p):
    m, n, *pitch = p.shape
    return f"{m}x{n}" + (f" stride {pitch[0]}" if pitch else "")


@workload("softmax", EXAMPLES / "softmax.py", _softmax_points, label=_softmax_label)
def softmax_case(twins, p):
    m, n, *pitch = p.shape
    width = pitch[0] if pitch else n
    x = randn((m, width), p.dtype, 3.0)[:, :n]

    def impl(module):
        y = torch.empty((m, width), device=DEVICE, dtype=x.dtype)[:, :n]
        return lambda: module.softmax(x, out=y)

    return Case({"torch": lambda: torch.softmax(x, dim=-1), **flavors(twins, impl)},
                bytes=2 * m * n * ITEMSIZE[p.dtype], compare=close(p.dtype))


def _layernorm_points(quick):
    if quick:
        return [Point("float16", (16384, 4096)), Point("bfloat16", (8192, 8192))]
    return grid(["float16", "bfloat16"], [(4096, 1024), (16384, 4096), (8192, 8192), (4096, 12288)])


@workload("layernorm", EXAMPLES / "layernorm.py", _layernorm_points)
def layernorm_case(twins, p, eps=1e-5):
    m, n = p.shape
    x, w, b = randn((m, n), p.dtype), 1 + randn(n, p.dtype, 0.5), randn(n, p.dtype, 0.5)
    F = torch.nn.functional

    def impl(module):
        out = (torch.empty_like(x), torch.empty(m, device=DEVICE), torch.empty(m, device=DEVICE))
        return lambda: module.layer_norm(x, w, b, eps, out=out)

    def reference():
        x32 = x.float()
        return F.layer_norm(x, (n,), w, b, eps), x32.mean(1), torch.rsqrt(x32.var(1, unbiased=False) + eps)

    def compare(out, ref):
        close(p.dtype)(out[0], ref[0])
        close("float32")(out[1:], ref[1:])

    item = ITEMSIZE[p.dtype]
    # Our kernel also writes Mean and Rstd (fp32); torch's inference layer_norm does not.
    return Case({"torch": lambda: F.layer_norm(x, (n,), w, b, eps), **flavors(twins, impl)},
                bytes=2 * m * n * item + 2 * n * item + 2 * m * 4, reference=reference, compare=compare)


def _giou_points(quick):
    if quick:
        return grid(["float32", "bfloat16"], [(4096, 4096)])
    return grid(["float32"], [(1024, 4096), (4096, 4096)]) + grid(["float16", "bfloat16"], [(4096, 4096)])


def torch_giou(pred, target, eps):
    """The same loss in eager torch, fp32 math: the baseline the blog post started from."""
    pl, pt, pr, pb = pred.float().unbind(-1)
    tl_, tt, tr, tb = target.float().unbind(-1)
    inter = ((torch.minimum(pr, tr) - torch.maximum(pl, tl_)).clamp(min=0)
             * (torch.minimum(pb, tb) - torch.maximum(pt, tt)).clamp(min=0))
    union = (pr - pl) * (pb - pt) + (tr - tl_) * (tb - tt) - inter
    enclose = (torch.maximum(pr, tr) - torch.minimum(pl, tl_)) * (torch.maximum(pb, tb) - torch.minimum(pt, tt))
    giou = inter / union.clamp(min=eps) - (enclose - union) / enclose.clamp(min=eps)
    valid = tb > 0
    return torch.where(valid, 1.0 - giou, 0.0), valid


@workload("giou_loss", EXAMPLES / "giou_loss.py", _giou_points, label=lambda p: f"{p.shape[0] * p.shape[1]} boxes")
def giou_case(twins, p):
    import numpy as np

    batch, n = p.shape
    example = twins.ours or twins.triton  # for its box generator and EPS, the same in both
    pred_host, target_host = example.random_boxes(np.random.default_rng(), batch, n)
    dtype = getattr(torch, p.dtype)
    pred, target = (torch.from_numpy(a).to(device=DEVICE, dtype=dtype) for a in (pred_host, target_host))

    def impl(module):
        out = (torch.empty((batch, n), device=DEVICE), torch.empty((batch, n), device=DEVICE, dtype=torch.bool))
        return lambda: module.giou_loss_per_box(pred, target, out=out)

    def compare(out, ref):
        close("float32")(out[0], ref[0])
        assert torch.equal(out[1], ref[1]), "valid flags differ"

    return Case({"torch": lambda: torch_giou(pred, target, example.EPS), **flavors(twins, impl)},
                bytes=batch * n * (2 * 4 * ITEMSIZE[p.dtype] + 4 + 1), compare=compare)


def _copy2d_points(quick):
    shapes = [(4096, 4000, 4096), (8192, 8000, 8192), (16384, 16000, 16384)]
    return grid(["float32"], shapes[1:2]) if quick else grid(["float32", "float16"], shapes)


@workload("copy2d", BENCH / "kernels.py", _copy2d_points,
          label=lambda p: f"{p.shape[0]}x{p.shape[1]} stride {p.shape[2]}")
def copy2d_case(twins, p):
    m, n, pitch = p.shape
    x = randn((m, pitch), p.dtype)[:, :n]

    def impl(module):
        y = torch.empty((m, n), device=DEVICE, dtype=x.dtype)
        return lambda: module.copy2d(x, out=y)

    y_torch = torch.empty((m, n), device=DEVICE, dtype=x.dtype)
    return Case({"torch": lambda: y_torch.copy_(x), **flavors(twins, impl)},
                bytes=2 * m * n * ITEMSIZE[p.dtype], compare=close(p.dtype))


def _transpose_points(quick):
    return grid(["float32"], [(8192, 8192)]) if quick else grid(["float32", "float16"],
                                                                [(4096, 4096), (8192, 8192), (16384, 4096)])


@workload("transpose", BENCH / "kernels.py", _transpose_points)
def transpose_case(twins, p):
    m, n = p.shape
    x = randn((m, n), p.dtype)

    def impl(module):
        y = torch.empty((n, m), device=DEVICE, dtype=x.dtype)
        return lambda: module.transpose(x, out=y)

    y_torch = torch.empty((n, m), device=DEVICE, dtype=x.dtype)
    return Case({"torch": lambda: y_torch.copy_(x.t()), **flavors(twins, impl)},
                bytes=2 * m * n * ITEMSIZE[p.dtype], compare=close(p.dtype))


def _argmax_points(quick):
    return grid(["float32"], [(32768, 1024)]) if quick else grid(["float32", "float16"],
                                                                 [(32768, 1024), (4096, 8192), (16384, 4000)])


@workload("argmax", BENCH / "kernels.py", _argmax_points)
def argmax_case(twins, p):
    m, n = p.shape
    x = randn((m, n), p.dtype)

    def impl(module):
        out = torch.empty(m, device=DEVICE, dtype=torch.int32)
        return lambda: module.row_argmax(x, out=out)

    def compare(out, ref):
        # Compare the values at the indices: fp16 rows can hold two equal maxima.
        picked, wanted = x.gather(1, out.long()[:, None]), x.gather(1, ref.long()[:, None])
        assert torch.equal(picked, wanted), f"{int((picked != wanted).sum())} rows have a wrong argmax"

    return Case({"torch": lambda: torch.argmax(x, dim=1), **flavors(twins, impl)},
                bytes=m * n * ITEMSIZE[p.dtype] + m * 4, compare=compare)


def _matmul_points(quick):
    square = [(s, s, s) for s in (1024, 2048, 4096, 8192)]
    skinny = [(8192, 8192, 512), (16, 8192, 8192)]
    if quick:
        return [Point("float16", (4096, 4096, 4096), "square"), Point("float16", (16, 8192, 8192), "skinny")]
    dtypes = ["float16", "bfloat16"]
    return grid(dtypes, square, "square") + grid(dtypes, skinny, "skinny")


@workload("matmul", BENCH / "kernels.py", _matmul_points, unit="TFLOP/s")
def matmul_case(twins, p):
    m, n, k = p.shape
    a, b = randn((m, k), p.dtype), randn((k, n), p.dtype, 1 / math.sqrt(k))  # outputs of order 1

    def impl(module):
        c = torch.empty((m, n), device=DEVICE, dtype=a.dtype)
        return lambda: module.matmul(a, b, out=c)

    c_torch = torch.empty((m, n), device=DEVICE, dtype=a.dtype)
    impls = {"torch": lambda: torch.matmul(a, b, out=c_torch), **flavors(twins, impl)}
    if twins.ours is not None and not hasattr(twins.ours.tl, "dot"):
        impls.pop("ours")
        twins.errors["ours"] = "transpiler.language has no dot yet"
    return Case(impls, bytes=(m * k + k * n + m * n) * ITEMSIZE[p.dtype], flops=2 * m * n * k,
                compare=close(p.dtype))


def _attention_points(quick):
    """[batch, heads, seq, head_dim] with batch * seq = 16384 tokens (FlashAttention's benchmark shapes) and
    heads * head_dim = 4096, causal and not; issue 12's B4 H32 S4096 D128 first (a time budget keeps it)."""
    first = (4, 32, 4096, 128)
    shapes = [first] + [(16384 // s, 4096 // d, s, d) for d in (128, 64) for s in (1024, 4096, 16384)
                        if (16384 // s, 4096 // d, s, d) != first]
    if quick:
        shapes = [first]
    points = [Point("float16", sh, v) for sh in shapes for v in ("full", "causal")]
    return points + ([] if quick else [Point("bfloat16", first, v) for v in ("full", "causal")])


def _attention_label(p):
    z, h, n, d = p.shape
    return f"B{z} H{h} S{n} D{d}"


@workload("attention", EXAMPLES / "attention.py", _attention_points, label=_attention_label, unit="TFLOP/s")
def attention_case(twins, p):
    causal = p.variant == "causal"
    q, k, v = (randn(p.shape, p.dtype) for _ in range(3))

    def impl(module):
        out = torch.empty_like(q)
        return lambda: module.attention(q, k, v, out=out, causal=causal)

    sdpa = torch.nn.functional.scaled_dot_product_attention
    z, h, n, d = p.shape
    return Case({"torch": lambda: sdpa(q, k, v, is_causal=causal), **flavors(twins, impl)},
                bytes=4 * q.numel() * ITEMSIZE[p.dtype], flops=4 * z * h * n * n * d // (2 if causal else 1),
                compare=close(p.dtype))


# ---- timing ---------------------------------------------------------------------------------------------------


def make_timer():
    """`ms(fn)`: Triton's do_bench when Triton imports, else CUDA events with the same flush and budgets."""
    try:
        from triton.testing import do_bench
    except Exception:
        do_bench = None
    if do_bench is not None:
        return lambda fn: do_bench(fn, warmup=25, rep=100, return_mode="median")
    return events_ms


def events_ms(fn, warmup_ms=25, rep_ms=100):
    """Median of per-call CUDA event times; each call starts with a cold L2, as in do_bench."""
    flush = torch.empty(256 * 2**20, dtype=torch.int8, device=DEVICE)
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate))):
        fn()
    n = max(5, int(rep_ms / estimate))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def copy_ceiling_gbs(timer) -> float:
    """Device-to-device copy of 1 GiB (2^28 fp32), counting bytes read plus written."""
    src = torch.randn(2**28, device=DEVICE)
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / ms / 1e6


_SAME_BYTES_COPY = {}     # bytes copied -> GB/s


def same_bytes_copy_gbs(timer, nbytes: int) -> float:
    """GB/s of a device-to-device copy moving `nbytes` (read plus written), timed as the points are: the ceiling a
    kernel of that size can reach here. A call pays a fixed cost besides its bytes (measured: do_bench's time of a
    full-grid row kernel was ~6 us over ncu's duration of it), which weighs on a 64-270 MB point as it does not on
    the 1 GiB copy of `copy_ceiling_gbs` (bench/NOTES.md, issue 18 session 8). Measured once per size."""
    half = max(nbytes // 2 // 16 * 16, 16)
    if half not in _SAME_BYTES_COPY:
        src = torch.empty(half, dtype=torch.uint8, device=DEVICE).random_()
        dst = torch.empty_like(src)
        _SAME_BYTES_COPY[half] = 2 * half / timer(lambda: dst.copy_(src)) / 1e6
        del src, dst
    return _SAME_BYTES_COPY[half]


# ---- running points -------------------------------------------------------------------------------------------


def short_error(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip().replace("\n", " | ")
    return text if len(text) <= 400 else text[:397] + "..."


def clone(out):
    return tuple(clone(o) for o in out) if isinstance(out, tuple) else out.clone()


def run_point(wl: Workload, twins: Twins, point: Point, timer, ceiling: float, rounds: int = 1) -> dict:
    """Check and time every implementation at one point; never raises, errors go into the row."""
    row = {"workload": wl.name, "dtype": SHORT[point.dtype], "shape": wl.label(point), "variant": point.variant,
           "unit": wl.unit, "bytes": None, "flops": None, "errors": {}}
    try:
        case = wl.make(twins, point)
    except Exception as error:
        row["errors"]["setup"] = short_error(error)
        return row
    row["bytes"], row["flops"] = case.bytes, case.flops or None
    work = case.flops if wl.unit == "TFLOP/s" else case.bytes  # per ms -> divide by 1e9 or 1e6 below
    scale = 1e9 if wl.unit == "TFLOP/s" else 1e6
    try:
        reference = clone((case.reference or case.impls["torch"])())
    except Exception as error:
        row["errors"]["reference"] = short_error(error)
        reference = None
    timed = {}
    for impl in IMPLS:
        fn = case.impls.get(impl)
        if fn is None:
            row["errors"][impl] = twins.errors.get(impl, "not available")
            continue
        try:
            if impl != "torch" and reference is not None:
                case.compare(fn(), reference)
            timed[impl] = fn
        except Exception as error:
            row["errors"][impl] = short_error(error)
    # Rounds interleave the implementations, so a slow stretch of the machine hits all of them alike; the
    # median over rounds of each one's median is what the ratios use.
    times = {impl: [] for impl in timed}
    for _ in range(rounds):
        for impl, fn in timed.items():
            if impl in row["errors"]:
                continue
            try:
                times[impl].append(timer(fn))
            except Exception as error:
                row["errors"][impl] = short_error(error)
    for impl, ms_list in times.items():
        if ms_list and impl not in row["errors"]:
            ms = statistics.median(ms_list)
            row[f"{impl}_ms"] = ms
            row[f"{impl}_ms_rounds"] = ms_list
            row[impl] = work / ms / scale
    ours = row.get("ours")
    for other in ("triton", "torch"):
        row[f"ours/{other}"] = ours / row[other] if ours and row.get(other) else None
    same = same_bytes_copy_gbs(timer, case.bytes) if wl.unit == "GB/s" and case.bytes and timed else None
    row["copy_same_bytes"] = same
    for impl in ("ours", "triton"):     # each one's fraction of the copy ceiling, beside the ratio
        value = row.get(impl)
        row[f"{impl}/copy"] = value / ceiling if value and wl.unit == "GB/s" else None
        row[f"{impl}/copy_same_bytes"] = value / same if value and same else None
    return row


def cuda_context_ok() -> bool:
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device=DEVICE).add_(1).item() == 2
    except Exception:
        return False


def row_key(row) -> tuple:
    return row["workload"], row["dtype"], row["shape"]


# ---- results --------------------------------------------------------------------------------------------------

CSV_COLUMNS = ["workload", "dtype", "shape", "variant", "unit", "bytes", "flops", "ours", "triton", "torch",
               "ours/triton", "ours/torch", "ours/copy", "triton/copy", "copy_same_bytes", "ours/copy_same_bytes",
               "triton/copy_same_bytes", "ours_ms", "triton_ms", "torch_ms", "errors"]


def write_results(out: Path, meta: dict, rows: list[dict]):
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    with open(out / "bench.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "errors": "; ".join(f"{k}: {v}" for k, v in row["errors"].items())})


def load_results(out: Path) -> tuple[dict, list[dict]]:
    path = out / "bench.json"
    if not path.exists():
        return {}, []
    data = json.loads(path.read_text())
    return data["meta"], data["rows"]


def _fmt(value, digits=0):
    return "-" if value is None else f"{value:.{digits}f}"


LARGE_BYTES = 64 << 20   # issue 18's targets: points moving this much should run at >= 0.90 of the copy ceiling


def format_table(meta: dict, rows: list[dict]) -> str:
    """The compact table printed at the end of stdout (the part of the output that comes back)."""
    head = f"{'workload':10} {'dt':4} {'shape':24} {'MB':>6} {'ours':>7} {'triton':>7} {'torch':>7} " \
           f"{'o/tri':>5} {'o/trc':>5} {'o/cpy':>5} {'t/cpy':>5} {'o/cpB':>5}"
    lines = [head, "-" * len(head)]
    for r in rows:
        size = r["bytes"] / 1e6 if r["bytes"] else None
        lines.append(f"{r['workload'][:10]:10} {r['dtype']:4} {r['shape'][:24]:24} {_fmt(size):>6} "
                     f"{_fmt(r.get('ours'), 1 if r['unit'] == 'TFLOP/s' else 0):>7} "
                     f"{_fmt(r.get('triton'), 1 if r['unit'] == 'TFLOP/s' else 0):>7} "
                     f"{_fmt(r.get('torch'), 1 if r['unit'] == 'TFLOP/s' else 0):>7} "
                     f"{_fmt(r.get('ours/triton'), 2):>5} {_fmt(r.get('ours/torch'), 2):>5} "
                     f"{_fmt(r.get('ours/copy'), 2):>5} {_fmt(r.get('triton/copy'), 2):>5} "
                     f"{_fmt(r.get('ours/copy_same_bytes'), 2):>5}")
        for impl, error in r["errors"].items():
            lines.append(f"    ! {impl}: {error[:110]}")
    ceilings = ", ".join(f"{c:.0f}" for c in meta.get("copy_ceiling_gbs", []))
    lines.append(f"units: GB/s (matmul: TFLOP/s); copy ceiling measured in this run: {ceilings} GB/s; "
                 f"GPU: {meta.get('gpu', '?')}; o/cpB: ours against a copy of the point's own bytes")
    for wl in dict.fromkeys(r["workload"] for r in rows):
        ratios = [r["ours/triton"] for r in rows if r["workload"] == wl and r.get("ours/triton")]
        n = sum(1 for r in rows if r["workload"] == wl)
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
        large = [r["ours/copy"] for r in rows if r["workload"] == wl and r.get("ours/copy")
                 and r["bytes"] >= LARGE_BYTES]
        at_ceiling = (f"; of the copy ceiling at >= 64 MiB: lowest {min(large):.2f}, "
                      f"{sum(f >= 0.90 for f in large)} of {len(large)} at >= 0.90") if large else ""
        same = [r["ours/copy_same_bytes"] for r in rows if r["workload"] == wl and r.get("ours/copy_same_bytes")
                and r["bytes"] >= LARGE_BYTES]
        if same:
            at_ceiling += f"; of a copy of the same bytes: lowest {min(same):.2f}"
        lines.append(f"  {wl:10} ours/triton geomean {_fmt(gm, 2)} over {len(ratios)} of {n} points{at_ceiling}")
    if meta.get("variants"):
        lines.append(f"compiled variants of ours in this run: {meta['variants']}")
    if meta.get("skipped"):
        counts = {}
        for point in meta["skipped"]:
            counts[point.split()[0]] = counts.get(point.split()[0], 0) + 1
        lines.append(f"skipped for the time budget ({len(meta['skipped'])} points, listed in bench.json): "
                     + ", ".join(f"{name} {n}" for name, n in counts.items()))
    return "\n".join(lines)


def plot(out: Path, meta: dict, rows: list[dict]):
    """Throughput against problem size, one subplot per workload, in one PNG (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except Exception:
        print("matplotlib is not importable: no plot")
        return
    names = list(dict.fromkeys(r["workload"] for r in rows))
    if not names:
        return
    cols = min(4, len(names))
    n_rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(4.6 * cols, 3.6 * n_rows), squeeze=False)
    colors = {"ours": "tab:red", "triton": "tab:blue", "torch": "tab:gray"}
    styles = ["-", "--", ":", "-."]
    ceiling = max(meta.get("copy_ceiling_gbs") or [0])
    for ax, name in zip(axes.flat, names):
        wl_rows = [r for r in rows if r["workload"] == name]
        flops = wl_rows[0]["unit"] == "TFLOP/s"
        series = list(dict.fromkeys(f"{r['dtype']} {r['variant']}".strip() for r in wl_rows))
        for impl in IMPLS:
            for style, s in zip(styles * 4, series):
                pts = sorted(((r["flops"] if flops else r["bytes"]), r[impl]) for r in wl_rows
                             if f"{r['dtype']} {r['variant']}".strip() == s and r.get(impl) and r["bytes"])
                if pts:
                    x = [p[0] / 1e9 if flops else p[0] / 1e6 for p in pts]
                    ax.plot(x, [p[1] for p in pts], style, marker="o", ms=3, color=colors[impl], label=f"{impl} {s}")
        if ceiling and not flops:
            ax.axhline(ceiling, color="black", lw=0.8, ls="--", label="copy ceiling")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # decade labels only
        ax.set_title(name)
        ax.set_xlabel("GFLOP" if flops else "MB moved")
        ax.set_ylabel("TFLOP/s" if flops else "GB/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"ours vs Triton vs torch on {meta.get('gpu', 'GPU')}")
    fig.tight_layout()
    fig.savefig(out / "bench.png", dpi=110)


# ---- main -----------------------------------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench_results"), help="folder for bench.json/.csv/.png")
    parser.add_argument("--quick", action="store_true", help="a few points per workload")
    parser.add_argument("--only", default="", help="comma-separated workload names (see --list)")
    parser.add_argument("--budget-s", type=float, default=0, help="stop starting new points after this many "
                        "seconds (0: no limit), leaving time to write the table and plot")
    parser.add_argument("--rounds", type=int, default=3, help="timings per implementation and point, interleaved; "
                        "the median is reported (default 3)")
    parser.add_argument("--list", action="store_true", help="list workloads and their points, then exit")
    parser.add_argument("--table", action="store_true",
                        help="print the table of the run in --out and redraw its plot, then exit")
    parser.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)  # set on a self-restart
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; known: {', '.join(WORKLOADS)}")
    args.names = names or list(WORKLOADS)
    return args


def run_metadata(args, ceiling) -> dict:
    versions = {}
    for name in ("torch", "triton", "cupy", "numpy"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:
            versions[name] = None
    return {"gpu": torch.cuda.get_device_name(), "versions": versions, "python": platform.python_version(),
            "argv": sys.argv[1:], "started": time.strftime("%Y-%m-%d %H:%M:%S"), "copy_ceiling_gbs": [ceiling],
            "timer": "triton.testing.do_bench" if versions["triton"] else "cuda events", "rounds": args.rounds,
            "skipped": []}


def restart_in_fresh_process():
    """Re-run this script with --resume: a faulted CUDA context cannot be recovered in-process."""
    restarts = int(os.environ.get("BENCH_RESTARTS", "0"))
    if restarts >= MAX_RESTARTS:
        print(f"CUDA context lost {restarts + 1} times: giving up on the remaining points")
        return
    os.environ["BENCH_RESTARTS"] = str(restarts + 1)
    argv = [a for a in sys.argv[1:] if a != "--resume"] + ["--resume"]
    print("CUDA context lost: restarting in a fresh process, keeping the rows written so far", flush=True)
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve())] + argv)


def run_points(args, meta: dict, rows: list[dict], timer, ceiling: float, t0: float):
    """Run every selected point not already in `rows`, writing the results after each one."""
    done = {row_key(r) for r in rows}
    for name in args.names:
        wl = WORKLOADS[name]
        twins = None
        for point in wl.points(args.quick):
            key = (name, SHORT[point.dtype], wl.label(point))
            if key in done:
                continue
            if args.budget_s and time.time() - t0 > args.budget_s:
                meta["skipped"].append(f"{name} {key[1]} {key[2]}")
                continue
            twins = twins or load_twins(wl.source)  # compiles nothing yet: both compile on first launch
            started = time.time()
            row = run_point(wl, twins, point, timer, ceiling, args.rounds)
            rows.append(row)
            write_results(args.out, meta, rows)
            print(f"{name:10} {key[1]:4} {key[2]:24} ours {_fmt(row.get('ours'), 1):>7} triton "
                  f"{_fmt(row.get('triton'), 1):>7} torch {_fmt(row.get('torch'), 1):>7} {wl.unit} "
                  f"({time.time() - started:.1f} s){'  errors: ' + ', '.join(row['errors']) if row['errors'] else ''}",
                  flush=True)
            if row["errors"] and not cuda_context_ok():
                row["errors"]["context"] = "the CUDA context was lost after this point"
                write_results(args.out, meta, rows)
                restart_in_fresh_process()  # returns only when the restarts are used up
                return


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        for name in args.names:
            wl = WORKLOADS[name]
            points = wl.points(args.quick)
            print(f"{name:11} {len(points):3} points: " + ", ".join(f"{SHORT[p.dtype]} {wl.label(p)}" for p in points))
        return 0
    if args.table:
        meta, rows = load_results(args.out)
        plot(args.out, meta, rows)
        print(format_table(meta, rows))
        return 0

    global torch
    import torch as torch_module
    torch = torch_module
    if not torch.cuda.is_available():
        print("run.py needs a CUDA GPU with torch; none is visible")
        return 2
    t0 = float(os.environ.setdefault("BENCH_T0", str(time.time())))  # survives a self-restart
    timer = make_timer()
    ceiling = copy_ceiling_gbs(timer)
    print(f"copy ceiling: {ceiling:.0f} GB/s on {torch.cuda.get_device_name()}", flush=True)

    meta, rows = load_results(args.out) if args.resume else ({}, [])
    if meta:
        meta["copy_ceiling_gbs"].append(ceiling)
    else:
        meta = run_metadata(args, ceiling)
    import variant_count
    variant_count.install()
    run_points(args, meta, rows, timer, ceiling, t0)
    meta["variants"] = variant_count.summary()

    write_results(args.out, meta, rows)
    try:
        plot(args.out, meta, rows)
    except Exception:
        traceback.print_exc()
    print()
    print(format_table(meta, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
