#!/usr/bin/env python
"""Issue 12, session 9: the helpers of one H200 call (`bench/s9_hopper.sh`) that measures every matmul and
attention bench point against Triton and cuBLAS/SDPA, picks the points below issue 12's targets, and profiles them.

    python bench/s9_hopper.py warm --workload matmul --flavor ours --part 0/3   # compile one share of the variants
    python bench/s9_hopper.py fp8 --out fp8.json [--profile]    # fp8 matmul points (not in bench/run.py)
    python bench/s9_hopper.py select bench.json fp8.json misses.json   # prints the ncu lists (see the .sh)
    python bench/s9_hopper.py profile-attention "fp16:4,32,4096,128:causal,..."  # one launch each, for ncu
    python bench/s9_hopper.py sass DIR     # SASS of every cubin in our and Triton's compile caches

Targets (issue 12): fp16 and bf16 matmul at 4096^3 and 8192^3 >= 1.0x Triton and >= 0.9x cuBLAS; every matmul
point >= 0.95x Triton; attention forward >= 1.0x Triton.
"""
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _run_module():
    import torch
    import run
    run.torch = torch          # run.py binds torch in main(); its cases read the module global
    return run


def warm(argv):
    """Build (one launch of) one flavor's share of the distinct variants of a workload's full point set."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", required=True)
    ap.add_argument("--flavor", required=True)
    ap.add_argument("--part", default="0/1")
    args = ap.parse_args(argv)
    run = _run_module()
    import torch
    wl = run.WORKLOADS[args.workload]
    index, parts = (int(x) for x in args.part.split("/"))

    def key(p):       # what a compiled variant depends on (ints divisible by 16 specialise alike)
        return (p.dtype, p.variant, p.shape[-1] if args.workload == "attention" else p.shape[0] <= 64)
    keys = sorted({key(p) for p in wl.points(False)})
    mine = set(keys[index::parts])
    seen = set()
    twins = run.load_twins(wl.source)
    for p in wl.points(False):
        if key(p) not in mine or key(p) in seen:
            continue
        seen.add(key(p))
        case = wl.make(twins, p)
        case.impls[args.flavor]()
        torch.cuda.synchronize()
        print(f"built {args.workload} {args.flavor} {p}", flush=True)
        del case
        torch.cuda.empty_cache()


FP8_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))


def fp8(argv):
    """fp8 e4m3 matmul (A row-major, B column-major: the K-major form wgmma's fp8 takes, as in Triton's tutorial),
    fp16 out, the bench's configurations: ours, Triton, cuBLAS (torch._scaled_mm, unit scales)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    import torch
    import triton.testing
    from twins import load_twins
    twins = load_twins(HERE / "kernels.py")
    rows = []
    for m, n, k in FP8_SHAPES:
        a = torch.randn((m, k), device="cuda").to(torch.float8_e4m3fn)
        b = (torch.randn((n, k), device="cuda") / k ** 0.5 * 8).to(torch.float8_e4m3fn).T   # column-major
        ref = (a.float() @ b.float())
        one = torch.tensor(1.0, device="cuda")
        impls, errors = {}, {}
        for flavor in ("triton", "ours"):
            module = getattr(twins, flavor)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            try:
                module.matmul(a, b, out=c)
                torch.cuda.synchronize()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                assert err < 2e-2, f"relative error {err:.2e}"
                impls[flavor] = (lambda mod, c: lambda: mod.matmul(a, b, out=c))(module, c)
            except Exception as e:       # noqa: BLE001  (recorded, the other flavors still run)
                errors[flavor] = f"{type(e).__name__}: {str(e)[:300]}"
        if args.profile:
            print(f"profiled fp8 {m}x{n}x{k}: {', '.join(impls)}", flush=True)
            continue
        try:
            c_t = torch.empty((m, n), device="cuda", dtype=torch.float16)
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16, out=c_t)
            impls["torch"] = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16,
                                                      out=c_t)
        except Exception as e:           # noqa: BLE001
            errors["torch"] = f"{type(e).__name__}: {str(e)[:300]}"
        times = {name: [] for name in impls}
        for _ in range(args.rounds):
            for name, fn in impls.items():
                times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
        flop = 2 * m * n * k
        tf = {name: flop / (statistics.median(v) * 1e-3) / 1e12 for name, v in times.items()}
        row = dict(workload="matmul", dtype="fp8e4m3", shape=f"{m}x{n}x{k}", unit="TFLOP/s",
                   ours=tf.get("ours"), triton=tf.get("triton"), torch=tf.get("torch"), errors=errors,
                   ms_rounds={name: v for name, v in times.items()})
        for other in ("triton", "torch"):
            row[f"ours/{other}"] = tf["ours"] / tf[other] if "ours" in tf and other in tf else None
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def target_of(row):
    """(Triton ratio, cuBLAS ratio or None) issue 12 asks of this bench row."""
    if row["workload"] == "attention":
        return 1.0, None
    dims = tuple(int(x) for x in row["shape"].split("x"))
    if row["dtype"] in ("fp16", "bf16") and dims in ((4096,) * 3, (8192,) * 3):
        return 1.0, 0.9
    return 0.95, None


