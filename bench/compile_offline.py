"""Cold compile time without a GPU, ours and Triton's, measured the same way on the same machine.

`bench/compile_time.py --offline` runs this file once per kernel and compiler, each in a fresh process on empty
caches. The child runs the kernel module's own host wrapper (softmax fp32 8192x4096, matmul fp16 4096^3, the
causal attention forward fp16 [4, 16, 2048, 128]) on host arrays, with `_harness.launcher` replaced by a stand-in
that keeps the launch's arguments instead of launching; then it compiles what that launch would compile, for an
sm_90a device (H200):
  ours    the launch's path from the bound arguments on: the launch binder, parse -> IR, analysis, emission,
          NVRTC (`CompiledVariant.cubin`, so the occupancy tuning's second NVRTC run is counted when it happens),
          with NVRTC's own `-time` report of its phases;
  triton  the launch's path of `JITFunction.run` from the bound arguments on: its binder (specialization), then
          `triton.compile` to a cubin for GPUTarget("cuda", 90, 32) through its bundled ptxas, with the time of
          each of its stages (ttir, ttgir, llir, ptx, cubin).
`compile_s` is wall time, `compile_cpu_s` CPU time (with ptxas' as a child process): on a loaded machine the
second is the one to compare. Imports (ours: our passes, libcst, Jinja, CuPy's NVRTC; Triton: triton and torch) are timed apart: a launch in a
fresh process pays them too, but they do not depend on the kernel.

    python bench/compile_offline.py KERNEL FLAVOR     (one measurement in this process; prints one JSON line)
"""
from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ATTENTION_SHAPE = (4, 16, 2048, 128)   # batch, heads, sequence, head dim (as compile_time.py)
ARCH = "sm_90a"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (Triton's ptxas runs as one): on a shared machine the
    wall clock also counts the other processes' time slices, this does not."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Captured(Exception):
    """Raised by the stand-in launcher once it holds the launch's arguments."""

    def __init__(self, kernel, args, kwargs):
        super().__init__("launch captured")
        self.kernel, self.args, self.kwargs = kernel, args, kwargs


class CapturingLauncher:
    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            raise Captured(self.kernel, args, kwargs)
        return launch


def capture_launch(kernel_name: str, flavor: str, array):
    """`(kernel object, args, kwargs)` of the launch the kernel module's host wrapper makes on arrays of
    `array(shape, dtype)`."""
    sys.path.insert(0, str(HERE))
    from twins import BENCH, EXAMPLES, load
    import _harness
    _harness.launcher = lambda kernel, a: CapturingLauncher(kernel)
    if kernel_name == "softmax":
        module = load(EXAMPLES / "softmax.py", flavor)
        call = lambda: module.softmax(array((8192, 4096), "float32"))  # noqa: E731
    elif kernel_name == "attention":
        module = load(BENCH / "attention_kernels.py", flavor)
        call = lambda: module.attention(*(array(ATTENTION_SHAPE, "float16") for _ in range(3)))  # noqa: E731
    elif kernel_name == "matmul":
        module = load(BENCH / "kernels.py", flavor)
        call = lambda: module.matmul(array((4096, 4096), "float16"), array((4096, 4096), "float16"))  # noqa: E731
    else:
        raise SystemExit(f"unknown kernel {kernel_name!r}: softmax, matmul or attention")
    try:
        call()
    except Captured as launch:
        return launch.kernel, launch.args, launch.kwargs
    raise RuntimeError(f"the {kernel_name} wrapper launched nothing")


def measure_ours(kernel_name: str) -> dict:
    clock = time.perf_counter
    started = clock()
    import numpy as np
    import transpiler  # noqa: F401
    from transpiler.analysis import analyze  # noqa: F401   (the lazy imports a first compile makes)
    from transpiler.emit_cuda import emit_kernel  # noqa: F401
    from transpiler.parse import build_kernel_ir  # noqa: F401
    from transpiler.runtime import build_events, compiler
    from cupy.cuda import nvrtc  # noqa: F401
    imported = clock()
    kernel, args, kwargs = capture_launch(kernel_name, "ours", lambda shape, dtype: np.zeros(shape, dtype))
    captured = clock()

    kwargs = dict(kwargs)
    num_warps, num_stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
    steps = {}
    real = {}

    def timed(module, name, label):
        real[(module, name)] = original = getattr(module, name)

        def wrapper(*a, **k):
            t = clock()
            try:
                return original(*a, **k)
            finally:
                steps[label] = steps.get(label, 0.0) + clock() - t
        setattr(module, name, wrapper)

    import transpiler.analysis as analysis_module
    import transpiler.emit_cuda as emit_module
    import transpiler.parse as parse_module
    timed(parse_module, "build_kernel_ir", "parse to IR")
    timed(analysis_module, "analyze", "analysis")
    timed(emit_module, "emit_kernel", "emission")
    timed(compiler, "compile_cubin", "NVRTC")
    report_dir = tempfile.mkdtemp(prefix="nvrtc-time-")
    reports = []
    real_options = compiler.nvrtc_options

    def options_with_time(arch, extra=()):
        reports.append(os.path.join(report_dir, f"{len(reports)}.csv"))
        return tuple(real_options(arch, extra)) + (f"-time={reports[-1]}",)
    compiler.nvrtc_options = options_with_time
    nvrtc_runs = []
    build_events.subscribe(lambda event: nvrtc_runs.append(event.options) if event.kind == "nvrtc" else None)

    t0, cpu0 = clock(), cpu_seconds()
    values = kernel._bind_for_compile(tuple(args), kwargs, num_warps)
    key = kernel.spec_key(values)
    t1 = clock()
    variant = kernel.variant(key, values, num_warps, num_stages, ARCH)
    source = variant.source
    cubin = variant.cubin(ARCH)
    done, cpu1 = clock(), cpu_seconds()

    from transpiler.runtime.occupancy import cubin_resources
    resources = cubin_resources(cubin)
    return {"flavor": "ours", "kernel": kernel_name, "imports_s": imported - started,
            "compile_s": done - t0, "compile_cpu_s": cpu1 - cpu0, "cuda_lines": len(source.splitlines()),
            "nvrtc_runs": len(nvrtc_runs), "registers": resources.registers if resources else None,
            "stack_frame_bytes": resources.frame_bytes if resources else None,
            "split_s": {"wrapper to launch arguments": captured - imported, "launch binder": t1 - t0, **steps},
            "nvrtc_phases_ms": _nvrtc_phases(reports)}


def _nvrtc_phases(reports) -> dict:
    phases = {}
    for report in reports:
        if not os.path.exists(report):
            continue
        for line in open(report).read().splitlines()[1:]:
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == 4 and fields[3] == "ms":
                phases[fields[1]] = phases.get(fields[1], 0) + float(fields[2])
    return phases


def measure_triton(kernel_name: str) -> dict:
    clock = time.perf_counter
    started = clock()
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature
    imported = clock()
    fn, args, kwargs = capture_launch(kernel_name, "triton",
                                      lambda shape, dtype: torch.zeros(shape, dtype=getattr(torch, dtype)))
    captured = clock()

    stages = {}
    t0, cpu0 = clock(), cpu_seconds()
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    real_add_stages = backend.add_stages

    def add_timed_stages(stage_map, options, language):     # each stage's time, as Triton runs them in turn
        real_add_stages(stage_map, options, language)
        for name, stage in list(stage_map.items()):
            def timed_stage(src, metadata, _stage=stage, _name=name):
                t = clock()
                try:
                    return _stage(src, metadata)
                finally:
                    stages[_name] = stages.get(_name, 0.0) + clock() - t
            stage_map[name] = timed_stage
    backend.add_stages = add_timed_stages
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = dict(kwargs, debug=False)
    bound_args, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound_args, specialization, options)
    t1 = clock()
    import triton.compiler.compiler as compiler_module
    real_make_backend = compiler_module.make_backend
    compiler_module.make_backend = lambda t: backend            # triton.compile makes its own: use the timed one
    try:
        compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target,
                                  options=options.__dict__)
    finally:
        compiler_module.make_backend = real_make_backend
    done, cpu1 = clock(), cpu_seconds()
    from transpiler.runtime.occupancy import cubin_resources       # reads any cubin's resource report
    resources = cubin_resources(compiled.asm["cubin"])
    return {"flavor": "triton", "kernel": kernel_name, "imports_s": imported - started, "compile_s": done - t0,
            "compile_cpu_s": cpu1 - cpu0, "ptx_lines": len(compiled.asm["ptx"].splitlines()), "registers": resources.registers if resources else None,
            "stack_frame_bytes": resources.frame_bytes if resources else None,
            "split_s": {"wrapper to launch arguments": captured - imported, "binder (specialization)": t1 - t0,
                        **{f"stage {k}": v for k, v in stages.items()}}}


def main(argv=None) -> int:
    kernel_name, flavor = (argv or sys.argv[1:])[:2]
    measure = {"ours": measure_ours, "triton": measure_triton}[flavor]
    print(json.dumps(measure(kernel_name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
