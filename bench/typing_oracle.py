"""The typing oracle over many kernels: the type of every assigned Python name, ours against Triton's front end.

    PYTHONPATH=/work/tritoncpu/site:$PWD python bench/typing_oracle.py --count 300 --seed 0 [--modules] [--jobs 2]

Needs Triton importable (its front end runs on a CPU: no GPU is used). Kernels: `--count` fuzzer kernels from
`--seed` on (tests/fuzz/generator.py, families included), and with `--modules` every kernel of
tests/*_kernels.py and examples/*.py whose signature can be derived from its source (`derive_launches`: a
parameter reaching a load/store's pointer is a pointer, tried as fp32, fp16 and int8 ones; constexprs from
their defaults or their names), skipping those our builder refuses. Prints the kernels compared, those with
differences, each difference (line, name, ours, Triton's) and the distinct patterns; kernels one side builds
and the other refuses are listed apart (a refusal is not a typing difference, but may be worth a look).
"""
from __future__ import annotations

import argparse
import ast
import collections
import inspect
import re
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

_POINTER_USES = {"load", "store", "make_block_ptr", "make_tensor_descriptor", "atomic_add", "atomic_max",
                 "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas"}
_FLOAT_NAMES = re.compile(r"eps|scale|alpha|beta|temperature|momentum|lr$|^p$|gamma|slope|factor", re.I)
_BOOL_NAMES = re.compile(r"^(IS_|HAS_|USE_|EVEN|CAUSAL|TRANS|REVERSE|APPLY|SAVE|ENABLE|RETURN)", re.I)
POINTER_DTYPES = (np.float32, np.float16, np.int8)


def _pointer_params(fn) -> set:
    """The parameters whose value reaches the pointer of a load, store, atomic or block pointer (through
    assignments), read from the source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    flows = collections.defaultdict(set)            # name -> names its assigned values were computed from
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            sources = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        flows[n.id] |= sources
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _POINTER_USES:
            first = node.args[0] if node.args else next((k.value for k in node.keywords
                                                        if k.arg in ("pointer", "base", "ptr")), None)
            if first is not None:
                roots |= {n.id for n in ast.walk(first) if isinstance(n, ast.Name)}
    reached, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(flows.get(name, ()))
    return reached


def _constexpr_value(name, default):
    if default is not inspect.Parameter.empty:
        return default
    if _BOOL_NAMES.search(name):
        return False
    return 32


def derive_launches(kernel):
    """(label, args, constexprs) launches of one of our kernels, from its source alone (see the module doc)."""
    fn = kernel.fn
    params = inspect.signature(fn).parameters
    pointers = _pointer_params(fn)
    constexprs = {n: _constexpr_value(n, params[n].default) for n in kernel.arg_names if n in kernel.constexpr_names}
    for dtype in POINTER_DTYPES:
        args = []
        for name in kernel.arg_names:
            if name in constexprs:
                continue
            if name in pointers:
                args.append(np.zeros(64, dtype))
            elif _FLOAT_NAMES.search(name):
                args.append(0.5)
            else:
                args.append(7)
        yield f"{np.dtype(dtype).name} pointers", args, constexprs


def module_kernels():
    """(path, kernel name, our kernel) for every kernel of tests/*_kernels.py and examples/*.py."""
    from bench.twins import load
    paths = sorted((ROOT / "tests").glob("*_kernels.py")) + sorted(p for p in (ROOT / "examples").glob("*.py")
                                                                    if not p.name.startswith("_"))
    for path in paths:
        try:
            module = load(path, "ours")
        except Exception as error:
            print(f"  {path.name}: did not load ({type(error).__name__}: {error})")
            continue
        for name, obj in sorted(vars(module).items()):
            if hasattr(obj, "arg_names") and hasattr(obj, "fn") and getattr(obj.fn, "__module__", "") == module.__name__:
                yield path, name, obj


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modules", action="store_true", help="also the kernels of tests/*_kernels.py, examples/")
    parser.add_argument("--verbose", action="store_true", help="print each kernel's outcome")
    opts = parser.parse_args(argv)
    from fuzz import generator, triton_oracle

    results = []
    directory = Path(tempfile.mkdtemp(prefix="typing_oracle_"))
    for seed in range(opts.seed, opts.seed + opts.count):
        results.append(triton_oracle.isolated(triton_oracle.compare_case, generator.generate(seed), directory,
                                               label=f"seed {seed}"))
        if opts.verbose:
            _show(results[-1])
    if opts.modules:
        for path, name, kernel in module_kernels():
            for label, args, constexprs in derive_launches(kernel):
                tag = f"{path.name}:{name} ({label})"
                r = triton_oracle.isolated(triton_oracle.compare_module, path, name, args, constexprs, tag, label=tag)
                if r.ours_error:
                    continue          # our builder refuses this guess at a signature: not a launch we know
                results.append(r)
                if opts.verbose:
                    _show(results[-1])
    summarize(results)
    return 0


def _show(r):
    status = "differs" if r.differences else ("compared" if r.compared else "not compared")
    print(f"{r.kernel}: {status} ({len(r.ours)} names ours, {len(r.triton)} Triton's)")
    for d in r.differences:
        print(f"    {d}")


def summarize(results):
    compared = [r for r in results if r.compared]
    differing = [r for r in compared if r.differences]
    print(f"kernels: {len(results)}; compared: {len(compared)}; with differences: {len(differing)}; "
          f"names compared: {sum(len(set(r.ours) & set(r.triton)) for r in compared)}")
    patterns = collections.Counter()
    example = {}
    for r in differing:
        for d in r.differences:
            patterns[d.pattern()] += 1
            example.setdefault(d.pattern(), (r.kernel, d))
    if patterns:
        print("difference patterns (count, ours vs Triton's, first example):")
        for pattern, count in patterns.most_common():
            kernel, d = example[pattern]
            print(f"  {count:4d}  {pattern}   e.g. {kernel} {d}")
    refusals = collections.Counter()
    for r in results:
        if r.build_disagreement:
            refusals[r.build_disagreement[:160]] += 1
    if refusals:
        print("built by one side only (count, which refused and why):")
        for text, count in refusals.most_common(25):
            print(f"  {count:4d}  {text}")
    return patterns


if __name__ == "__main__":
    sys.exit(main())
