"""GPU: conditional expressions whose branches load or update atomically (tests/conditional_kernels.py),
compiled, against NumPy and against Triton's build of the same file where Triton is installed. The untaken
branch's loads would read 4 GiB past the array: evaluated eagerly they fault or read garbage."""
from pathlib import Path

import numpy as np
import pytest

import conditional_kernels as K
from test_conditional_expressions import FAR, gather_case
from twin_runs import run_compiled, run_triton

pytestmark = pytest.mark.gpu


def _run(kernel, grid, args, constexprs):
    return run_compiled(kernel, grid, args, constexprs)


def _run_triton(name, grid, args, constexprs):
    return run_triton(Path(__file__).with_name("conditional_kernels.py"), name, grid, args, constexprs)


@pytest.mark.parametrize("via_helper", [False, True], ids=["inline", "helper"])
def test_guarded_gather_on_gpu_matches_numpy_and_triton(via_helper):
    x, idx, want = gather_case(np.random.default_rng())
    args, constexprs = (x, idx, np.full(len(idx), np.nan, np.float32), len(x)), dict(VIA_HELPER=via_helper)
    np.testing.assert_array_equal(_run(K.guarded_gather_kernel, (len(idx),), args, constexprs)[-1], want)
    np.testing.assert_array_equal(_run_triton("guarded_gather_kernel", (len(idx),), args, constexprs)[-1], want)


def test_guarded_block_load_on_gpu_matches_numpy_and_triton():
    rng = np.random.default_rng()
    n_rows, n_cols, programs = 7, 45, 12
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    rows = np.where(rng.random(programs) < 0.5, rng.integers(0, n_rows, programs), FAR).astype(np.int32)
    args = (x, rows, np.full((programs, n_cols), np.nan, np.float32), n_rows, n_cols)
    want = np.where((rows < n_rows)[:, None], x[np.minimum(rows, n_rows - 1)] + 1.0, 0.0).astype(np.float32)
    np.testing.assert_array_equal(_run(K.guarded_block_kernel, (programs,), args, dict(BLOCK=64))[-1], want)
    np.testing.assert_array_equal(_run_triton("guarded_block_kernel", (programs,), args, dict(BLOCK=64))[-1], want)


@pytest.mark.parametrize("runner", ["ours", "triton"])
def test_guarded_atomic_on_gpu_counts_only_taken_branches(runner):
    programs = 1001
    args = (np.full(programs, -7, np.int32), np.zeros(1, np.int32))
    old, count = (_run(K.guarded_atomic_kernel, (programs,), args, {}) if runner == "ours"
                  else _run_triton("guarded_atomic_kernel", (programs,), args, {}))
    assert count[0] == (programs + 1) // 2
    assert sorted(old[::2]) == list(range((programs + 1) // 2))
    assert (old[1::2] == -1).all()
