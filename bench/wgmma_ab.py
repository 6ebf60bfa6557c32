#!/usr/bin/env python
"""Time the matmul example at one shape over a few tile configurations with the codegen switches this process
was started with (transpiler/targets.py SWITCHES; run it once per setting, each with its own
TRANSPILER_CACHE_DIR), every result checked against torch first:

    TRANSPILER_WGMMA_IN_FLIGHT=0 python bench/wgmma_ab.py [M N K] [--dtype float16]
"""
import argparse
import os
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matmul  # noqa: E402
from transpiler.targets import SWITCHES  # noqa: E402

CONFIGS = [
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", nargs="*", type=int, default=[4096, 4096, 4096])
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--configs", default="", help="comma-separated indices into CONFIGS (default: all)")
    args = ap.parse_args()
    configs = [CONFIGS[int(i)] for i in args.configs.split(",")] if args.configs else CONFIGS
    m, n, k = args.shape
    dt = getattr(torch, args.dtype)
    a = torch.randn((m, k), device="cuda", dtype=dt)
    b = torch.randn((k, n), device="cuda", dtype=dt) / k ** 0.5
    ref = torch.matmul(a, b).float()
    setting = " ".join(f"{name[len('TRANSPILER_'):]}={os.environ.get(name, d)}" for name, d in SWITCHES.items())
    for cfg in configs:
        c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
        matmul.matmul(a, b, out=c, config=cfg)
        rel = float((c.float() - ref).norm() / ref.norm())
        ms = do_bench(lambda: matmul.matmul(a, b, out=c, config=cfg), warmup=25, rep=100, return_mode="median")
        print(f"{setting}  {cfg}  {2 * m * n * k / ms * 1e-9:6.1f} TFLOP/s  rel.err {rel:.1e}", flush=True)


if __name__ == "__main__":
    main()
