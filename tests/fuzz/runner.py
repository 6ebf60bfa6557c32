"""Running generated cases: load the source as a module, make inputs, run a path, compare with the evaluation.

Paths: the interpreter (`kernel.interpret`), NVRTC on the generated CUDA (several kernels per translation unit,
for speed), and on a GPU our compiled kernel and Triton's build of the same file (bench/fuzz.py). Outputs are
compared exactly where the DAG says a value is exact (every integer, and floats computed without rounding) and
elsewhere within the tolerance of the least precise float type rounded in on the value's path, scaled by the
largest magnitude met on the way (`path_tolerance`).
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np

from .evaluate import np_dtype, poison
from .triton_types import NOISE, is_float, is_int


def write_module(case, directory) -> Path:
    path = Path(directory) / f"{case.kernel_name}.py"
    path.write_text(case.source)
    return path


def load_ours(path: Path):
    name = f"_fuzz_ours_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def is_family(case) -> bool:
    return hasattr(case, "family")


def expected_outputs(case, inputs):
    """The reference outputs: the NumPy evaluation of a DAG, or the family's own."""
    if is_family(case):
        return [e.copy() for e in case.expected]
    from .evaluate import evaluate
    return evaluate(case, inputs)


def make_inputs(case, rng):
    if is_family(case):
        return [a.copy() for a in case.inputs]
    total = int(np.prod(case.sizes))
    arrays = []
    for inp in case.inputs:
        if is_int(inp.dtype):
            a = rng.integers(inp.lo, inp.hi, total, endpoint=True, dtype=np.int64)
        elif inp.scale is not None:
            k = 2.0**inp.scale
            a = rng.integers(int(inp.lo * k), int(inp.hi * k), total, endpoint=True) / k
        else:
            a = rng.uniform(inp.lo, inp.hi, total)
        arrays.append(np.asarray(a).astype(np_dtype(inp.dtype)).reshape(case.sizes))
    return arrays


def fresh_outputs(case):
    if is_family(case):
        return case.fresh_outputs()
    return [poison(int(np.prod(case.sizes)), dt).reshape(case.sizes) for _, dt in case.outputs]


def launch_args(case, inputs, outputs):
    if is_family(case):
        return list(inputs) + list(outputs) + list(case.scalars)
    return list(inputs) + list(outputs) + list(case.sizes) + [value for _, _, value in case.scalars]


def run_interpreter(module, case, inputs):
    outputs = fresh_outputs(case)
    kernel = getattr(module, case.kernel_name)
    kernel.interpret[case.grid](*launch_args(case, [a.copy() for a in inputs], outputs),
                                num_warps=case.num_warps, **case.constexprs)
    return outputs


def cuda_source(module, case, inputs):
    kernel = getattr(module, case.kernel_name)
    return kernel.cuda_source(*launch_args(case, inputs, fresh_outputs(case)), num_warps=case.num_warps,
                              **case.constexprs)


