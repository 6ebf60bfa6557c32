#!/usr/bin/env python
"""A/B of the attention example on one GPU: ours under pipeline variants against Triton on the same source.

For fp16 B4 H32 S4096 D128 (issue 12's shape), full and causal, each variant is checked once against torch's SDPA,
then timed with `triton.testing.do_bench` (median). Variants: P @ V's wgmma group waited for in its iteration or
left in flight (`TRANSPILER_WGMMA_CHAIN_IN_FLIGHT`), 3 or 4 stages; Triton at 3 and 4 stages. The table of
2026-12-01 is in bench/NOTES.md.

    python bench/attention_ab.py [--budget-s 45]
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from twins import load_twins  # noqa: E402

VARIANTS = [("ours", "0", 3), ("ours", "1", 3), ("ours", "1", 4), ("ours", "0", 4), ("triton", None, 3),
            ("triton", None, 4)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=0, help="start no variant after this many seconds")
    args = parser.parse_args()
    import torch
    import triton
    twins = load_twins(Path(__file__).resolve().parent.parent / "examples" / "attention.py")
    z, h, n, d = shape = (4, 32, 4096, 128)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
    t0 = time.time()
    for causal in (False, True):
        reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        flops = 4 * z * h * n * n * d / (2 if causal else 1)
        for who, chain, stages in VARIANTS:
            if args.budget_s and time.time() - t0 > args.budget_s:
                print("time budget spent")
                return 0
            os.environ["TRANSPILER_WGMMA_CHAIN_IN_FLIGHT"] = chain or "0"   # read per variant build
            module = twins.ours if who == "ours" else twins.triton
            out = torch.full_like(q, float("nan"))
            config = dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=stages)

            def run():
                return module.attention(q, k, v, out=out, causal=causal, config=config)
            run()
            error = (out.float() - reference.float()).abs().max().item()
            ms = triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median")
            print(f"{'causal' if causal else 'full':6} {who:6} in-flight={chain or '-'} stages={stages}: "
                  f"{flops / ms / 1e9:6.1f} TFLOP/s, max error against SDPA {error:.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
