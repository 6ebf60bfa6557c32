#!/usr/bin/env python
"""The host (Python) side of one derived-backward call, on any machine (no GPU): what
`kernel.backward[grid](...)` costs on top of its launches' driver calls.

The GPU's edges are faked as in bench/launch_cpu.py (C-level no-ops for CuPy's launch binding, a fake cubin),
the arrays by objects with CuPy's attributes. Timed, as bench/autodiff.py calls them: the layernorm backward
(4096 x 1024 fp16, accumulate=False: the main kernel and the dW + dB partial sums, 2 launches) and the GIoU
backward (640,448 boxes, accumulate=False and True: one launch), and, as the floor, one plain launch of a
kernel with four arguments. The machine is shared and loaded: candidates are timed interleaved, by this
thread's CPU time (time spent waiting for a core does not count), and the minimum over repeats is reported.

    python bench/autodiff_host_cpu.py [--n 300] [--repeats 15]
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "examples")]

import numpy as np  # noqa: E402

import launch_cpu  # noqa: E402
from transpiler.runtime import launcher as launcher_mod  # noqa: E402

_ptrs = itertools.count(1 << 40, 1 << 24)


class FakeCupyArray:
    """What the launch path and transpiler.autodiff read of a CuPy array."""

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.data = launch_cpu.SimpleNamespace(ptr=next(_ptrs), device_id=0)
        self.device = launch_cpu.SimpleNamespace(id=0)
        self.size = int(np.prod(self.shape))

    def fill(self, value):
        pass


FakeCupyArray.__module__ = "cupy._fake"      # the library test of transpiler.autodiff reads the module name


def fake_gpu():
    launch_cpu.fake_gpu()
    launch_cpu.launch_key._cupy_ndarray = FakeCupyArray
    launcher_mod.cupy_stream = lambda device: 0
    from transpiler.autodiff import partials
    partials.zeros_like_library = lambda a, shape: FakeCupyArray(shape, np.float32)
    from transpiler.runtime import variant
    variant.CompiledVariant.resident_programs = lambda self, device, num_warps: 9 * 132    # the H200's, this kernel


def calls():
    import giou_loss as G
    from autodiff_layernorm import layernorm_fwd
    import transpiler
    rows, cols = 4096, 1024
    x, y, dy, dx = (FakeCupyArray((rows, cols), np.float16) for _ in range(4))
    w, b = FakeCupyArray((cols,), np.float16), FakeCupyArray((cols,), np.float16)
    gw, gb = FakeCupyArray((cols,), np.float32), FakeCupyArray((cols,), np.float32)
    grads = {"X": dx, "W": gw, "B": gb, "Y": dy}

    def layernorm():
        layernorm_fwd.backward[(rows,)](x, w, b, y, cols, cols, 1e-5, BLOCK=1024, num_warps=4, grads=grads,
                                        accumulate=False)

    def layernorm_general():
        layernorm_fwd.backward._launch((rows,), (x, w, b, y, cols, cols, 1e-5),
                                       dict(BLOCK=1024, num_warps=4, grads=grads, accumulate=False))

    batch, n = 64, 10_007
    boxes = batch * n
    pred, target = FakeCupyArray((batch, n, 4), np.float32), FakeCupyArray((batch, n, 4), np.float32)
    loss, valid = FakeCupyArray((batch, n), np.float32), FakeCupyArray((batch, n), np.bool_)
    grad_pred, grad_loss = FakeCupyArray((batch, n, 4), np.float32), FakeCupyArray((batch, n), np.float32)
    grid = (transpiler.cdiv(boxes, G.BLOCK),)
    giou_grads = {"PRED": grad_pred, "LOSS": grad_loss}

    def giou(accumulate):
        G.giou_loss_kernel.backward[grid](pred, target, loss, valid, boxes, G.EPS, BLOCK=G.BLOCK, num_warps=4,
                                          grads=giou_grads, accumulate=accumulate)

    def giou_general(accumulate):
        G.giou_loss_kernel.backward._launch(grid, (pred, target, loss, valid, boxes, G.EPS),
                                            dict(BLOCK=G.BLOCK, num_warps=4, grads=giou_grads, accumulate=accumulate))

    plain = transpiler.jit(launch_cpu.tiny)
    px, py = FakeCupyArray((128,), np.float32), FakeCupyArray((128,), np.float32)
    out = {"layernorm backward (2 launches)": layernorm,
           "  the same, general path": layernorm_general,
           "giou backward, accumulate=False": lambda: giou(False),
           "  the same, general path  ": lambda: giou_general(False),
           "giou backward, accumulate=True": lambda: giou(True),
           "  the same, general path ": lambda: giou_general(True),
           "floor: one plain launch kernel[(1,)](x, y, n, s)": lambda: plain[(1,)](px, py, 100, 2.0)}
    for call in out.values():       # derive, build and make the launchers once
        call()
    return out


def interleaved_cpu_time(calls, n, repeats):
    """{name: min over `repeats` of this thread's CPU us per call of `n` back-to-back calls}."""
    import time
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.thread_time()
            for _ in range(n):
                call()
            best[name] = min(best[name], (time.thread_time() - start) / n * 1e6)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="calls per sample")
    parser.add_argument("--repeats", type=int, default=15, help="samples per candidate (the minimum is reported)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRANSPILER_CACHE_DIR", "/tmp/transpiler-autodiff-host-cache")
    fake_gpu()
    rows = interleaved_cpu_time(calls(), args.n, args.repeats)
    print(f"host CPU time of one call, GPU edges faked (min of {args.repeats} x {args.n} calls, interleaved):")
    for name, us in rows.items():
        print(f"  {name:50} {us:7.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
