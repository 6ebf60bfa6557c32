#!/usr/bin/env python
"""Launch configurations the examples do not choose, timed for ours and Triton from the same source.

The examples pick `num_warps` as Triton's tutorials do; this probes whether another choice moves the large fp16
softmax and layernorm rows toward the copy ceiling, for both compilers alike (interleaved rounds, medians).

    python bench/warps_probe.py [--rounds 5]
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

import twins  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def softmax_launch(mod, x, y, warps):
    rows, cols = x.shape
    block = 1 << (cols - 1).bit_length()
    return lambda: mod.softmax_kernel[(rows,)](y, x, cols, cols, cols, BLOCK=block, num_warps=warps)


def layernorm_launch(mod, x, y, w, b, mean, rstd, warps):
    rows, cols = x.shape
    block = 1 << (cols - 1).bit_length()
    return lambda: mod.layernorm_kernel[(rows,)](x, y, w, b, mean, rstd, cols, cols, cols, 1e-5, BLOCK=block,
                                                 num_warps=warps)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    sm = {f: twins.load(ROOT / "examples/softmax.py", f) for f in ("ours", "triton")}
    ln = {f: twins.load(ROOT / "examples/layernorm.py", f) for f in ("ours", "triton")}
    cases = []
    for dtype, (rows, cols) in ((torch.float16, (4096, 16384)), (torch.float16, (4096, 8192))):
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        y = torch.empty_like(x)
        for warps in (8, 16, 32):
            cases.append((f"softmax fp16 {rows}x{cols} num_warps={warps}", 2 * x.nbytes,
                          {f: softmax_launch(m, x, y, warps) for f, m in sm.items()}))
    for rows, cols in ((16384, 4096), (8192, 8192)):
        x = (torch.randn(rows, cols, device="cuda") * 2 + 0.5).half()
        w, b = torch.randn(cols, device="cuda").half(), torch.randn(cols, device="cuda").half()
        y, mean, rstd = torch.empty_like(x), torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda")
        for warps in (4, 8, 16):
            cases.append((f"layernorm fp16 {rows}x{cols} num_warps={warps}", 2 * x.nbytes + 4 * w.nbytes + 8 * rows,
                          {f: layernorm_launch(m, x, y, w, b, mean, rstd, warps) for f, m in ln.items()}))
    for label, nbytes, fns in cases:
        times = {f: [] for f in fns}
        for _ in range(args.rounds):
            for f, fn in fns.items():
                times[f].append(do_bench(fn, warmup=25, rep=100, return_mode="median"))
        gbs = {f: nbytes / statistics.median(t) / 1e6 for f, t in times.items()}
        print(f"{label:44} ours {gbs['ours']:6.0f} GB/s  triton {gbs['triton']:6.0f} GB/s  "
              f"ours/triton {gbs['ours'] / gbs['triton']:.3f}", flush=True)


if __name__ == "__main__":
    main()
