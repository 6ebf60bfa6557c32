#!/usr/bin/env python
"""Time hand-edited variants of one generated kernel next to the same kernel under Triton, in one process.

Before changing the compiler to emit something else, edit its `.cu` by hand and measure: each case below
takes the source our compiler generates for one specialization, applies text edits (old -> new), compiles
every variant with the runtime's own NVRTC options (no occupancy define: "ours" is the runtime's tuned build,
"no occupancy define" the same source as ptxas compiles it unbounded), checks each variant's output against our
kernel's, and times ours, every variant and Triton's twin (`bench/twins.py`) interleaved, `rounds` times, with
`triton.testing.do_bench` (L2 flushed). Prints GB/s and the ratio to Triton per variant, writes JSON.

    python bench/ab_variants.py [--out results.json] [--rounds 3] [--only softmax,layernorm]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cupy  # noqa: E402
import torch  # noqa: E402

import twins  # noqa: E402
from transpiler.runtime.compiler import compile_cubin, device_arch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def cubin_function(source: str, name: str):
    arch = device_arch(cupy.cuda.Device().id)
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(compile_cubin(source, name, arch))
    return cupy.RawModule(path=f.name).get_function(name)


def torch_randn(shape, dtype, scale):
    return (torch.randn(shape, device="cuda") * scale).to(getattr(torch, dtype))


def softmax_case(dtype, rows, cols):
    ours, tri = twins.load(ROOT / "examples/softmax.py", "ours"), twins.load(ROOT / "examples/softmax.py", "triton")
    x = torch_randn((rows, cols), dtype, 3.0)
    y = torch.empty_like(x)
    block = 1 << (cols - 1).bit_length()
    warps = ours.num_warps_for(block)
    args = (y, x, cols, cols, cols)
    var = ours.softmax_kernel.compiled_variant(*args, BLOCK=block, num_warps=warps)
    return dict(label=f"softmax {cupy.dtype(dtype).name} {rows}x{cols}", source=var.source, name="softmax_kernel",
                kernel=ours.softmax_kernel,
                grid=(rows,), block=(32 * warps,), shared=var.shared_bytes, out=cupy.asarray(y),
                args=(cupy.asarray(y), cupy.asarray(x), cupy.int32(cols), cupy.int32(cols), cupy.int32(cols)),
                ours=lambda: ours.softmax(x, out=y), triton=lambda: tri.softmax(x, out=y),
                nbytes=2 * x.nbytes)


def layernorm_case(dtype, rows, cols):
    path = ROOT / "examples/layernorm.py"
    ours, tri = twins.load(path, "ours"), twins.load(path, "triton")
    x = torch_randn((rows, cols), dtype, 2.0) + 0.5
    w = torch_randn((cols,), dtype, 0.5) + 1
    b = torch_randn((cols,), dtype, 0.5)
    out = (torch.empty_like(x), torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda"))
    block = 1 << (cols - 1).bit_length()
    warps = min(max(block // 256, 1), 8)
    args = (x, out[0], w, b, out[1], out[2], cols, cols, cols, 1e-5)
    var = ours.layernorm_kernel.compiled_variant(*args, BLOCK=block, num_warps=warps)
    return dict(label=f"layernorm {cupy.dtype(dtype).name} {rows}x{cols}", source=var.source,
                name="layernorm_kernel", kernel=ours.layernorm_kernel, grid=(rows,), block=(32 * warps,),
                shared=var.shared_bytes,
                out=cupy.asarray(out[0]),
                args=tuple(cupy.asarray(t) for t in (x, out[0], w, b, out[1], out[2]))
                + (cupy.int32(cols), cupy.int32(cols), cupy.int32(cols), cupy.float32(1e-5)),
                ours=lambda: ours.layer_norm(x, w, b, out=out), triton=lambda: tri.layer_norm(x, w, b, out=out),
                nbytes=2 * x.nbytes + 2 * w.nbytes + 8 * rows)


def copy_case(kind, dtype, rows, cols, pitch):
    """bench/kernels.py's copy2d or transpose of a [rows, cols] view into `pitch`-wide rows."""
    path = ROOT / "bench/kernels.py"
    ours, tri = twins.load(path, "ours"), twins.load(path, "triton")
    x = torch_randn((rows, pitch), dtype, 1.0)[:, :cols]
    y = torch.empty((cols, rows) if kind == "transpose" else (rows, cols), device="cuda", dtype=x.dtype)
    if kind == "transpose":
        bm = bn = 64
        kernel, wrapper, out_stride = ours.transpose_kernel, "transpose", rows
    else:
        bm, bn = 16, 256
        kernel, wrapper, out_stride = ours.copy2d_kernel, "copy2d", cols
    args = (x, y, rows, cols, pitch, out_stride)
    var = kernel.compiled_variant(*args, BLOCK_M=bm, BLOCK_N=bn, num_warps=4)
    grid = (-(-rows // bm), -(-cols // bn))
    return dict(label=f"{kind} {dtype} {rows}x{cols} pitch {pitch}", source=var.source, name=var.name, grid=grid,
                kernel=kernel,
                block=(128,), shared=var.shared_bytes, out=cupy.asarray(y),
                args=(cupy.asarray(x), cupy.asarray(y)) + tuple(cupy.int32(a) for a in args[2:]),
                ours=lambda: getattr(ours, wrapper)(x, out=y), triton=lambda: getattr(tri, wrapper)(x, out=y),
                nbytes=2 * x.numel() * x.element_size())


def edited(source: str, edits) -> str:
    for old, new in edits:
        if old not in source:
            raise ValueError(f"edit target not in the source: {old!r}")
        source = source.replace(old, new)
    return source


# Edits measured before they became compiler changes (bench/NOTES.md has the results): min 4 blocks/SM is now
# the occupancy feedback, the mask once per run is now computed by the emitter.
SOFTMAX_EDITS = {
    "plain loads": [("const __half* __restrict__ IN", "const __half* IN")],
}
LAYERNORM_EDITS = {
    "plain loads": [(f"const __half* __restrict__ {a}", f"const __half* {a}") for a in "XWB"],
}


def _one_warp_combine(acc, smem, combine, identity):
    """Edit: the 16 warp partials combined by one warp with shuffles and broadcast through shared memory (as
    Triton does), instead of every thread reading all 16."""
    old = (f"  #pragma unroll\n  for (int o = 0; o < 1; ++o) {{\n    {acc}[o] = {smem}[0];\n  #pragma unroll\n"
           f"    for (int w = 1; w < 16; ++w) {{\n      tp::{combine}({acc}[o], {smem}[w * 1 + 0]);\n    }}\n  }}")
    new = (f"  if (warp == 0) {{\n    float v = lane < 16 ? {smem}[lane] : {identity};\n"
           + "".join(f"    tp::{combine}(v, tp::shfl_xor(v, {k}));\n" for k in (8, 4, 2, 1))
           + f"    if (lane == 0) {smem}[0] = v;\n  }}\n  __syncthreads();\n  {acc}[0] = {smem}[0];")
    return [(old, new)]


ONE_WARP_COMBINE = (_one_warp_combine("red_acc", "red_acc0_smem", "combine_max", "-tp::inf<float>()")
                    + _one_warp_combine("red_acc_1", "red_acc_10_smem", "combine_add", "0.0f"))


def cases(only, focus=False):
    """(make, params, variants); fp16 only (CuPy has no bfloat16 arrays; bf16 rows are in bench/run.py)."""
    out = []
    if focus:   # the points whose ratio moved with the occupancy feedback, for a longer look
        bounded = {"__launch_bounds__(512, 4)": [("__launch_bounds__(512)", "__launch_bounds__(512, 4)")]}
        combine = {"one-warp cross-warp combine": ONE_WARP_COMBINE}
        focused = [(softmax_case, ("float16", 4096, 8192), {**bounded, **combine}),
                   (softmax_case, ("float16", 8192, 4096), combine),
                   (copy_case, ("transpose", "float16", 4096, 4096, 4096), {}),
                   (copy_case, ("transpose", "float32", 4096, 4000, 4096), {}),
                   (copy_case, ("copy2d", "float32", 4096, 4000, 4096), {})]
        return [c for c in focused if c[0] is softmax_case and "softmax" in only
                or c[0] is copy_case and c[1][0] in only]
    if "softmax" in only:
        for rows, cols in ((4096, 8192), (8192, 4096), (4096, 4096)):
            out.append((softmax_case, ("float16", rows, cols), SOFTMAX_EDITS))
    if "layernorm" in only:
        for rows, cols in ((4096, 12288), (16384, 4096), (8192, 8192)):
            out.append((layernorm_case, ("float16", rows, cols), LAYERNORM_EDITS))
    for kind in ("copy2d", "transpose"):
        if kind in only:
            for dtype in ("float32", "float16"):
                for rows, cols, pitch in ((4096, 4000, 4096), (8192, 8000, 8192), (4096, 4096, 4096)):
                    out.append((copy_case, (kind, dtype, rows, cols, pitch), {}))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="softmax,layernorm,copy2d,transpose")
    p.add_argument("--focus", action="store_true", help="only the few points the occupancy feedback moved")
    args = p.parse_args(argv)
    from triton.testing import do_bench
    results = []
    for make, params, variants in cases(args.only.split(","), args.focus):
        c = make(*params)
        c["ours"]()
        cupy.cuda.Device().synchronize()
        want = c["out"].copy()
        built = [o.describe() for v in c["kernel"].variants.values() for o in v.occupancy.values()]
        print(f"{c['label']}: ours compiled to {'; '.join(built) or 'no occupancy record'}", flush=True)
        fns = {"ours": c["ours"], "triton": c["triton"]}
        for label, edits in {"no occupancy define": [], **variants}.items():
            try:
                fn = cubin_function(edited(c["source"], edits), c["name"])
            except Exception as error:
                print(f"{c['label']}: variant {label!r} failed: {error}", flush=True)
                continue

            def launch(fn=fn):
                fn(c["grid"], c["block"], c["args"], shared_mem=c["shared"])
            c["out"].fill(float("nan"))
            launch()
            cupy.cuda.Device().synchronize()
            # Same bits, or (a variant that reorders a float reduction) the same values to rounding.
            same = bool(cupy.all(c["out"] == want)) or bool(cupy.allclose(
                c["out"].astype(cupy.float32), want.astype(cupy.float32), rtol=4e-3, atol=1e-6))
            if not same:
                print(f"{c['label']}: variant {label!r} gives different output; not timed", flush=True)
                continue
            fns[label] = launch
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                times[k].append(do_bench(fn, warmup=25, rep=100, return_mode="median"))
        tri = statistics.median(times["triton"])
        row = {"case": c["label"]}
        for k, ts in times.items():
            ms = statistics.median(ts)
            row[k] = {"ms": ms, "gbs": c["nbytes"] / ms / 1e6, "vs_triton": tri / ms, "all_ms": ts}
        results.append(row)
        print(c["label"] + ": " + ", ".join(f"{k} {v['gbs']:.0f} GB/s ({v['vs_triton']:.3f}x)"
                                          for k, v in row.items() if k != "case"), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
