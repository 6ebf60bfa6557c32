"""GPU tests of the batched (3-D) `tl.dot` (marker `gpu`): every case of tests/dot3d_kernels.py compiled and run
on fresh random inputs with ragged sizes (masks on every dimension), the output poisoned before the launch,
against the float64 NumPy product and against Triton running the same kernel source; the batched product's
epilogue (reductions over N and over the batch).

Run in a process of its own: a fault in tensor-core code poisons the CUDA context for the rest of the process.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dot3d_kernels as dk
from twin_runs import run_compiled, run_triton

pytestmark = pytest.mark.gpu


def _launch(case, rng):
    a, b, acc = dk.make_inputs(case, rng)
    c = dk.poisoned(a.shape[:2] + (b.shape[2],), dk.output_dtype(case))
    args, constexprs = dk.launch_args(case, a, b, c, acc)
    return a, b, acc, args, constexprs


def _triton_constexprs(constexprs):
    """The constexprs with our dtypes as Triton's (the twin's `tl` is triton.language)."""
    import triton.language as ttl
    from transpiler.dtypes import dtype
    return {k: ttl.dtype(v.name) if isinstance(v, dtype) else v for k, v in constexprs.items()}


def _check(case, out, a, b, acc, tf32_truncated=False):
    rtol, atol = dk.tolerance(case, case.shape[3], tf32_truncated)
    np.testing.assert_allclose(out.astype(np.float64), dk.reference(case, a, b, acc), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", dk.CASES, ids=[c.id for c in dk.CASES])
def test_batched_dot_matches_float64_numpy(case):
    a, b, acc, args, constexprs = _launch(case, np.random.default_rng())
    outputs = run_compiled(dk.bmm_kernel, dk.grid(case), args, constexprs)
    _check(case, outputs[2], a, b, acc)


@pytest.mark.parametrize("case", dk.CASES, ids=[c.id for c in dk.CASES])
def test_batched_dot_matches_triton_on_the_same_source(case):
    a, b, acc, args, constexprs = _launch(case, np.random.default_rng())
    ours = run_compiled(dk.bmm_kernel, dk.grid(case), args, constexprs)[2]
    try:
        theirs = run_triton(Path(dk.__file__), "bmm_kernel", dk.grid(case), args,
                            _triton_constexprs(constexprs))[2]
    except (pytest.skip.Exception, AssertionError):
        raise
    except Exception as e:      # noqa: BLE001  Triton 3.6 cannot compile this configuration
        pytest.skip(f"Triton cannot compile this case: {type(e).__name__}: {str(e).splitlines()[-1][:200]}")
    _check(case, theirs, a, b, acc, tf32_truncated=True)          # Triton agrees with the reference too
    rtol, atol = dk.tolerance(case, case.shape[3], tf32_truncated=True)
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=rtol, atol=atol)


def test_batched_product_epilogue_matches_numpy():
    rng = np.random.default_rng()
    n_batch, m, n, k = 3, 70, 20, 24
    a = rng.standard_normal((n_batch, m, k)).astype(np.float16)
    b = rng.standard_normal((n_batch, k, n)).astype(np.float16)
    c = dk.poisoned((m, n), np.float32)
    blocks = dict(BLOCK_B=4, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    out = run_compiled(dk.bmm_epilogue_kernel, (3,), [a, b, c, n_batch, m, n, k], blocks)[2]
    s = np.matmul(a.astype(np.float64), b.astype(np.float64)) * 0.5
    np.testing.assert_allclose(out, (s - s.max(axis=2, keepdims=True)).sum(axis=0), rtol=1e-3, atol=1e-2)


def test_transposed_and_broadcast_batched_operands_match_numpy_and_triton():
    grid, args, constexprs, ref = dk.transposed_case(np.random.default_rng())
    ours = run_compiled(dk.bmm_transposed_kernel, grid, args, constexprs)[3]
    np.testing.assert_allclose(ours, ref, rtol=2e-3, atol=2e-2)
    theirs = run_triton(Path(dk.__file__), "bmm_transposed_kernel", grid, args, constexprs)[3]
    np.testing.assert_allclose(theirs, ref, rtol=2e-3, atol=2e-2)
