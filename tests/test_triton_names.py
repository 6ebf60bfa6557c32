"""CPU: `tl.reduce_or`, `tl.map_elementwise`, `tl.add`/`sub`/`mul`, `tl.const`, `tl.pi32_t`,
`tl.TRITON_MAX_TENSOR_NUMEL`, `tl.condition` and `tl.bitonic_merge` (tests/triton_names_kernels.py): the interpreter matches NumPy,
NVRTC compiles the generated CUDA for sm_80 and sm_90a without warnings or spills, and what is not supported yet
is refused with a located error."""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
import triton_names_kernels as k
from transpiler.errors import TranspilerError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
INT_TYPES = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64]


def _or_case(dtype, rng):
    bits = 8 * np.dtype(dtype).itemsize - (1 if np.dtype(dtype).kind == "i" else 0)
    x = (np.ones((13, 37), np.uint64) << rng.integers(0, bits, (13, 37)).astype(np.uint64)).astype(dtype)
    x[rng.random(x.shape) < 0.3] = 0
    return x, np.full(13, 99, dtype), np.full((1, 37), 99, dtype)


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_reduce_or_matches_numpy(dtype):
    x, rows, cols = _or_case(dtype, np.random.default_rng(5))
    k.or_rows_and_columns.interpret[(1,)](x, rows, cols, 13, 37, BLOCK_R=16, BLOCK_C=64)
    np.testing.assert_array_equal(rows, np.bitwise_or.reduce(x, 1))
    np.testing.assert_array_equal(cols, np.bitwise_or.reduce(x, 0, keepdims=True))


def test_reduce_or_refuses_floats():
    x = np.ones((13, 37), np.float32)
    with pytest.raises(TranspilerError, match="reduce_or needs integers"):
        k.or_rows_and_columns.cuda_source(x, np.zeros(13, np.float32), np.zeros((1, 37), np.float32), 13, 37,
                                          BLOCK_R=16, BLOCK_C=64)
    with pytest.raises(TranspilerError, match="reduce_or needs integers"):
        k.or_rows_and_columns.interpret[(1,)](x, np.zeros(13, np.float32), np.zeros((1, 37), np.float32), 13, 37,
                                              BLOCK_R=16, BLOCK_C=64)


def _mapped_args(rng, n=300, d=4):
    x = rng.standard_normal(n).astype(np.float32)
    a = rng.integers(-50, 100, n).astype(np.int32)
    return [x, a, np.full(n, np.nan, np.float32), np.zeros((n, d), np.int32), np.zeros((n, d), np.int32), n, 1.5]


def _mapped_expected(x, a, alpha, d):
    selu = np.where(x > 0, x, alpha * (np.exp(x.astype(np.float64)) - 1))
    div = np.arange(1, d + 1)[None, :]
    q = np.trunc(a[:, None] / div).astype(np.int32)          # C's (and Triton's) integer division of ints
    return selu, q, a[:, None] - q * div


