"""A pointer used as a condition (`if BIAS:`, `if not BIAS:`) is true, as the compiled `ptr != nullptr` is (and
Triton's): the interpreter's pointers are offsets from 0 into their array, which once read as false and
skipped the branch. None (an absent input) folds the branch away on both paths."""
import numpy as np
import pytest

import pointer_condition_kernels as kernels
from transpiler.runtime.compiler import compile_offline, nvrtc_available


def case(rng, with_bias, rows=5, cols=300):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32) if with_bias else None
    out = np.full((rows, cols), np.nan, np.float32)
    want = x * 2 + bias if with_bias else -(x * 2)
    return (x, bias, out, rows, cols), dict(BLOCK=512), (rows,), out, want


@pytest.mark.parametrize("with_bias", [True, False])
def test_a_pointer_argument_is_a_true_condition(with_bias):
    args, consts, grid, out, want = case(np.random.default_rng(1), with_bias)
    kernels.add_optional_bias_kernel.interpret[grid](*args, **consts)
    np.testing.assert_array_equal(out, want)


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("with_bias", [True, False])
def test_pointer_condition_compiles(with_bias):
    args, consts = case(np.random.default_rng(2), with_bias)[:2]
    src = kernels.add_optional_bias_kernel.cuda_source(*args, **consts)
    assert ("BIAS != 0ULL" in src) == with_bias
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log
