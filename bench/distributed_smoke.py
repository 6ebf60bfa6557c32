#!/usr/bin/env python
"""Multi-GPU smoke test through torch.distributed (NCCL): one process per GPU, each running the examples.

Each rank makes its GPU current (torch and CuPy), runs every GPU case of `examples/*.py` through the
example's own `run_case` (checked there against a float64 NumPy reference), then:
  - launches `vector_add` on rank-dependent torch tensors and all-reduces the result: the sum over ranks of
    (arange(n) + rank) + 1 must come back on every rank;
  - computes a float64 checksum of a softmax on the same seeded input on every rank; all-gathered, the
    checksums must agree bit for bit (same kernel, same input, different GPUs);
  - all-reduces its (cases passed, cases failed) counts.
Rank 0 prints the summary; the exit status is 0 only if every rank passed everything.

    python bench/distributed_smoke.py [--gpus N]          # spawns N processes (default: every GPU)
    torchrun --nproc_per_node=N bench/distributed_smoke.py

NCCL_NVLS_ENABLE=0 is set (NVLink multicast stays off on the lent machines).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("vector_add", "softmax", "layernorm", "giou_loss")


def load_example(name):
    sys.path.insert(0, str(ROOT / "examples"))
    spec = importlib.util.spec_from_file_location(f"examples_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rank_main(rank: int, world: int) -> int:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    sys.path.insert(0, str(ROOT))
    import cupy
    import numpy as np
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    cupy.cuda.Device(rank).use()
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    lines, passed, failed = [], 0, 0
    modules = {name: load_example(name) for name in EXAMPLES}
    import _harness as H

    for name, module in modules.items():
        for case in module.GPU_CASES:
            lib = H.pick_library(case["dtype"], True)
            if lib is None:
                continue
            try:
                lines.append(module.run_case(lib, timed=False, **case))
                passed += 1
            except Exception as error:       # a mismatch or a launch error: count it, say it, go on
                lines.append(f"FAIL {name} {case}: {type(error).__name__}: {error}")
                failed += 1

    # Our kernel's output goes through NCCL: every rank must get the sum over ranks.
    n = 1_000_003
    x = torch.arange(n, device="cuda", dtype=torch.float32) + rank
    out = modules["vector_add"].add(x, torch.ones_like(x))
    dist.all_reduce(out)
    want = world * torch.arange(n, device="cuda", dtype=torch.float32) + world * (world - 1) / 2 + world
    if torch.equal(out, want):
        passed += 1
    else:
        failed += 1
        lines.append(f"FAIL all-reduced vector_add: max error {(out - want).abs().max().item()}")

    # Same input, same kernel, every GPU: the results must agree exactly.
    host = np.random.default_rng(7).standard_normal((4096, 1000)).astype(np.float32)
    probs = modules["softmax"].softmax(torch.from_numpy(host).cuda())
    checksum = torch.tensor([probs.double().sum().item(), (probs.double() ** 2).sum().item()], device="cuda")
    gathered = [torch.empty_like(checksum) for _ in range(world)]
    dist.all_gather(gathered, checksum)
    if all(torch.equal(g, gathered[0]) for g in gathered):
        passed += 1
    else:
        failed += 1
        lines.append(f"FAIL softmax checksums differ across ranks: {[g.tolist() for g in gathered]}")

    counts = torch.tensor([passed, failed], device="cuda", dtype=torch.int64)
    dist.all_reduce(counts)
    for r in range(world):                     # one rank at a time, so the lines do not interleave
        if r == rank:
            print(f"[rank {rank} on cuda:{torch.cuda.current_device()} {torch.cuda.get_device_name()}]", flush=True)
            for line in lines:
                print("  " + line, flush=True)
        dist.barrier()
    total_passed, total_failed = counts.tolist()
    if rank == 0:
        print(f"distributed smoke: {world} ranks, {total_passed} checks passed, {total_failed} failed", flush=True)
    dist.destroy_process_group()
    return 0 if total_failed == 0 else 1


def _spawned(rank, world, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    try:
        results[rank] = rank_main(rank, world)
    except Exception:
        traceback.print_exc()
        results[rank] = 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=None, help="processes to start (default: every GPU)")
    args = parser.parse_args(argv)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:        # started by torchrun
        return rank_main(int(os.environ.get("LOCAL_RANK", os.environ["RANK"])), int(os.environ["WORLD_SIZE"]))
    import torch
    import torch.multiprocessing as mp

    world = args.gpus or torch.cuda.device_count()
    if world < 2:
        print(f"distributed_smoke.py needs at least 2 GPUs; {torch.cuda.device_count()} visible")
        return 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.get_context("spawn").Manager() as manager:        # the ranks' exit codes come back through it
        results = manager.dict()
        mp.start_processes(_spawned, args=(world, port, results), nprocs=world, start_method="spawn", join=True)
        return max(results.values(), default=2)


if __name__ == "__main__":
    sys.exit(main())