def compare(case, got, expected, what="") -> list:
    """Descriptions of the outputs that differ (empty when all agree)."""
    if is_family(case):
        return case.compare(got, expected, what)
    problems = []
    for i, ((node, _), g, e) in enumerate(zip(case.outputs, got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            problems.append(f"{what}OUT{i} ({node.name}, {node.dtype}): shape {g.shape} != {e.shape}")
            continue
        if is_float(node.dtype) and not node.facts.exact:
            tol, peak = path_tolerance(node)
            atol = tol * max(1.0, peak)
            ok = np.isclose(g.astype(np.float64), e.astype(np.float64), rtol=tol, atol=atol, equal_nan=True)
        else:
            ok = (g == e) | (np.isnan(g.astype(np.float64)) & np.isnan(e.astype(np.float64))) \
                if is_float(node.dtype) or g.dtype.kind == "f" else (g == e)
        if not np.all(ok):
            bad = np.argwhere(~ok)
            first = tuple(bad[0])
            problems.append(f"{what}OUT{i} ({node.name}, {node.dtype}, {'exact' if node.facts.exact else 'tol'}): "
                            f"{len(bad)} of {ok.size} differ, first at {first}: got {g[first]!r}, "
                            f"expected {e[first]!r}")
    return problems


def path_tolerance(node) -> tuple:
    """(relative noise, peak magnitude) an inexact float output may carry: the noise of the least precise float
    type any inexact value on its path was rounded in (fp32 math on the GPU is approximate, ex2.approx and the
    like, so an fp32 exp2 widened to float64 is only fp32-accurate wherever it flows: through either operand of
    a division, a reduction, a loop), and the largest magnitude met on that path. Read from the DAG itself, so
    it holds whatever each operation's own bookkeeping (`Facts.noise`, `Facts.peak`) kept."""
    noise, peak, seen, todo = NOISE[node.dtype], 0.0, set(), [node]
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if is_float(n.dtype):
            peak = max(peak, n.facts.peak)
            if not n.facts.exact:
                noise = max(noise, NOISE[n.dtype], n.facts.noise)
        todo.extend(n.node_args)
    return noise, peak


# ---- NVRTC, several kernels per translation unit -------------------------------------------------------------

def _shared_prefix():
    from transpiler.emit_cuda.emitter import templates_dir
    header = (templates_dir() / "device.cuh").read_text()      # every helper: the kernels share it
    scan = (templates_dir() / "device_scan.cuh").read_text().rstrip("\n")
    return header, scan


_DEVICE_HELPERS = re.compile(r"^// ---- device helpers \(templates/device\.cuh.*?^// ---- end of device helpers -*\n",
                             re.S | re.M)


def batch_source(sources: list) -> tuple:
    """One translation unit holding every kernel (each in a namespace of its own) and, per kernel, the range of
    lines it occupies there."""
    header, scan = _shared_prefix()
    text = header + "\n" + scan + "\n"
    ranges = []
    for i, src in enumerate(sources):
        body = _DEVICE_HELPERS.sub("", src).replace(scan, "")      # each kernel's own helpers (a subset)
        first = text.count("\n") + 1
        text += f"namespace fz{i} {{\n{body}\n}}  // namespace fz{i}\n"
        ranges.append((first, text.count("\n")))
    return text, ranges


def nvrtc_compile(source: str, arch: str):
    """(ok, log) of one NVRTC compile to a cubin."""
    from cupy.cuda import nvrtc
    from transpiler.runtime.compiler import nvrtc_options
    prog = nvrtc.createProgram(source, "fuzz.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(nvrtc_options(arch)))
            return True, nvrtc.getProgramLog(prog)
        except Exception:
            return False, nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def _warning_lines(log: str) -> list:
    return [int(m) for m in re.findall(r"fuzz\.cu\((\d+)\): warning", log or "")]


def compile_many(sources: list, arch: str, per_unit: int = 24) -> dict:
    """{index of a kernel: its NVRTC error or warnings} for the kernels that do not compile cleanly."""
    if len(sources) > per_unit:
        problems = {}
        for start in range(0, len(sources), per_unit):
            found = compile_many(sources[start:start + per_unit], arch, per_unit)
            problems.update({start + k: v for k, v in found.items()})
        return problems
    if not sources:
        return {}
    text, ranges = batch_source(sources)
    ok, log = nvrtc_compile(text, arch)
    if ok and not _warning_lines(log):
        return {}
    if len(sources) == 1:     # the kernel's own file, as the runtime compiles it (not the batch's wrapping)
        ok, log = nvrtc_compile(sources[0], arch)
        return {0: log} if not ok or _warning_lines(log) else {}
    if ok:   # only warnings: the kernels whose lines they point at, each compiled alone for its own log
        flagged = sorted({i for line in _warning_lines(log) for i, (lo, hi) in enumerate(ranges) if lo <= line <= hi})
        problems = {i: nvrtc_compile(sources[i], arch)[1] for i in flagged or range(len(sources))}
        return {i: text for i, text in problems.items() if text.strip()}
    half = len(sources) // 2
    first, second = compile_many(sources[:half], arch), compile_many(sources[half:], arch)
    return {**first, **{half + k: v for k, v in second.items()}}
