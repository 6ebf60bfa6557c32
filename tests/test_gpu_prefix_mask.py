"""GPU: runs tested on one lane under a prefix mask (analysis/mask_runs.py, TRANSPILER_PREFIX_MASK=1) against
NumPy on fresh random inputs, outputs poisoned: every mask kind of `prefix_mask_kernels` (prefix or not) in fp16
and fp32 and ragged at both ends, the row kernels of the memory-bound checks (ragged rows, odd and 4k strides),
the same in the row ring, and a matmul whose K is ragged inside 16-byte runs (the cp.async pipeline's copies)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import membound_kernels as K
from prefix_mask_kernels import KINDS, args_for, expected, masked_scale

pytestmark = pytest.mark.gpu
NAMES = [c[0] for c in K.all_cases(np.random.default_rng(0))]


@pytest.fixture(autouse=True)
def _prefix_masks_on(monkeypatch):
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "1")


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("n, lo, hi, block", [(1000, 5, 997, 1024), (5003, 3, 4999, 256), (777, 0, 770, 128),
                                              (64, 9, 9, 64)])
def test_every_mask_kind_matches_numpy(kind, dtype, n, lo, hi, block):
    import cupy
    rng = np.random.default_rng()
    args = args_for(cupy, dtype, n, lo, hi, block, rng)
    masked_scale[(-(-n // block),)](*args, BLOCK=block, KIND=kind)
    got = cupy.asnumpy(args[1]).astype(np.float64)
    np.testing.assert_array_equal(got, expected(kind, cupy.asnumpy(args[0]), n, lo, hi, block),
                                  err_msg=KINDS[kind][0])


@pytest.mark.parametrize("name", NAMES)
def test_row_kernels_match_numpy(name):
    case = K.fresh(dict(K.all_cases(np.random.default_rng()))[name])
    K.check(case, K.run_on_gpu(case))


@pytest.mark.parametrize("name", ["softmax_fp32_ragged_odd_stride", "softmax_fp16_4k_on_fewer_warps",
                                  "norm_fp32_ragged", "argmax_fp16_odd_stride"])
def test_row_kernels_in_the_ring_match_numpy(name, monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_RING", "2")
    case = K.fresh(dict(K.all_cases(np.random.default_rng()))[name])
    K.check(case, K.run_on_gpu(case))


@pytest.mark.parametrize("k", [1001, 77, 1023])
def test_matmul_with_k_ragged_inside_runs_matches_numpy(k):
    import cupy
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import matmul as example
    rng = np.random.default_rng()
    m, n, pitch = 200, 136, -(-k // 16) * 16 + 16
    a = cupy.asarray(rng.standard_normal((m, pitch)).astype(np.float16))[:, :k]
    b = cupy.asarray(rng.standard_normal((k, n)).astype(np.float16))
    out = cupy.full((m, n), np.nan, np.float16)
    example.matmul(a, b, out=out)
    ref = example.reference(cupy.asnumpy(a), cupy.asnumpy(b))
    got = cupy.asnumpy(out).astype(np.float64)
    assert np.linalg.norm(got - ref) <= example.REL_ERROR["float16"] * np.linalg.norm(ref)
