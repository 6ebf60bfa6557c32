#!/usr/bin/env python
"""Host time per launch of a tiny 4-argument kernel, side by side in one run: ours (CuPy arrays, torch tensors,
and as a torch custom op through torch's dispatcher), Triton, a raw CuPy RawKernel, and one torch op.

Each launcher runs N times back to back with no synchronisation; the wall time divided by N is what the
host pays per launch. N stays well under the driver's queue of pending launches (about a thousand) and the
queue is emptied between repeats, so that a launcher faster than the GPU's rate of tiny kernels (a few µs
each) still measures the host and not the GPU. Reported: the median over the repeats, in microseconds.

Why it matters: launch overhead is a product feature (docs/design: Triton pays ~12 us, we aim under 4; a raw
RawKernel launch costs 6.4-8.0 us on the H200 machine, torch ~11 us).

    python bench/launch_overhead.py [--out DIR] [--n 500] [--repeats 21]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from twins import BENCH, load_twins  # noqa: E402

RAW_SOURCE = r"""
extern "C" __global__ void tiny(const float* x, float* y, int n, float scale) {
    int i = threadIdx.x;
    if (i < n) y[i] = x[i] * scale;
}
"""
N_VALID = 100
SCALE = 2.0


def per_launch_us(launch, sync, n: int, repeats: int) -> float:
    """Median over `repeats` of (wall time of `n` unsynchronised launches) / n, in microseconds."""
    for _ in range(20):  # compile, fill caches, settle the allocator
        launch()
    sync()
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        for _ in range(n):
            launch()
        samples.append((time.perf_counter() - start) / n * 1e6)
        sync()
    return statistics.median(samples)


def launchers(prepare_ours=None) -> dict:
    """name -> builder; a builder returns (launch, output, input) or raises when that launcher is unavailable.
    `prepare_ours(kernel)`: the kernel object our launchers use instead of ours (bench/launch_path.py: the same
    kernel on the Python launch path)."""
    import cupy
    import numpy as np
    import torch

    twins = load_twins(BENCH / "kernels.py")
    x_t = torch.randn(256, device="cuda")

    def flavor(name):
        module = getattr(twins, name)
        if module is None:
            raise RuntimeError(twins.errors[name])
        if name == "ours" and prepare_ours is not None:
            return prepare_ours(module.tiny_kernel)
        return module.tiny_kernel

    def ours_cupy():
        k, x, y = flavor("ours"), cupy.asarray(x_t.cpu().numpy()), cupy.zeros(256, cupy.float32)
        return lambda: k[(1,)](x, y, N_VALID, SCALE, num_warps=4), y, x

    def ours_torch():
        k, y = flavor("ours"), torch.zeros(256, device="cuda")
        return lambda: k[(1,)](x_t, y, N_VALID, SCALE, num_warps=4), y, x_t

    def ours_custom_op():
        import transpiler
        k, y = flavor("ours"), torch.zeros(256, device="cuda")

        def tiny(x, y):
            k[(1,)](x, y, N_VALID, SCALE, num_warps=4)
        # An explicit schema: this module's annotations are strings (`from __future__ import annotations`) and
        # torch is not imported at its top.
        op = transpiler.custom_op("transpiler_bench::tiny", tiny, mutates_args=("y",),
                                  schema="(Tensor x, Tensor(a!) y) -> ()")
        return lambda: op(x_t, y), y, x_t

    def triton_torch():
        k, y = flavor("triton"), torch.zeros(256, device="cuda")
        return lambda: k[(1,)](x_t, y, N_VALID, SCALE, num_warps=4), y, x_t

    def raw_kernel():
        raw, x, y = cupy.RawKernel(RAW_SOURCE, "tiny"), cupy.asarray(x_t.cpu().numpy()), cupy.zeros(256, cupy.float32)
        # RawKernel passes Python ints as int64 and floats as float64: give the C types explicitly.
        args = (x, y, np.int32(N_VALID), np.float32(SCALE))
        return lambda: raw((1,), (128,), args), y, x

    def torch_mul():
        y = torch.zeros(256, device="cuda")
        return lambda: torch.mul(x_t, SCALE, out=y), y, x_t

    return {"ours, CuPy arrays": ours_cupy, "ours, torch tensors": ours_torch, "ours, torch custom op": ours_custom_op,
            "triton, torch tensors": triton_torch,
            "cupy.RawKernel": raw_kernel, "torch.mul (one op)": torch_mul}


def to_numpy(a):
    return a.get() if type(a).__module__.startswith("cupy") else a.cpu().numpy()


def check(name, launch, y, x):
    """One launch must compute y[:100] = 2 x[:100] (torch.mul computes all 256, which is fine)."""
    import numpy as np

    launch()
    if not np.allclose(to_numpy(y)[:N_VALID], SCALE * to_numpy(x)[:N_VALID]):
        raise AssertionError(f"{name}: wrong result")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write launch_overhead.json here")
    parser.add_argument("--n", type=int, default=500, help="launches per repeat")
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("launch_overhead.py needs a CUDA GPU with torch; none is visible")
        return 2
    results, failed = {}, {}
    for name, build in launchers().items():
        try:
            launch, y, x = build()
            check(name, launch, y, x)
            results[name] = per_launch_us(launch, torch.cuda.synchronize, args.n, args.repeats)
        except Exception as error:
            failed[name] = f"{type(error).__name__}: {error}"[:300]

    print(f"host time per launch, tiny 4-argument kernel ({args.n} launches x {args.repeats} repeats, median):")
    for name, us in results.items():
        print(f"  {name:24} {us:6.2f} us")
    for name, error in failed.items():
        print(f"  {name:24} failed: {error}")
    from transpiler.runtime import launcher
    plan = launcher.forced_plan or launcher.default_plan()
    print(f"  (ours: launch plan {plan}; target: at or below cupy.RawKernel, toward 4 us)")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "launch_overhead.json").write_text(json.dumps(
            {"us_per_launch": results, "errors": failed, "n": args.n, "repeats": args.repeats,
             "gpu": torch.cuda.get_device_name()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
