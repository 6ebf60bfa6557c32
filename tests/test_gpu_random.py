"""GPU: random numbers from the compiled kernels against the NumPy Philox (bits and uniforms exactly, normals
within float32 rounding), against Triton's own build of the same kernel file when Triton and torch are
there (bit for bit, but for randn, whose sqrt/log/sin/cos Triton computes with approximate, flush-to-zero
instructions), and moments and correlations over a million draws.

Run on a GPU machine: `python -m pytest -q -m gpu tests/test_gpu_random.py`
"""
from pathlib import Path

import numpy as np
import pytest

from random_kernels import (constexpr_seed_kernel, dropout_kernel, expected_columns, philox_impl_kernel,
                            philox_kernel, philox_reference, randint4x_reference, random_offsets,
                            scalar_offset_kernel, uniform_reference, normal_reference)
from test_random import KAT_CASES, KERNELS, KNOWN_ANSWERS, UNSIGNED

pytestmark = pytest.mark.gpu

RANDOM_KERNELS = Path(__file__).resolve().parent / "random_kernels.py"


def poisoned_device(shape, np_dtype):
    import cupy
    return cupy.full(shape, np.nan if np.dtype(np_dtype).kind == "f" else 0x5A5A5A5A, dtype=np_dtype)


def launch_columns(kind, offsets, seed, n_rounds=10, block=256):
    import cupy
    kernel, out_dtype = KERNELS[kind]
    n = offsets.size
    out = poisoned_device((n, 5), out_dtype)
    kernel[(-(-n // block),)](cupy.asarray(offsets), out, seed, n, N_ROUNDS=n_rounds, BLOCK=block)
    return cupy.asnumpy(out)


def assert_columns(kind, got, expected):
    if kind == "normal":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


# ---- against NumPy -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["randint", "uniform", "normal"])
@pytest.mark.parametrize("np_dtype", [np.int16, np.int32, np.int64, np.uint32, np.uint64])
def test_compiled_numbers_match_numpy_for_each_offset_type(kind, np_dtype):
    rng = np.random.default_rng()
    offsets, seed = random_offsets(rng, 20_011, np_dtype), int(rng.integers(-2**31, 2**31))
    assert_columns(kind, launch_columns(kind, offsets, seed), expected_columns(kind, seed, offsets))


@pytest.mark.parametrize("seed", [0, 1, -1, -2**31, 2**32 + 5, -2**40 - 3, 2**63 - 1, 2**64 - 1],
                         ids=lambda s: f"seed{s}")
def test_compiled_randint_matches_numpy_for_each_seed_kind(seed):
    # 1 is specialized into a constant, larger seeds are int64 or uint64 arguments.
    offsets = random_offsets(np.random.default_rng(), 3001, np.int64)
    assert_columns("randint", launch_columns("randint", offsets, seed, block=128),
                   expected_columns("randint", seed, offsets))


@pytest.mark.parametrize("n_rounds", [1, 7])
def test_compiled_round_count_is_honoured(n_rounds):
    offsets = random_offsets(np.random.default_rng(), 1000, np.int32)
    assert_columns("randint", launch_columns("randint", offsets, 99, n_rounds),
                   expected_columns("randint", 99, offsets, n_rounds))


def test_compiled_scalar_offsets_match_numpy():
    import cupy
    n, seed = 1000, int(np.random.default_rng().integers(0, 2**40))
    bits, uniform, normal = poisoned_device(n, np.uint32), poisoned_device(n, np.float32), \
        poisoned_device(n, np.float32)
    scalar_offset_kernel[(n,)](bits, uniform, normal, seed)
    words = randint4x_reference(seed, np.arange(n, dtype=np.int32))
    u = uniform_reference(words)
    np.testing.assert_array_equal(cupy.asnumpy(bits), words[:, 0])
    np.testing.assert_array_equal(cupy.asnumpy(uniform), u[:, 0])
    np.testing.assert_allclose(cupy.asnumpy(normal), normal_reference(u[:, 0], u[:, 1])[0], rtol=1e-5, atol=1e-6)


def test_compiled_constexpr_seed_matches_numpy():
    import cupy
    n = 5000
    out = poisoned_device(n, np.float32)
    constexpr_seed_kernel[(-(-n // 512),)](out, n, SEED=2**35 + 3, BLOCK=512)
    np.testing.assert_array_equal(cupy.asnumpy(out),
                                  uniform_reference(randint4x_reference(2**35 + 3, np.arange(n))[:, 0]))


@pytest.mark.parametrize("bits,index", KAT_CASES)
def test_compiled_philox_impl_gives_the_known_answers(bits, index):
    import cupy
    rounds, counter, key, expected = KNOWN_ANSWERS[bits][index]
    dt = UNSIGNED[bits]
    out = poisoned_device((1, 4), dt)
    philox_impl_kernel[(1,)](cupy.asarray(np.array([counter], dt)), cupy.asarray(np.array([key], dt)), out, 1,
                             N_ROUNDS=rounds, BLOCK=2)
    assert cupy.asnumpy(out).tolist() == [expected]


@pytest.mark.parametrize("np_dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_compiled_philox_matches_numpy(np_dtype):
    import cupy
    rng = np.random.default_rng()
    n, seed = 2000, int(rng.integers(-2**62, 2**62))
    counters = random_offsets(rng, 4 * n, np_dtype).reshape(n, 4)
    bits = np.dtype(np_dtype).itemsize * 8
    out = poisoned_device((n, 4), UNSIGNED[bits])
    philox_kernel[(-(-n // 128),)](cupy.asarray(counters), out, seed, n, BLOCK=128)
    seed &= 0xFFFFFFFFFFFFFFFF
    key = (seed & 0xFFFFFFFF, seed >> 32) if bits == 32 else (seed, 0)
    np.testing.assert_array_equal(cupy.asnumpy(out),
                                  philox_reference(counters.astype(UNSIGNED[bits]), [key] * n, 10, bits))


def test_compiled_dropout_matches_numpy():
    import cupy
    rng = np.random.default_rng()
    n, p, seed = 100_003, 0.4, int(rng.integers(0, 2**31))
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned_device(n, np.float32)
    dropout_kernel[(-(-n // 1024),)](cupy.asarray(x), out, n, p, seed, BLOCK=1024)
    out = cupy.asnumpy(out)
    keep = uniform_reference(randint4x_reference(seed, np.arange(n, dtype=np.int32))[:, 0]) > np.float32(p)
    np.testing.assert_array_equal(out == 0, ~keep)
    np.testing.assert_allclose(out[keep], x[keep].astype(np.float64) / np.float64(np.float32(1 - np.float32(p))),
                               rtol=2e-6)


# ---- statistics over a million draws -------------------------------------------------------------------------


@pytest.mark.parametrize("kind,mean,variance", [("uniform", 0.5, 1 / 12), ("normal", 0.0, 1.0)])
def test_a_million_draws_have_the_right_moments_and_no_correlation(kind, mean, variance):
    n = 1 << 20
    columns = launch_columns(kind, np.arange(n, dtype=np.int32), 20261129, block=1024).astype(np.float64)
    # Columns 1..4 are rand4x / randn4x's four streams; column 0 repeats column 1.
    np.testing.assert_array_equal(columns[:, 0], columns[:, 1])
    streams = columns[:, 1:]
    if kind == "uniform":
        assert streams.min() >= 0 and streams.max() < 1
    # Five standard errors: the mean's is sqrt(var / n); the variance's is sqrt((mu4 - var**2) / n).
    mu4 = 1 / 80 if kind == "uniform" else 3.0
    for stream in streams.T:
        assert abs(stream.mean() - mean) < 5 * np.sqrt(variance / n)
        assert abs(stream.var() - variance) < 5 * np.sqrt((mu4 - variance**2) / n)
    correlations = np.corrcoef(streams.T)[np.triu_indices(4, 1)]
    assert np.abs(correlations).max() < 5 / np.sqrt(n)
    # Neighbouring offsets are independent too.
    assert abs(np.corrcoef(streams[:-1, 0], streams[1:, 0])[0, 1]) < 5 / np.sqrt(n)


# ---- against Triton ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def triton_twin():
    """This test file's kernels as Triton compiles them, or a skip when Triton or torch with CUDA is missing."""
    from triton_twin import triton_twin_of
    return triton_twin_of(RANDOM_KERNELS)


def _both(twin, name, grid, make_args, constexprs):
    """Run kernel `name` as ours and as Triton's on fresh copies of the same torch arguments."""
    import random_kernels
    results = []
    for kernel in (getattr(random_kernels, name), getattr(twin, name)):
        args = make_args()
        kernel[grid](*args, **constexprs)
        results.append([a.cpu().numpy() for a in args if hasattr(a, "cpu")])
    return results


@pytest.mark.parametrize("kind", ["randint", "uniform", "normal"])
@pytest.mark.parametrize("np_dtype", [np.int32, np.int64])
def test_same_numbers_as_triton(triton_twin, kind, np_dtype):
    import torch
    rng = np.random.default_rng()
    n, seed = 10_007, int(rng.integers(-2**31, 2**31))
    offsets = random_offsets(rng, n, np_dtype)
    name = {"randint": "randint_kernel", "uniform": "uniform_kernel", "normal": "normal_kernel"}[kind]
    out_dtype = torch.int32 if kind == "randint" else torch.float32    # torch has no uint32 arithmetic

    def make_args():
        return [torch.from_numpy(offsets).cuda(), torch.full((n, 5), -7, dtype=out_dtype, device="cuda"), seed, n]
    (_, ours), (_, theirs) = _both(triton_twin, name, (-(-n // 256),), make_args, dict(N_ROUNDS=10, BLOCK=256))
    if kind == "normal":
        # Triton's randn uses sqrt.approx and flush-to-zero libdevice log/sin/cos: a few ulp apart.
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(ours, theirs)


def test_same_dropout_as_triton(triton_twin):
    import torch
    rng = np.random.default_rng()
    n, p, seed = 50_001, 0.3, int(rng.integers(0, 2**31))
    x = rng.standard_normal(n).astype(np.float32)

    def make_args():
        return [torch.from_numpy(x).cuda(), torch.full((n,), float("nan"), device="cuda"), n, p, seed]
    (_, ours), (_, theirs) = _both(triton_twin, "dropout_kernel", (-(-n // 1024),), make_args, dict(BLOCK=1024))
    np.testing.assert_array_equal(ours, theirs)


def test_same_scalar_offset_numbers_as_triton(triton_twin):
    import torch
    n, seed = 513, 2**33 + 17

    def make_args():
        return [torch.full((n,), -7, dtype=torch.int32, device="cuda"),
                torch.full((n,), float("nan"), device="cuda"), torch.full((n,), float("nan"), device="cuda"), seed]
    ours, theirs = _both(triton_twin, "scalar_offset_kernel", (n,), make_args, {})
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-6)
