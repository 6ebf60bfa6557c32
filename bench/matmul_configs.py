#!/usr/bin/env python
"""Sweep tile configurations of examples/matmul.py at one shape, with cuBLAS (torch) in the same run:

    python bench/matmul_configs.py [M N K] [--dtype float16]

Prints TFLOP/s per configuration (median of CUDA-event timings), the chosen registers/shared memory, and the
ratio to cuBLAS. Used to pick `config_for` in the example and the bench.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import cupy  # noqa: E402
import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
import matmul  # noqa: E402

CONFIGS = [
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=5),
    dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=16, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", nargs="*", type=int, default=[4096, 4096, 4096])
    ap.add_argument("--dtype", default="float16")
    args = ap.parse_args()
    m, n, k = args.shape
    rng = np.random.default_rng(0)
    a = cupy.asarray(rng.standard_normal((m, k)).astype(args.dtype))
    b = cupy.asarray(rng.standard_normal((k, n)).astype(args.dtype))
    c = cupy.empty((m, n), args.dtype)
    flop = 2 * m * n * k
    base = None
    try:
        import torch
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        tc = torch.empty((m, n), dtype=ta.dtype, device="cuda")
        base = flop / H.gpu_time_ms(lambda: torch.matmul(ta, tb, out=tc)) / 1e9
        print(f"cuBLAS (torch)  {base:7.1f} TFLOP/s")
    except ImportError:
        pass
    for cfg in CONFIGS:
        try:
            tf = flop / H.gpu_time_ms(lambda: matmul.matmul(a, b, out=c, config=cfg)) / 1e9
            var = matmul.matmul_kernel.compiled_variant(a, b, c, m, n, k, k, 1, n, 1, n, 1, ACTIVATION="", **cfg)
            ratio = f"{tf / base:5.2f} of cuBLAS" if base else ""
            print(f"{cfg}  {tf:7.1f} TFLOP/s {ratio}  smem {var.shared_bytes // 1024} KiB")
        except Exception as e:  # a config past the device's limits
            print(f"{cfg}  failed: {type(e).__name__}: {str(e)[:120]}")


if __name__ == "__main__":
    main()
