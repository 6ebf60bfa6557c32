#!/usr/bin/env python
"""The Python side of one launch, candidates side by side, on any machine (no GPU): what `runtime/` costs a
launch on top of the driver call.

The GPU's edges are replaced by C-level no-ops standing for CuPy's Cython binding (`launchKernel` is
`"".format`, which takes any arguments and returns at C speed; `ctxGetCurrent` an `itertools.repeat` iterator's
`__next__`), the arrays by objects with CuPy's `.data.ptr`, `.data.device_id` and `.dtype`, so what is timed is
our Python alone. Candidates, each the whole `kernel[(1,)](x, y, 100, 2.0)` of a 4-parameter kernel (and the
same with a constexpr `BLOCK=128` given by keyword, as Triton code does, on both paths):
    general path, lock   `Kernel._launch` + the binder + a launcher that packs under a lock (the path before
                         runtime/grid_launch.py)
    general path, pool   the same with the launcher's buffer pool (`launcher._buffer_pool`)
    grid function, lock  the generated `kernel[grid]` function (runtime/grid_launch.py), lock
    grid function, pool  the generated function, buffer pool: what `kernel[grid]` does now
and the parts: the binder alone, the launcher dict lookup, a launcher's `launch` under a lock and with the pool.
The machine this runs on is shared and loaded, so the candidates are timed interleaved (each repeat times every
candidate once) and the minimum over repeats is reported: the least disturbed sample of each.

    python bench/launch_cpu.py [--n 20000] [--repeats 40]
"""
from __future__ import annotations

import argparse
import itertools
import struct
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import transpiler  # noqa: E402
import transpiler.language as tl  # noqa: E402
from transpiler.runtime import compiler, kernel as kernel_mod, launch_key  # noqa: E402
from transpiler.runtime import launcher as launcher_mod  # noqa: E402

CONTEXT = 1


def tiny(X, Y, n, scale):
    offs = tl.arange(0, 128)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


def tiny_block(X, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


class FakeCupy:
    def __init__(self, ptr):
        self.data = SimpleNamespace(ptr=ptr, device_id=0)
        self.dtype = np.dtype(np.float32)


class CLevelDriver:
    """The driver object's side: no raw ctypes functions (so no `ex` plan), CuPy's binding faked in C."""

    def __init__(self):
        self.binding = SimpleNamespace(launchKernel="".format, ctxGetCurrent=itertools.repeat(CONTEXT).__next__)

    def cupy_binding(self):
        return self.binding

    def raw_launch_functions(self):
        return ()

    def ctxSetCurrent(self, context):
        pass


def _locked_plan(launcher):
    """The `cupy` plan as it was before the buffer pool: one buffer, packed under the launcher's lock."""
    import threading
    binding = launcher_mod.driver.cupy_binding()
    launch_kernel, get_current = binding.launchKernel, binding.ctxGetCurrent
    launcher._lay_out()
    buffer, offset, params = launcher._buffer, launcher._offset, launcher._params
    pack, function, context, block, shared, name = launcher._pack, launcher._func, launcher.context, \
        launcher.block, launcher.shared_bytes, launcher.name
    lock = threading.Lock()
    record = launcher_mod.recent_launches.append

    def launch(gx, gy, gz, values, stream):
        with lock:
            try:
                pack(buffer, offset, *values)
            except struct.error:
                raise launcher._misfit(values) from None
            current = get_current()
            if current == context:
                launch_kernel(function, gx, gy, gz, block, 1, 1, shared, stream, params, 0)
            else:
                raise RuntimeError("timed in the arrays' context only")
            record((name, gx, gy, gz))
    return launch


def fake_gpu():
    compiler.compile_tuned = lambda source, name, arch, shared_bytes=0: (b"\x7fELF", None)
    compiler.load_function = lambda cubin, name, device: (None, SimpleNamespace(ptr=1), CONTEXT)
    compiler.device_arch = lambda device: "sm_90a"
    launcher_mod.driver = CLevelDriver()
    launcher_mod.PLANS["cupy-lock"] = _locked_plan
    launch_key.current_device = lambda: 0
    stream = SimpleNamespace(ptr=0)
    kernel_mod.cupy_stream = lambda device: stream.ptr
    launch_key._cupy_ndarray = FakeCupy


def kernel_on(plan, x, y):
    launcher_mod.forced_plan = plan
    try:
        k = transpiler.jit(tiny)
        k[(1,)](x, y, 100, 2.0)
    finally:
        launcher_mod.forced_plan = None
    (launcher,) = k._launchers.values()
    assert launcher.plan == plan, launcher.plan
    return k, launcher


def candidates():
    x, y = FakeCupy(1 << 40), FakeCupy((1 << 40) + 4096)
    locked, locked_launcher = kernel_on("cupy-lock", x, y)
    pooled, pooled_launcher = kernel_on("cupy", x, y)
    args = (x, y, 100, 2.0)
    key, values, _, _ = pooled._binder(args, 4, 3)
    launchers = pooled._launchers
    on_locked, on_pooled = locked[(1,)], pooled[(1,)]
    block = transpiler.jit(tiny_block)
    block[(1,)](x, y, 100, 2.0, BLOCK=128)
    return {
        "general path, lock": lambda: locked._launch((1,), args, 4, 3, None, {}),
        "general path, pool": lambda: pooled._launch((1,), args, 4, 3, None, {}),
        "grid function, lock": lambda: on_locked(x, y, 100, 2.0),
        "grid function, pool": lambda: on_pooled(x, y, 100, 2.0),
        "ours: kernel[(1,)](...)": lambda: pooled[(1,)](x, y, 100, 2.0),
        "ours, BLOCK= by keyword": lambda: block[(1,)](x, y, 100, 2.0, BLOCK=128),
        "general path, BLOCK= by kw": lambda: block._launch((1,), (x, y, 100, 2.0), 4, 3, None, {"BLOCK": 128}),
        "part: binder": lambda: pooled._binder(args, 4, 3),
        "part: launcher lookup": lambda: launchers.get(key),
        "part: launch, lock": lambda: locked_launcher.launch(1, 1, 1, values, 0),
        "part: launch, pool": lambda: pooled_launcher.launch(1, 1, 1, values, 0),
        "floor: an empty Python call": lambda: None,
    }


def interleaved(calls, n, repeats):
    """{name: min over `repeats` of the us per call of `n` back-to-back calls}, every candidate timed once per
    repeat."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(n):
                call()
            best[name] = min(best[name], (time.perf_counter() - start) / n * 1e6)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000, help="calls per sample")
    parser.add_argument("--repeats", type=int, default=40, help="samples per candidate (the minimum is reported)")
    args = parser.parse_args(argv)
    import os
    os.environ.setdefault("TRANSPILER_CACHE_DIR", "/tmp/transpiler-launch-cpu-cache")
    fake_gpu()
    rows = interleaved(candidates(), args.n, args.repeats)
    print(f"Python host time of one launch, GPU edges faked at C level (min of {args.repeats} x {args.n} calls, "
          f"interleaved):")
    for name, us in rows.items():
        print(f"  {name:30} {us:6.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
