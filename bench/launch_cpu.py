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
    grid function, pool  the generated function, buffer pool: the Python path of `kernel[grid]`
    compiled             `kernel[grid]` through the compiled launch path (templates/native_launch.c), the driver's
                         three functions C no-ops built here (left out where no C compiler runs); a tuple grid
                         and a callable one (Triton's `lambda meta: ...`, made anew at each call as in wrappers)
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
from transpiler.runtime import launcher as launcher_mod, native_launch  # noqa: E402

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

    def native_functions(self):
        """cuLaunchKernel, cuCtxGetCurrent and cuCtxSetCurrent as C no-ops, for the compiled launch path (None
        where no C compiler builds them: that candidate is then left out)."""
        return _c_no_ops()


_NO_OPS = r"""
int launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
           void *stream, void **params, void **extra) { return 0; }
int get_current(void **ctx) { *ctx = (void *)1; return 0; }
int set_current(void *ctx) { return 0; }
"""
_no_ops = []


def _c_no_ops():
    if not _no_ops:
        import ctypes
        import subprocess
        import tempfile
        folder = Path(tempfile.mkdtemp(prefix="launch-cpu-"))
        (folder / "no_ops.c").write_text(_NO_OPS)
        try:
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(folder / "no_ops.c"), "-o", str(folder / "no_ops.so")],
                           check=True, capture_output=True)
            lib = ctypes.CDLL(str(folder / "no_ops.so"))
            _no_ops.append(tuple(ctypes.cast(getattr(lib, n), ctypes.c_void_p).value
                                 for n in ("launch", "get_current", "set_current")))
        except (OSError, subprocess.CalledProcessError):
            _no_ops.append(None)
    return _no_ops[0]


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


def kernel_on(plan, x, y, native=False, fn=tiny, **constexprs):
    """A fresh kernel launched once under launch plan `plan`, its `kernel[grid]` the compiled path or not."""
    launcher_mod.forced_plan = plan
    native_launch.enabled = native
    try:
        k = transpiler.jit(fn)
        k[(1,)](x, y, 100, 2.0, **constexprs)
        k[(1,)](x, y, 100, 2.0, **constexprs)       # the compiled path learns its plan at the second launch
    finally:
        launcher_mod.forced_plan = None
        native_launch.enabled = True
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
    block, _ = kernel_on("cupy", x, y, fn=tiny_block, BLOCK=128)
    compiled = {}
    if _c_no_ops() is not None and native_launch.module() is not None:
        fast, _ = kernel_on("cupy", x, y, native=True)
        fast_block, _ = kernel_on("cupy", x, y, native=True, fn=tiny_block, BLOCK=128)
        on_fast = fast[(1,)]
        assert fast._native_table.counts()["compiled"] == 1, fast._native_table.counts()
        compiled = {
            "compiled: kernel[lambda meta: ...]": lambda: fast_block[lambda meta: (1,)](x, y, 100, 2.0, BLOCK=128),
            "compiled: kernel[(1,)](...)": lambda: fast[(1,)](x, y, 100, 2.0),
            "compiled, BLOCK= by keyword": lambda: fast_block[(1,)](x, y, 100, 2.0, BLOCK=128),
            "compiled: the grid object alone": lambda: on_fast(x, y, 100, 2.0),
        }
    else:
        print(f"compiled launch path left out: {native_launch.unavailable_reason() or 'no C no-ops'}")
    return {**compiled,
        "general path, lock": lambda: locked._launch((1,), args, 4, 3, None, {}),
        "general path, pool": lambda: pooled._launch((1,), args, 4, 3, None, {}),
        "grid function, lock": lambda: on_locked(x, y, 100, 2.0),
        "grid function, pool": lambda: on_pooled(x, y, 100, 2.0),
        "ours: kernel[(1,)](...)": lambda: pooled[(1,)](x, y, 100, 2.0),
        "ours, BLOCK= by keyword": lambda: block[(1,)](x, y, 100, 2.0, BLOCK=128),
        "ours, kernel[lambda meta: ...]": lambda: block[lambda meta: (1,)](x, y, 100, 2.0, BLOCK=128),
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
