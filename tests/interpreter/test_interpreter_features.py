"""The CPU oracle: every language-feature kernel and every example, run by the interpreter, matches NumPy.

The feature kernels are the ones the compile and GPU tests use (`tests/feature_kernels.py`), each with its
float64 reference; the examples run their own CPU cases through their host wrappers, which send NumPy
arrays to `kernel.interpret`.
"""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from feature_kernels import all_cases, check

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_"))
CASES = all_cases(np.random.default_rng(7))


def load_example(name):
    if str(EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(EXAMPLES_DIR))
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_feature_kernel_interpreted_matches_numpy(name, case):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, num_warps=case.get("num_warps", 4), **case["constexprs"])
    check(case, args)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_interpreted_matches_numpy(name):
    module = load_example(name)
    ran = 0
    for case in module.CPU_CASES:
        if case.get("dtype") == "bfloat16":
            continue                      # NumPy has no bf16; the GPU test covers it with torch
        module.run_case("numpy", timed=False, **case)   # raises Mismatch on a wrong result
        ran += 1
    assert ran
