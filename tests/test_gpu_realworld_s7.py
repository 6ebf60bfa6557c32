"""GPU: the kernels of `tests/realworld_s7_kernels.py` compiled and run against their NumPy references on fresh
random inputs (outputs poisoned before launch), and, where `triton` is importable, against Triton running the
same kernel source."""
from pathlib import Path

import numpy as np
import pytest

import realworld_s7_kernels as rk
from feature_kernels import check
from twin_runs import run_compiled, run_triton

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in rk.all_cases(np.random.default_rng(0))]


def _case(name):
    return dict(rk.all_cases(np.random.default_rng()))[name]


def _with_outputs(case, outputs):
    """`outputs` (the launch's arrays, in order) put back at the case's array positions."""
    arrays = iter(outputs)
    return [next(arrays) if isinstance(a, np.ndarray) else a for a in case["args"]]


@pytest.mark.parametrize("name", NAMES)
def test_matches_numpy_on_gpu(name):
    case = _case(name)
    check(case, _with_outputs(case, run_compiled(case["kernel"], case["grid"], case["args"], case["constexprs"])))


@pytest.mark.parametrize("name", NAMES)
def test_matches_triton_on_the_same_source(name):
    case = _case(name)
    pytest.importorskip("triton.language")
    theirs = _with_outputs(case, run_triton(Path(rk.__file__), case["kernel"].__name__, case["grid"], case["args"],
                                            case["constexprs"]))
    check(case, theirs)                  # Triton agrees with the reference too
    ours = _with_outputs(case, run_compiled(case["kernel"], case["grid"], case["args"], case["constexprs"]))
    for i in case["outputs"]:
        np.testing.assert_allclose(ours[i].astype(np.float64), theirs[i].astype(np.float64),
                                   rtol=case["rtol"], atol=case["atol"], err_msg=f"output {i}")
