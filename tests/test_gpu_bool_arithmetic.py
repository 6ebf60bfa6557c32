"""GPU: int1 arithmetic, scans and reductions of tests/bool_kernels.py compiled, against NumPy's modulo-2
reference and against Triton's build of the same file where Triton is installed (fresh random bits, sizes not
multiples of the block, outputs poisoned)."""
from pathlib import Path

import numpy as np
import pytest

import bool_kernels as K
from twin_runs import run_compiled, run_triton

pytestmark = pytest.mark.gpu

N, BLOCK = 300, 128
GRID = (-(-N // BLOCK),)
SCAN_N = 100


def _run(kernel, grid, args, constexprs):
    return run_compiled(kernel, grid, args, constexprs)


def _run_triton(name, grid, args, constexprs):
    return run_triton(Path(__file__).with_name("bool_kernels.py"), name, grid, args, constexprs)


@pytest.mark.parametrize("name", list(K.OPS))
def test_bool_arithmetic_on_gpu_matches_numpy_and_triton(name):
    code, reference, _ = K.OPS[name]
    rng = np.random.default_rng()
    a, b = rng.integers(0, 2, N).astype(np.int32), rng.integers(0, 2, N).astype(np.int32)
    args, constexprs = (a, b, np.full(N, -7, np.int32), N), dict(OP=code, BLOCK=BLOCK)
    want = reference(a.astype(np.int64), b.astype(np.int64))
    np.testing.assert_array_equal(_run(K.bool_arith_kernel, GRID, args, constexprs)[-1], want)
    np.testing.assert_array_equal(_run_triton("bool_arith_kernel", GRID, args, constexprs)[-1], want)


@pytest.mark.parametrize("op", [0, 1, 2], ids=["cumsum_int1", "reduce_add_int1", "cumsum_default"])
def test_bool_scans_and_reductions_on_gpu_match_numpy_and_triton(op):
    a = np.random.default_rng().integers(0, 2, SCAN_N).astype(np.int32)
    args, constexprs = (a, np.full(SCAN_N, -7, np.int32), SCAN_N), dict(OP=op, BLOCK=128)
    want = [np.cumsum(a) % 2, np.full(SCAN_N, a.sum() % 2), np.cumsum(a)][op]
    np.testing.assert_array_equal(_run(K.bool_scan_reduce_kernel, (1,), args, constexprs)[-1], want)
    np.testing.assert_array_equal(_run_triton("bool_scan_reduce_kernel", (1,), args, constexprs)[-1], want)
