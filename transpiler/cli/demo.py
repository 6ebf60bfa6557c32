"""`python -m transpiler demo` and `python -m transpiler explain EXAMPLE.py` (an example's own cases).

The demo transpiles the examples, writes their `.cu` files, runs or compiles them and prints a table. With a GPU
each example runs and checks itself against NumPy; without one, the CPU interpreter checks it and NVRTC (when
installed) compiles every generated file for sm_90a, reporting registers and spills. The examples come from
`transpiler/examples/` in an installed wheel, the top-level `examples/` in a checkout.
"""
from __future__ import annotations

import importlib.util
import io
import os
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

EXAMPLES = ["vector_add", "softmax", "layernorm", "giou_loss", "matmul", "attention"]


def _examples_dir() -> Path:
    """The demo's kernels: `transpiler/examples/` in an installed wheel, the top-level `examples/` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    installed = here / "examples"
    return installed if installed.is_dir() else here.parent / "examples"


def _load(name):
    folder = _examples_dir()
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"examples_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels(module):
    return [v for v in vars(module).values() if getattr(v, "__transpiler_kernel__", False)]


def _also_generate_source_when_interpreting():
    """Without a GPU the examples run on the interpreter; generate the CUDA of each launch as well (the NumPy
    arrays stand in for device arrays), so it can be written out and compiled."""
    from ..runtime.kernel import Kernel
    interpret = Kernel._interpret

    def interpret_and_generate(self, grid, args, kwargs):
        self.cuda_source(*args, **kwargs)
        return interpret(self, grid, args, kwargs)
    Kernel._interpret = interpret_and_generate


def demo(out_dir: str) -> int:
    from ..runtime import gpu_available
    from ..runtime.compiler import compile_offline, nvrtc_available
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRANSPILER_DUMP_DIR"] = str(out)
    on_gpu = gpu_available()
    can_compile = nvrtc_available()
    if not on_gpu:
        _also_generate_source_when_interpreting()
    rows, failed = [], 0
    for name in EXAMPLES:
        module = _load(name)
        t0 = time.perf_counter()
        buf = io.StringIO()
        try:
            with redirect_stdout(buf):
                status = module.main()
            ok = not status
            result = "ran on GPU, matches NumPy" if on_gpu else "interpreted on CPU, matches NumPy"
            if not ok:
                result = "MISMATCH"
        except Exception as e:  # report and go on with the other examples
            ok, result = False, f"error: {type(e).__name__}: {str(e).splitlines()[0]}"
        failed += not ok
        compiled = ""
        if not on_gpu and can_compile:
            for kernel in _kernels(module):
                for var in kernel.variants.values():
                    res = compile_offline(var.source, "sm_90a", name=f"{var.name}.cu")
                    compiled = f"sm_90a: {res.registers} regs, {res.spill_bytes} B spills"
        rows.append((name, result, compiled, f"{time.perf_counter() - t0:.1f}s", buf.getvalue().strip()))
    files = sorted(p.name for p in out.glob("*.cu"))
    print(f"\ntranspiler demo  ({'GPU' if on_gpu else 'no GPU'}; .cu files in {out}/)\n")
    print(f"{'example':<12} {'result':<38} {'NVRTC':<32} {'time':>6}")
    print("-" * 92)
    for name, result, compiled, t, _ in rows:
        print(f"{name:<12} {result:<38} {compiled:<32} {t:>6}")
    print(f"\n{len(files)} generated files: {', '.join(files[:6])}{' ...' if len(files) > 6 else ''}")
    for name, _, _, _, log in rows:
        if log:
            print(f"\n[{name}]\n{log}")
    return 1 if failed else 0


class _Recorded(Exception):
    """Raised by a launch under `explain` once its arguments are recorded: nothing runs."""


def explain_example(path: str, cpu_cases: bool = False) -> int:
    """Print the explain report of every specialization an example's cases launch, without running them.

    The example's `run_case` builds each case's inputs as NumPy arrays (they stand in for device arrays: only
    dtype and alignment select a specialization); its launch is recorded and stopped there.
    """
    from ..runtime.kernel import Kernel
    file = Path(path)
    sys.path.insert(0, str(file.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"explain_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    launches = []

    def record(self, grid, args, kwargs):
        launches.append((self, args, dict(kwargs)))
        raise _Recorded

    saved = Kernel._interpret
    Kernel._interpret = record
    try:
        for case in getattr(module, "CPU_CASES" if cpu_cases else "GPU_CASES", []):
            try:
                with redirect_stdout(io.StringIO()):
                    module.run_case("numpy", timed=False, **case)
            except _Recorded:
                pass
            except TypeError as e:  # bfloat16: NumPy has no such dtype
                print(f"# skipped case {case}: {e}\n")
    finally:
        Kernel._interpret = saved
    seen = set()
    for kernel, args, kwargs in launches:
        text = kernel.explain(*args, **kwargs)
        if text not in seen:
            seen.add(text)
            print(text)
    if not launches:
        print(f"{path}: no kernel launch recorded (does it define GPU_CASES and run_case(lib, ...)?); for any kernel "
              "file give --kernel NAME --signature \"*fp32:16,i32,...\" (and -D NAME=VALUE for constexprs)")
        return 1
    return 0
