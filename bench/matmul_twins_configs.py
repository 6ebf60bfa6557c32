#!/usr/bin/env python
"""Ours and Triton on the same matmul source (bench/kernels.py) and the same tile configurations, with cuBLAS:

    python bench/matmul_twins_configs.py [--shapes 4096,4096,4096,float16 ...]

Per shape and configuration: TFLOP/s of ours, Triton and torch (median of triton.testing.do_bench, L2
flushed), ours checked against torch first. Used to pick the configuration the bench rows use for both.
"""
import argparse
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent))
import twins  # noqa: E402

CONFIGS = [
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=4),
    dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="*", default=["4096,4096,4096,float16", "8192,8192,8192,bfloat16"])
    args = ap.parse_args()
    ours = twins.load(twins.BENCH / "kernels.py", "ours")
    theirs = twins.load(twins.BENCH / "kernels.py", "triton")
    for spec in args.shapes:
        m, n, k, dt = spec.split(",")
        m, n, k = int(m), int(n), int(k)
        a = torch.randn((m, k), device="cuda", dtype=getattr(torch, dt))
        b = torch.randn((k, n), device="cuda", dtype=getattr(torch, dt)) / k ** 0.5
        ref = torch.matmul(a, b)
        tflops = lambda ms: 2 * m * n * k / ms * 1e-9  # noqa: E731
        cublas = tflops(do_bench(lambda: torch.matmul(a, b), warmup=25, rep=100, return_mode="median"))
        print(f"{dt} {m}x{n}x{k}: cuBLAS {cublas:.1f} TFLOP/s", flush=True)
        for cfg in CONFIGS:
            row = []
            for name, mod in (("ours", ours), ("triton", theirs)):
                c = torch.empty((m, n), device="cuda", dtype=a.dtype)
                try:
                    mod.matmul(a, b, out=c, config=cfg)
                    torch.testing.assert_close(c.float(), ref.float(), rtol=2e-2, atol=2e-2)
                    row.append(tflops(do_bench(lambda: mod.matmul(a, b, out=c, config=cfg), warmup=25, rep=100,
                                               return_mode="median")))
                except Exception as e:  # a failed config keeps its row
                    print(f"  {name} {cfg}: {type(e).__name__}: {str(e)[:200]}")
                    row.append(float("nan"))
            print(f"  {cfg}  ours {row[0]:6.1f}  triton {row[1]:6.1f}  ours/triton {row[0] / row[1]:.2f}"
                  f"  ours/cuBLAS {row[0] / cublas:.2f}", flush=True)


if __name__ == "__main__":
    main()