def test_map_elementwise_matches_numpy():
    args = _mapped_args(np.random.default_rng(2))
    k.mapped.interpret[(3,)](*args, BLOCK=128, D=4)
    selu, q, r = _mapped_expected(args[0], args[1], 1.5, 4)
    np.testing.assert_allclose(args[2], selu, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(args[3], q)
    np.testing.assert_array_equal(args[4], r)


def test_map_elementwise_compiles_each_result_to_a_device_function_that_branches():
    src = k.mapped.cuda_source(*_mapped_args(np.random.default_rng(2)), BLOCK=128, D=4)
    body = src[src.index("the function tl.map_elementwise maps"):]
    assert body.count("__device__ __forceinline__") == 3 and "if (" in body     # selu, q and r
    assert "mapped(" in src[src.index("__global__"):]


def test_map_elementwise_of_a_function_that_prints_is_kept_when_its_result_is_unread():
    x = np.random.default_rng(7).standard_normal(300).astype(np.float32)
    src = k.mapped_for_effects.cuda_source(x, 300, BLOCK=128)
    body = src[src.index("__global__"):]
    assert re.search(r"^\s*(?:#pragma unroll\s*for \(int r = 0; r < \d+; \+\+r\) )?mapped\([^;]*\);", body, re.M), body
    assert "= mapped(" not in body


def test_map_elementwise_of_a_function_that_stores_is_refused_as_triton_refuses_it():
    x = np.ones(32, np.float32)
    with pytest.raises(TranspilerError, match="not Triton's language"):
        k.mapped_store.cuda_source(x, x.copy(), BLOCK=32)


def test_map_elementwise_pack_is_refused_as_not_supported_yet():
    @transpiler.jit
    def packed(X, Y, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.map_elementwise(k.selu_scalar, tl.load(X + offs), 1.0, pack=2))

    x = np.ones(32, np.float32)
    with pytest.raises(TranspilerError, match="not supported yet: tl.map_elementwise with pack > 1"):
        packed.cuda_source(x, x.copy(), BLOCK=32)
    with pytest.raises(TranspilerError, match="not supported yet: tl.map_elementwise with pack > 1"):
        packed.interpret[(1,)](x, x.copy(), BLOCK=32)


def _named_args(rng, n=300):
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    bits = rng.standard_normal(n).astype(np.float32)
    return [x, bits, np.zeros(n, np.int32), np.zeros(n, np.int32), n, 4]


def test_named_operators_const_pi32_t_and_condition_match_numpy():
    args = _named_args(np.random.default_rng(3))
    k.named_operators.interpret[(3,)](*args, BLOCK=128)
    np.testing.assert_array_equal(args[2], 4 * args[0] - 7 + sum(range(4)))
    np.testing.assert_array_equal(args[3], args[1].view(np.int32))
    assert tl.TRITON_MAX_TENSOR_NUMEL == 1048576 and tl.pi32_t == tl.pointer_type(tl.int32)


def bitonic_rows(rng, rows, n, dtype=np.float32):
    """Rows of one ascending run then one descending run (what a bitonic merge sorts), ties included."""
    x = rng.integers(-40, 40, (rows, n)).astype(dtype)
    half = n // 2
    return np.concatenate([np.sort(x[:, :half], 1), -np.sort(-x[:, half:], 1)], 1)


@pytest.mark.parametrize("descending", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_bitonic_merge_sorts_bitonic_rows(descending, dtype):
    x = bitonic_rows(np.random.default_rng(6), 4, 64, dtype)
    y = np.zeros_like(x)
    k.merged_rows.interpret[(1,)](x, y, DESCENDING=descending, ROWS=4, N=64)
    expected = np.sort(x, 1)
    np.testing.assert_array_equal(y, expected[:, ::-1] if descending else expected)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_kernels_compile_without_warnings_or_spills(arch):
    rng = np.random.default_rng(4)
    target = dict(arch=arch) if arch == "sm_90a" else {}
    sources = [k.mapped.cuda_source(*_mapped_args(rng), BLOCK=128, D=4, **target),
               k.named_operators.cuda_source(*_named_args(rng), BLOCK=128, **target),
               k.mapped_for_effects.cuda_source(np.zeros(300, np.float32), 300, BLOCK=128, **target),
               k.merged_rows.cuda_source(bitonic_rows(rng, 4, 64), np.zeros((4, 64), np.float32), DESCENDING=1,
                                         ROWS=4, N=64, **target)]
    for dtype in INT_TYPES:
        x, rows, cols = _or_case(dtype, rng)
        sources.append(k.or_rows_and_columns.cuda_source(x, rows, cols, 13, 37, BLOCK_R=16, BLOCK_C=64, **target))
    for src in sources:
        result = compile_offline(src, arch)
        assert result.spill_bytes == 0 and not result.warnings, result.log