def select(argv):
    """Rows below target -> misses.json; prints `MATMUL=<hopper_ab shapes>`, `FP8=0|1`, `ATTN=<points>`."""
    bench, fp8_path, out = argv
    rows = json.loads(Path(bench).read_text())["rows"] if Path(bench).exists() else []
    if Path(fp8_path).exists():
        rows += json.loads(Path(fp8_path).read_text())
    misses = []
    for r in rows:
        if r["workload"] not in ("matmul", "attention"):
            continue
        want_t, want_c = target_of(r)
        got_t, got_c = r.get("ours/triton"), r.get("ours/torch")
        miss = got_t is None or got_t < want_t or (want_c is not None and (got_c is None or got_c < want_c))
        if miss:
            misses.append(dict(r, want_triton=want_t, want_torch=want_c))
    misses.sort(key=lambda r: r.get("ours/triton") or 0)
    Path(out).write_text(json.dumps(misses, indent=1))
    long = {"fp16": "float16", "bf16": "bfloat16"}
    mm = [f"{long[r['dtype']]}:{r['shape']}" for r in misses if r["workload"] == "matmul" and r["dtype"] in long][:4]
    fp8_miss = any(r["dtype"].startswith("fp8") for r in misses)
    attn = []
    for r in misses:
        if r["workload"] == "attention" and len(attn) < 3:
            z, h, s, d = (int(x[1:]) for x in r["shape"].split())
            attn.append(f"{long[r['dtype']]}:{z},{h},{s},{d}:{r['variant']}")
    for r in misses:
        print(f"# miss {r['workload']} {r['dtype']} {r['shape']} {r.get('variant', '')}: ours/triton "
              f"{r.get('ours/triton')}, ours/torch {r.get('ours/torch')}", file=sys.stderr)
    print(f"MATMUL={','.join(mm)}")
    print(f"FP8={int(fp8_miss)}")
    print(f"ATTN={' '.join(attn)}")


def profile_attention(argv):
    """One launch of ours and one of Triton's at each `dtype:Z,H,S,D:full|causal` point (for ncu)."""
    import torch
    from twins import load_twins
    twins = load_twins(HERE.parent / "examples" / "attention.py")
    for text in " ".join(argv).split():
        dtype, dims, variant = text.split(":")
        shape = tuple(int(x) for x in dims.split(","))
        q, k, v = (torch.randn(shape, device="cuda", dtype=getattr(torch, dtype)) for _ in range(3))
        for flavor in ("ours", "triton"):
            out = torch.empty_like(q)
            getattr(twins, flavor).attention(q, k, v, out=out, causal=variant == "causal")
            torch.cuda.synchronize()
        print(f"profiled attention {text}: ours, triton", flush=True)


def sass(argv):
    """cuobjdump -sass of every cubin in our cache (its header line stripped) and Triton's, one file each."""
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    ours = Path(os.environ.get("TRANSPILER_CACHE_DIR", "/tmp/tp_cache"))
    theirs = Path(os.environ.get("TRITON_CACHE_DIR", "/tmp/triton_cache"))
    blobs = {}
    for i, path in enumerate(sorted(ours.rglob("*.cubin"))):
        data = path.read_bytes()
        if data.startswith(b"tpcache"):
            data = data.split(b"\n", 1)[1]
        blobs[f"ours_{i}_{path.name[:16]}"] = data
    for i, path in enumerate(sorted(theirs.rglob("*.cubin"))):
        blobs[f"triton_{i}_{path.stem}"] = path.read_bytes()
        meta = path.with_suffix(".json")
        if meta.exists():
            (out / f"triton_{i}_{path.stem}.json").write_text(meta.read_text())
    for name, data in blobs.items():
        cubin = out / f"{name}.cubin"
        cubin.write_bytes(data)
        text = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True)
        (out / f"{name}.sass").write_text(text.stdout or text.stderr)
        funcs = [line.split(":", 1)[1].strip() for line in text.stdout.splitlines() if "Function :" in line]
        print(f"{name}: {len(text.stdout.splitlines())} lines, {funcs[:2]}", flush=True)


if __name__ == "__main__":
    commands = {"warm": warm, "fp8": fp8, "select": select, "profile-attention": profile_attention, "sass": sass}
    commands[sys.argv[1]](sys.argv[2:])
