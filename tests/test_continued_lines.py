"""CPU: Python lines continued with a backslash never end a `//` comment of the generated CUDA with one (the
next C++ line would be spliced into the comment: a declaration lost fails to compile, a store lost is a
silent wrong answer); the source compiles, and the interpreter matches NumPy."""
import numpy as np
import pytest

from continued_line_kernels import continued_store_kernel, reference
from transpiler.runtime.compiler import compile_offline, nvrtc_available


def _args(rng, n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return x, y, np.full(2 * n, np.nan, np.float32), n


def test_no_comment_of_the_generated_cuda_ends_with_a_backslash():
    source = continued_store_kernel.cuda_source(*_args(np.random.default_rng(0), 300), BLOCK=128)
    comments = [line for line in source.splitlines() if line.strip().startswith("//")]
    assert any("tl.minimum(x, y) -" in c for c in comments)
    assert not [c for c in comments if c.rstrip().endswith("\\")]


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_continued_lines_compile(arch):
    source = continued_store_kernel.cuda_source(*_args(np.random.default_rng(0), 300), BLOCK=128, arch=arch)
    result = compile_offline(source, arch)
    assert not result.warnings, result.log


def test_continued_lines_interpreted_match_numpy():
    rng = np.random.default_rng()
    x, y, out, n = _args(rng, 300)
    continued_store_kernel.interpret[(3,)](x, y, out, n, BLOCK=128)
    first, second = reference(x, y)
    # `t * 2.0 + x` may cancel: against the float64 reference only an error bound relative to its operands holds;
    # the interpreter rounds each fp32 operation, so NumPy's fp32 steps give its every bit.
    t = np.minimum(x, y) - np.maximum(x, y)
    np.testing.assert_array_equal(out[:n], t * np.float32(2.0) + x)
    np.testing.assert_allclose(out[:n], first, rtol=0, atol=2 * np.finfo(np.float32).eps * (2 * abs(t) + abs(x)).max())
    np.testing.assert_array_equal(out[n:], second)
