"""GPU: the kernels of `tests/realworld_core_kernels.py` and `tests/realworld_s7_kernels.py` compiled and run against their NumPy references on
fresh random inputs (outputs poisoned before launch), and, where `triton` is importable, against Triton
running the same kernel source."""
from pathlib import Path

import numpy as np
import pytest

import realworld_core_kernels as rk
import realworld_s7_kernels
import test_realworld_core as cpu
from feature_kernels import check
from twin_runs import run_compiled, run_triton

pytestmark = pytest.mark.gpu

def _cases(rng):
    """(name, kernel module, case) of both collections: the module is where Triton's twin is loaded from."""
    return [(name, rk, case) for name, case in rk.all_cases(rng) + rk.compiled_only_cases(rng)] + \
        [(name, realworld_s7_kernels, case) for name, case in realworld_s7_kernels.all_cases(rng)]


NAMES = [name for name, _, _ in _cases(np.random.default_rng(0))]


def _case(name):
    return next((module, case) for n, module, case in _cases(np.random.default_rng()) if n == name)


def _with_outputs(case, outputs):
    """`outputs` (the launch's arrays, in order) put back at the case's array positions."""
    arrays = iter(outputs)
    return [next(arrays) if isinstance(a, np.ndarray) else a for a in case["args"]]


@pytest.mark.parametrize("name", NAMES)
def test_matches_numpy_on_gpu(name):
    _, case = _case(name)
    check(case, _with_outputs(case, run_compiled(case["kernel"], case["grid"], case["args"], case["constexprs"])))


@pytest.mark.parametrize("name", NAMES)
def test_matches_triton_on_the_same_source(name):
    module, case = _case(name)
    triton_language = pytest.importorskip("triton.language")
    missing = [n for n in case.get("triton_needs", ()) if not hasattr(triton_language, n)]
    if missing:
        pytest.skip(f"this Triton has no tl.{missing[0]}")
    try:
        theirs = _with_outputs(case, run_triton(Path(module.__file__), case["kernel"].__name__, case["grid"],
                                                case["args"], case["constexprs"]))
    except Exception as e:    # noqa: BLE001  Triton 3.6's front end or back end fails on it (docs/compatibility.md)
        pytest.skip(f"Triton cannot compile this kernel: {type(e).__name__}: {str(e).splitlines()[-1][:200]}")
    check(case, theirs)                  # Triton agrees with the reference too
    ours = _with_outputs(case, run_compiled(case["kernel"], case["grid"], case["args"], case["constexprs"]))
    for i in case["outputs"]:
        np.testing.assert_allclose(ours[i].astype(np.float64), theirs[i].astype(np.float64),
                                   rtol=case["rtol"], atol=case["atol"], err_msg=f"output {i}")


@pytest.mark.parametrize("last,lo,hi", [(-5.0, -1.0, 3.0), (2.0, -1.0, 3.0), (7.0, -1.0, 3.0), (700.0, -1.0, 300.0),
                                        (200.0, -1.0, 300.0)])
def test_nested_value_returns_pick_the_taken_path_on_gpu(last, lo, hi):
    x = np.random.default_rng().standard_normal(16).astype(np.float32)
    x[-1] = last
    want = min(max(last, lo), hi if hi <= 100 else 100.0) if last > hi else max(last, lo)
    (_, y) = run_compiled(cpu._clip_kernel, (1,), [x, np.full(1, np.nan, np.float32), lo, hi, 16], dict(BLOCK=16))
    assert y[0] == want
