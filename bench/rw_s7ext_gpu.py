"""Real-world kernels with the same inputs under Triton and under us: one line per kernel, and a total.

A *case file* is a Python file written as a Triton user writes kernels (`import triton`, `import
triton.language as tl`, `@triton.jit`), kept outside this repository (public code stays out of it), that
defines `CASES`: a list of dicts with

    name, kernel, grid (a tuple or a function of the meta-parameters), args (NumPy arrays, numbers, None;
    ("fp8e4nv" | "fp8e5", uint8 codes) for fp8 arrays, ("bf16", float32 values) for bf16 ones,
    any object with base, shape, strides, block_shape (and padding) for a host TensorDescriptor that each
    side builds over its own array), outputs (indices into args), and optionally constexprs, num_warps,
    num_stages, atol (a number, or an array of them: one per output element), rtol, reference (a NumPy function
    of args giving the outputs, used where Triton's interpreter fails), archs (for NVRTC).

Inputs come from NumPy with fixed seeds, so every side sees the same values. Each side runs in a process of
its own (`--side`), because `import triton` means Triton in one and transpiler (tests/triton_compat/shim.py)
in the other:

    triton-gpu / ours-gpu        compiled, on torch CUDA tensors (the H200 comparison)
    triton-interp / ours-interp  Triton's interpreter (TRITON_INTERPRET=1, CPU torch) / ours (NumPy)

and writes its outputs and errors to a pickle; the driver compares ours with Triton's and prints one line
per case: `same`, `differs` (the largest error and the tolerance), `fails to compile` (the C++ NVRTC
rejects: a bug of ours), `refused` (a located "not supported yet"), `error` (anything else), or
`triton fails` (no reference).

    python bench/rw_s7ext_gpu.py --cases DIR [--cpu]      # GPU: compiled; --cpu: both interpreters

On the CPU, Triton's interpreter needs a CPU torch: PYTHONPATH must reach it (e.g. /work/tritoncpu/site).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MAX_RESTARTS = 200         # cases a process may be restarted past (a crash per case: the GPU's sticky errors)
# CUDA errors after which a process's context is unusable (every later call fails with them).
STICKY_CUDA_ERRORS = ("illegal memory access", "unspecified launch failure", "misaligned address",
                      "illegal instruction", "CUDA_ERROR_ILLEGAL", "cudaErrorIllegal", "device-side assert")
FP8 = {"fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}


def load_cases(path: Path, late_aliases=False):
    spec = importlib.util.spec_from_file_location(f"rwcases_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if late_aliases:
        resolve_builtin_aliases_late(module)
    return module.CASES


def resolve_builtin_aliases_late(module):
    """Triton's interpreter swaps `triton.language`'s builtins for interpreting ones while a kernel runs, so a
    module-level alias taken before (`exp = tl.exp`, fla's `make_tensor_descriptor = tl.make_tensor_descriptor`)
    still calls the compiler's builtin and fails; compiled Triton resolves it. Each such alias becomes a function
    that looks its builtin up when called."""
    import triton.language as tl
    import triton.language.extra.libdevice as libdevice
    sources = [tl, tl.math, libdevice]
    for name, value in list(vars(module).items()):
        if not callable(value) or getattr(value, "__module__", "").startswith("rwcases_"):
            continue
        for source in sources:
            attr = next((a for a, v in vars(source).items() if v is value and not a.startswith("__")), None)
            if attr is not None:
                def late(*args, _source=source, _attr=attr, **kwargs):
                    return getattr(_source, _attr)(*args, **kwargs)
                setattr(module, name, late)
                break


# ---- one side: turn the NumPy inputs into what that side launches with, run, read the outputs back ------

class TorchSide:
    """Triton, or us through the shim, on torch tensors (CUDA, or CPU for Triton's interpreter)."""

    def __init__(self, device):
        import torch
        self.torch, self.device = torch, device

    def arg(self, a):
        torch = self.torch
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
            kind, values = a
            if kind == "bf16":
                return torch.from_numpy(np.ascontiguousarray(values, np.float32)).to(self.device).to(torch.bfloat16)
            return torch.from_numpy(np.ascontiguousarray(values)).to(self.device).view(getattr(torch, FP8[kind]))
        if isinstance(a, np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(a)).to(self.device)
        if is_descriptor(a):
            return rebuilt_descriptor(a, self.arg)
        return a

    def result(self, t):
        if is_descriptor(t):
            t = t.base
        if t.dtype in (self.torch.bfloat16,):
            return t.float().cpu().numpy()
        if t.element_size() == 1 and t.is_floating_point():
            return t.float().cpu().numpy()
        return t.cpu().numpy()


class NumpySide:
    """Our interpreter on NumPy arrays (fp8 and bf16 through transpiler.reinterpret)."""

    def __init__(self):
        import transpiler
        import transpiler.language as tl
        self.transpiler, self.tl = transpiler, tl

    def arg(self, a):
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
            kind, values = a
            if kind == "bf16":
                bits = (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
                return self.transpiler.reinterpret(bits, self.tl.bfloat16)
            return self.transpiler.reinterpret(np.ascontiguousarray(values), getattr(self.tl, {
                "fp8e4nv": "float8e4nv", "fp8e5": "float8e5"}[kind]))
        if is_descriptor(a):
            return rebuilt_descriptor(a, self.arg)
        return a.copy() if isinstance(a, np.ndarray) else a

    def result(self, a):
        from transpiler.runtime.args import TensorWrapper
        if is_descriptor(a):
            a = a.base
        if isinstance(a, TensorWrapper):
            base = a.base
            if a.dtype == self.tl.bfloat16:
                return (base.astype(np.uint32) << 16).view(np.float32)
            from transpiler.numerics import fp8          # our side's values: its own decoding
            return fp8.decode(base, a.dtype)
        return np.asarray(a)


def nvrtc_check(case, args, options):
    """Our CUDA for sm_80 and sm_90a through NVRTC (CPU only): no errors, warnings or spills. Autotuned
    kernels are compiled with their first configuration, as the interpreters run them."""
    from transpiler.runtime.compiler import compile_offline
    kernel, layer = case["kernel"], case["kernel"]
    extra = {}
    while not hasattr(layer, "warmup") or hasattr(layer, "fn") and hasattr(layer.fn, "arg_names"):
        if hasattr(layer, "configs"):
            config = layer.configs[0]
            extra.update(config.kwargs)
            extra.update({k: v for k, v in (("num_warps", config.num_warps), ("num_stages", config.num_stages))
                          if v is not None})
        if not hasattr(layer, "fn") or not hasattr(layer.fn, "arg_names"):
            break
        layer = layer.fn
    problems = []
    try:
        for arch in case.get("archs", ("sm_80", "sm_90a")):     # fp8 tl.dot needs sm_89: sm_90a only
            source = kernel.cuda_source(*args, **case.get("constexprs", {}), **{**options, **extra}, arch=arch)
            result = compile_offline(source, arch)
            if result.warnings or result.spill_bytes:
                problems.append(f"{arch}: spills {result.spill_bytes}, log {result.log[:500]}")
    except Exception as exc:
        return {"error": classify_error(exc), "trace": traceback.format_exc()}
    return {"error": "fails to compile: " + "; ".join(problems)} if problems else {"nvrtc": "ok"}


def scalar_index_for_numpy2():
    """Triton 3.6's interpreter turns a scalar (a one-element array) into a Python int with `int(array)`, which
    NumPy 2 refuses for arrays of rank 1 (`for i in range(tl.cdiv(T, BT))` fails there); index by the element."""
    from triton.runtime import interpreter
    patch = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))
    interpreter._patch_lang_tensor = patched


def first_config_only():
    """Interpreters cannot time configurations (Triton's autotuner asks for a GPU driver): both sides keep the
    first configuration of every `triton.autotune`, which then needs no timing."""
    import triton
    autotune = triton.autotune

    def first_only(configs, *args, **kwargs):
        return autotune(list(configs)[:1], *args, **kwargs)
    triton.autotune = first_only


def rebuilt_descriptor(desc, convert):
    """A host TensorDescriptor of the case file (over a NumPy array) over the side's own array."""
    from triton.tools.tensor_descriptor import TensorDescriptor      # Triton's, or ours through the shim
    return TensorDescriptor(convert(desc.base), list(desc.shape), list(desc.strides), list(desc.block_shape),
                            **({"padding": desc.padding} if hasattr(desc, "padding") else {}))


def is_descriptor(a):
    return all(hasattr(a, name) for name in ("base", "shape", "strides", "block_shape"))


def classify_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "NVRTC" in text or "nvrtc" in text or "CompileError" in type(exc).__name__ and "bug" in text:
        return "fails to compile: " + text
    if "not supported yet" in text:
        return "refused: " + text
    return "error: " + text


def run_side(side: str, files: list[Path], out: Path, part=(0, 1), skip=()):
    """Every case of `files` (this process's `part` of each) on `side`; the results are pickled to `out` after
    each case, so a process that dies (a segfault, a sticky CUDA error in the driver) keeps what it finished and
    the driver restarts it past the case it died in (`skip`)."""
    if side.endswith("interp") and side.startswith("triton"):
        os.environ["TRITON_INTERPRET"] = "1"
    if side.startswith("ours"):
        if side.endswith("gpu"):        # torch starts CUDA lazily and then looks for Triton (`find_spec`, which
            import torch                # fails on the shim's modules): started before the shim is installed
            torch.cuda.init()
        sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
        from triton_compat import shim
        shim.install()
    runner = NumpySide() if side in ("ours-interp", "ours-nvrtc") else TorchSide("cuda" if side.endswith("gpu") else "cpu")
    if side.endswith("interp"):
        first_config_only()
    if side == "triton-interp":
        scalar_index_for_numpy2()
    if side.endswith("gpu"):              # in-kernel tensor descriptors: Triton keeps its TMA descriptors there
        import triton
        torch = runner.torch
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    if side == "ours-interp":
        os.environ["TRANSPILER_INTERPRET"] = "1"
    results = {}

    def save():
        with open(str(out) + ".part", "wb") as f:
            pickle.dump(results, f)
        os.replace(str(out) + ".part", out)

    for path in files:
        try:
            cases = load_cases(path, late_aliases=side == "triton-interp")
        except Exception as exc:  # a file that does not even import on this side
            results[path.stem] = {"error": classify_error(exc), "trace": traceback.format_exc()}
            continue
        for case in cases[part[0]::part[1]]:
            key = f"{path.stem}:{case['name']}"
            if key in skip:
                continue
            results[key] = {"error": "error: the process died in this case"}   # until the case ends
            save()
            results[key] = run_case(side, runner, case)
            if side.endswith("gpu") and any(text in results[key].get("error", "") for text in STICKY_CUDA_ERRORS):
                save()                      # the context is lost for every later case: a fresh process
                os._exit(3)
    save()


def run_case(side, runner, case) -> dict:
    """One case on one side: its outputs (and the NumPy reference, where the case has one) or its error."""
    options = {k: case[k] for k in ("num_warps", "num_stages") if k in case}
    start = time.time()
    try:
        args = [runner.arg(a) for a in case["args"]]
        if side == "ours-nvrtc":
            return nvrtc_check(case, args, options)
        case["kernel"][case["grid"]](*args, **case.get("constexprs", {}), **options)
        if side.endswith("gpu"):
            runner.torch.cuda.synchronize()
        result = {"outputs": [np.array(runner.result(args[i])) for i in case["outputs"]]}
    except Exception as exc:
        result = {"error": classify_error(exc), "trace": traceback.format_exc()}
    result["atol"], result["rtol"] = case.get("atol", 1e-5), case.get("rtol", 1e-5)
    if "reference" in case and side.startswith("ours"):
        try:
            result["reference"] = [np.asarray(r) for r in case["reference"](*case["args"])]
        except Exception as exc:
            result.setdefault("error", "error: the case's NumPy reference fails: " + classify_error(exc))
    result["s"] = time.time() - start
    return result


# ---- the driver ----------------------------------------------------------------------------------------

def compare(theirs: dict, ours: dict) -> tuple[str, str]:
    reference = None
    if "reference" in ours:
        reference = {"outputs": ours["reference"], "atol": ours["atol"], "rtol": ours["rtol"]}
    if "error" in theirs and reference is not None and "error" not in ours:
        verdict, detail = compare_outputs(reference, ours)
        return verdict + " (NumPy)", "Triton fails: " + theirs["error"][:120] + "; " + detail
    if "error" in theirs:
        also = f" (ours: {ours['error'][:200]})" if "error" in ours else ""
        return "triton fails", theirs["error"][:200] + also
    if "error" in ours:
        verdict = ours["error"].split(":", 1)[0]
        return verdict, ours["error"].split(":", 1)[1].strip()[:300]
    verdict, detail = compare_outputs(theirs, ours)
    if verdict == "differs" and reference is not None:      # which side is right: the reference decides
        against, why = compare_outputs(reference, ours)
        return (("same (NumPy)", "Triton differs from NumPy: " + detail) if against == "same" else
                ("differs", detail + "; NumPy: " + why))
    return verdict, detail


def compare_outputs(theirs: dict, ours: dict) -> tuple[str, str]:
    worst = ""
    for k, (t, o) in enumerate(zip(theirs["outputs"], ours["outputs"])):
        t, o = np.asarray(t, np.float64), np.asarray(o, np.float64).reshape(np.shape(t))
        ok = np.isclose(o, t, rtol=theirs["rtol"], atol=theirs["atol"], equal_nan=True)
        if not ok.all():
            err = np.nanmax(np.abs(np.where(ok, 0, o - t)))
            worst += (f"output {k}: {int((~ok).sum())} of {ok.size} elements, max error {err:.3g} "
                      f"(atol {describe_tolerance(theirs['atol'])}, rtol {theirs['rtol']}); ")
    return ("differs", worst) if worst else ("same", "")


def describe_tolerance(atol) -> str:
    """A case's atol: a number, or an array of them (a bound per element, e.g. relative to the sum of |products|
    of an fp32-accumulated dot), shown by its range."""
    atol = np.asarray(atol, np.float64)
    return f"{float(atol):g}" if atol.ndim == 0 else f"per element {atol.min():.3g}..{atol.max():.3g}"


def run_sides(sides, files, jobs, parts, budget=None):
    """Each (side, case file, part) in a process of its own, `jobs` at a time, the largest files first
    (compiling dominates: Triton's and NVRTC's compilers run in parallel this way); a part is every
    `parts`-th case of the file. A process that dies is started again past the case it died in (that case
    keeps the error, with the end of the process's stderr); one that dies before finishing any case leaves
    the rest of its cases with that error. Past `budget` seconds the processes still running are stopped
    (what they finished is kept) and no more start. The results are merged per side."""
    deadline = time.time() + budget if budget else None
    results = {side: {} for side in sides}
    by_size = sorted(files, key=lambda f: -f.stat().st_size)
    pending = [(side, path, k, ()) for path in by_size for side in sides for k in range(parts)]
    running = []
    with tempfile.TemporaryDirectory() as tmp:
        while pending or running:
            while pending and len(running) < jobs and not (deadline and time.time() > deadline):
                side, path, k, skip = pending.pop(0)
                out = Path(tmp) / f"{side}-{path.stem}-{k}-{len(skip)}.pkl"
                cmd = [sys.executable, __file__, "--side", side, "--out", str(out), "--cases", str(path),
                       "--part", f"{k}/{parts}"] + (["--skip", "|".join(skip)] if skip else [])
                running.append(((side, path, k, skip), out, subprocess.Popen(
                    cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            if not running:                 # the budget is spent: what did not start is left out
                break
            (side, path, k, skip), out, proc = running.pop(0)
            try:
                _, err = proc.communicate(timeout=max(1.0, deadline - time.time()) if deadline else None)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                err = f"stopped at the --budget of {budget} s. " + err
            partial = {}
            if out.exists():
                with open(out, "rb") as f:
                    partial = pickle.load(f)
            results[side].update(partial)
            if proc.returncode == 0 and out.exists():
                continue
            why = f"error: the {side} process died (rc {proc.returncode}): {err.strip()[-1500:]}"
            died_in = [key for key, r in partial.items() if r.get("error") == "error: the process died in this case"]
            for key in died_in:
                results[side][key] = {"error": why}
            if partial and len(skip) < MAX_RESTARTS:   # go on past the case it died in
                pending.append((side, path, k, tuple(skip) + tuple(partial)))
            else:
                results[side][f"{path.stem} (part {k})"] = {"error": why}
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, required=True, help="a case file or a folder of them (*.py)")
    parser.add_argument("--cpu", action="store_true", help="compare the two interpreters instead")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--only", help="run only the case files whose name contains one of these (comma-separated)")
    parser.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="processes at a time")
    parser.add_argument("--parts", type=int, default=2, help="processes per side and case file")
    parser.add_argument("--part", default="0/1", help=argparse.SUPPRESS)
    parser.add_argument("--skip", default="", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, help="seconds for the whole run: cases not finished by then are "
                                                      "reported missing")
    opts = parser.parse_args()
    files = sorted(opts.cases.glob("rw_*.py")) if opts.cases.is_dir() else [opts.cases]
    if opts.only:
        files = [f for f in files if any(part in f.name for part in opts.only.split(","))]
    sys.path.insert(0, str(files[0].parent))
    if opts.side:
        return run_side(opts.side, files, opts.out, tuple(int(x) for x in opts.part.split("/")),
                        skip=set(filter(None, opts.skip.split("|"))))
    start = time.time()
    mode = "interp" if opts.cpu else "gpu"
    sides = [f"triton-{mode}", f"ours-{mode}"] + (["ours-nvrtc"] if opts.cpu else [])
    results = run_sides(sides, files, opts.jobs, opts.parts, opts.budget)
    theirs, ours_all = results[f"triton-{mode}"], results[f"ours-{mode}"]
    if opts.cpu:
        nvrtc = results["ours-nvrtc"]
        print(f"NVRTC (sm_80, sm_90a): {sum('nvrtc' in r for r in nvrtc.values())} of {len(nvrtc)} cases compile "
              f"cleanly")
        for key, ours in ours_all.items():
            problem = nvrtc.get(key, {"error": "error: no NVRTC result"}).get("error")
            if problem and "error" not in ours:
                ours["error"] = problem
    counts = {}
    for key in sorted(set(theirs) | set(ours_all)):
        if ":" not in key:                  # a whole file or process: it did not import, or its process died
            for side, mine in ((f"triton-{mode}", theirs), (f"ours-{mode}", ours_all)):
                if key in mine:
                    counts["file fails"] = counts.get("file fails", 0) + 1
                    print(f"{key:60s} {'file fails':16s} {side}: {mine[key]['error'][:1500]}", flush=True)
            continue
        verdict, detail = compare(theirs.get(key, {"error": "error: missing on Triton's side"}),
                                  ours_all.get(key, {"error": "error: missing on our side"}))
        counts[verdict] = counts.get(verdict, 0) + 1
        print(f"{key:60s} {verdict:16s} {detail}".rstrip(), flush=True)
    total = sum(counts.values())
    print(f"total {total}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) +
          f" ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
