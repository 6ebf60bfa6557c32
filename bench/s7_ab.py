#!/usr/bin/env python
"""Session 7, issue 12: the losing bench points (attention fp16 B4 H32 S4096 D128 full and causal; matmul fp16
4096^3, bf16 4096^3, fp16 8192^3, 2048^3, 16x8192x8192), ours against Triton on the same source and
configuration (and torch), interleaved rounds, do_bench medians, every result checked against torch first.

Run once per source tree (the tree on PYTHONPATH is the one measured: the branch, or main for the before
figures); Triton is measured in each run, so each run's ratio is ours/Triton of that process.
`--cap-programs 2`: also ours with the matmul's residency held at 2 programs per SM (the launch asks for
enough dynamic shared memory that a third cannot fit: an experiment done here by wrapping the launcher, the
runtime has no such switch), to test whether the 4096^3 gap is the last wave of 3 programs per SM.

    python bench/s7_ab.py --label new [--rounds 2] [--cap-programs 2] [--out x.json] [--only attention|matmul]
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from twins import load  # noqa: E402

MATMUL = [("float16", (4096, 4096, 4096)), ("bfloat16", (4096, 4096, 4096)), ("float16", (8192, 8192, 8192)),
          ("float16", (2048, 2048, 2048)), ("float16", (16, 8192, 8192))]
ATTENTION = [(False,), (True,)]
PER_SM_SHARED = 228 * 1024      # H200: shared memory per SM (1 KiB of each block's reserved by the driver)


def capped_launchers(cap):
    """A context in which new launchers of our kernels ask for enough shared memory that at most `cap`
    programs fit on one SM."""
    import contextlib

    from transpiler.runtime import launcher as L

    @contextlib.contextmanager
    def ctx():
        original = L.Launcher.__init__
        floor = PER_SM_SHARED // (cap + 1)     # cap + 1 blocks of floor + 1 KiB do not fit, cap do

        def init(self, *args, shared_bytes=0, **kwargs):
            original(self, *args, shared_bytes=max(shared_bytes, floor), **kwargs)
        L.Launcher.__init__ = init
        try:
            yield
        finally:
            L.Launcher.__init__ = original
    return ctx()


def load_copy(path, name):
    """Our flavour of the module at `path` under another name: kernel objects (and launchers) of its own."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"_ours_{name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cap-programs", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--matmul", default="", help="dtype:MxNxK,... (default: the five points above)")
    args = ap.parse_args()
    import torch
    import triton
    import triton.testing
    import transpiler
    print(f"{args.label}: transpiler from {Path(transpiler.__file__).parent}", flush=True)
    torch.manual_seed(0)
    cases = []          # (name, flops, {impl: fn})

    if args.only in ("", "attention"):
        ours, theirs = load(ROOT / "examples" / "attention.py", "ours"), load(ROOT / "examples" / "attention.py",
                                                                               "triton")
        z, h, n, d = shape = (4, 32, 4096, 128)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
        for (causal,) in ATTENTION:
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            impls = {}
            for who, module in (("ours", ours), ("triton", theirs)):
                out = torch.full_like(q, float("nan"))
                fn = (lambda m=module, o=out, c=causal: m.attention(q, k, v, out=o, causal=c))
                fn()
                torch.cuda.synchronize()
                err = (out.float() - ref.float()).abs().max().item()
                print(f"  attention {'causal' if causal else 'full'} {who}: max error vs SDPA {err:.1e}", flush=True)
                assert err < 2e-2, f"{who} attention wrong: {err}"
                impls[who] = fn
            impls["sdpa"] = lambda c=causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c)
            cases.append((f"attention fp16 B4H32S4096D128 {'causal' if causal else 'full'}",
                          4 * z * h * n * n * d / (2 if causal else 1), impls))

    if args.only in ("", "matmul"):
        ours, theirs = load(ROOT / "bench" / "kernels.py", "ours"), load(ROOT / "bench" / "kernels.py", "triton")
        capped = load_copy(ROOT / "bench" / "kernels.py", "capped") if args.cap_programs else None
        shapes = MATMUL if not args.matmul else [
            (item.split(":")[0], tuple(int(x) for x in item.split(":")[1].split("x"))) for item in args.matmul.split(",")]
        for dt, (m, n, kk) in shapes:
            tdt = getattr(torch, dt)
            a = torch.randn((m, kk), device="cuda", dtype=tdt)
            b = torch.randn((kk, n), device="cuda", dtype=tdt)
            ref = torch.matmul(a.float(), b.float())
            impls = {}
            flavours = [("ours", ours), ("triton", theirs)]
            if capped is not None and m > 64:
                flavours.insert(1, (f"ours_cap{args.cap_programs}", capped))
            for who, module in flavours:
                c = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
                fn = (lambda mod=module, aa=a, bb=b, cc=c: mod.matmul(aa, bb, out=cc))
                if who.startswith("ours_cap"):
                    with capped_launchers(args.cap_programs):
                        fn()
                else:
                    fn()
                torch.cuda.synchronize()
                rel = ((c.float() - ref).norm() / ref.norm()).item()
                print(f"  matmul {dt} {m}x{n}x{kk} {who}: relative error {rel:.1e}", flush=True)
                assert rel < 1e-2, f"{who} matmul wrong: {rel}"
                impls[who] = fn
            c_t = torch.empty((m, n), device="cuda", dtype=tdt)
            impls["torch"] = lambda aa=a, bb=b, cc=c_t: torch.matmul(aa, bb, out=cc)
            cases.append((f"matmul {dt} {m}x{n}x{kk}", 2.0 * m * n * kk, impls))

    if args.rounds == 0:        # compile and check only (fills the caches)
        return 0
    times = {name: {who: [] for who in impls} for name, _, impls in cases}
    t0 = time.time()
    for r in range(args.rounds):
        for name, flops, impls in cases:
            for who, fn in impls.items():
                ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
                times[name][who].append(ms)
        print(f"round {r + 1} done at {time.time() - t0:.0f}s", flush=True)
    result = {"label": args.label, "rows": []}
    print(f"\n{args.label}: TFLOP/s (median of {args.rounds} rounds), ours/Triton")
    for name, flops, impls in cases:
        tf = {who: flops / statistics.median(ts) / 1e9 for who, ts in times[name].items()}
        ratios = {who: tf[who] / tf["triton"] for who in tf if who.startswith("ours")}
        result["rows"].append({"case": name, "tflops": tf, "rounds_ms": times[name], "ratios": ratios})
        print(f"  {name:42} " + "  ".join(f"{w} {v:6.1f}" for w, v in tf.items()) + "   " +
              "  ".join(f"{w}/triton {v:.3f}" for w, v in ratios.items()), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
