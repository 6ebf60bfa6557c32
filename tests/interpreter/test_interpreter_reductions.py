"""Reductions: sum/max/min/argmax/argmin/xor_sum, axes, keep_dims, NaN handling, result types, tl.reduce."""
import numpy as np
import pytest

import transpiler.language as tl
from interp_harness import run_block
from transpiler.errors import DTypeError, ShapeError

F64 = np.float64


def test_sum_1d_fp32_accumulates_wide(rng):
    x = rng.standard_normal(256).astype(np.float32)
    values, _, sink = run_block(lambda b: tl.sum(b, axis=0), x, np.float32)
    assert sink == [(tl.float32, ())]
    assert values == np.float32(x.astype(F64).sum())


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_sum_2d_axes(rng, axis):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    values, _, sink = run_block(lambda b: b.sum(axis=axis), x, np.float32)
    expected = x.astype(F64).sum(axis=axis).astype(np.float32)
    assert sink == [(tl.float32, expected.shape)]
    np.testing.assert_array_equal(values, expected)


def test_sum_keep_dims_and_axis_none(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    values, _, sink = run_block(lambda b: tl.sum(b, axis=1, keep_dims=True), x, np.float32)
    assert sink == [(tl.float32, (4, 1))]
    np.testing.assert_array_equal(values, x.astype(F64).sum(1, keepdims=True).astype(np.float32))
    values, _, sink = run_block(lambda b: tl.sum(b), x, np.float32)
    assert sink == [(tl.float32, ())]
    assert values == np.float32(x.astype(F64).sum())
    values, _, sink = run_block(lambda b: tl.sum(b, axis=None, keep_dims=True), x, np.float32)
    assert sink == [(tl.float32, (1, 1))]


def test_sum_widens_narrow_integers(rng):
    x = rng.integers(100, 127, (4, 32)).astype(np.int8)
    values, _, sink = run_block(lambda b: tl.sum(b, axis=1), x, np.int32)
    assert sink == [(tl.int32, (4,))]
    np.testing.assert_array_equal(values, x.astype(np.int64).sum(1))  # would overflow int8
    u = rng.integers(200, 255, 64).astype(np.uint8)
    values, _, sink = run_block(lambda b: tl.sum(b, axis=0), u, np.uint32)
    assert sink == [(tl.uint32, ())] and values == u.astype(np.int64).sum()
    values, _, sink = run_block(lambda b: tl.sum(b > 220, axis=0), u, np.uint32)
    assert sink == [(tl.uint32, ())] and values == (u > 220).sum()


def test_sum_int32_wraps_and_dtype_argument(rng):
    x = np.full(8, 2**30, dtype=np.int32)
    values, _, _ = run_block(lambda b: tl.sum(b, axis=0), x, np.int32)
    assert values == 0  # 8 * 2**30 wraps to 0 in 32 bits
    values, _, sink = run_block(lambda b: tl.sum(b, axis=0, dtype=tl.int64), x, np.int64)
    assert sink == [(tl.int64, ())] and values == 8 * 2**30


def test_sum_fp16_keeps_dtype_rounds_once(rng):
    x = (rng.random(128) * 10).astype(np.float16)
    values, _, sink = run_block(lambda b: tl.sum(b, axis=0), x, np.float16)
    assert sink == [(tl.float16, ())]
    assert values == np.float16(x.astype(F64).sum())


def test_max_min_types(rng):
    x8 = rng.integers(-128, 127, 64).astype(np.int8)
    values, _, sink = run_block(lambda b: tl.max(b, axis=0), x8, np.int32)
    assert sink == [(tl.int32, ())] and values == x8.max()
    x16 = rng.standard_normal(64).astype(np.float16)
    values, _, sink = run_block(lambda b: tl.min(b, axis=0), x16, np.float32)
    assert sink == [(tl.float32, ())] and values == x16.astype(np.float32).min()
    # With indices the value keeps fp16; bf16 is widened to fp32 first (Triton's max/min do so).
    values, idx, sink = run_block(lambda b: tl.max(b, axis=0, return_indices=True), x16, np.float16)
    assert sink == [(tl.float16, ()), (tl.int32, ())]
    assert values == x16.max() and idx == np.argmax(x16)
    _, _, sink = run_block(lambda b: tl.max(b.to(tl.bfloat16), axis=0, return_indices=True), x16, np.float32)
    assert sink == [(tl.float32, ()), (tl.int32, ())]


def test_max_min_2d_with_indices_and_keep_dims(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    for axis in (0, 1):
        values, idx, sink = run_block(lambda b: tl.min(b, axis=axis, return_indices=True, keep_dims=True), x,
                                      np.float32)
        assert sink[1][1] == sink[0][1] == np.expand_dims(x.min(axis), axis).shape
        np.testing.assert_array_equal(values, x.min(axis, keepdims=True))
        np.testing.assert_array_equal(idx, np.expand_dims(np.argmin(x, axis), axis))


def test_argmax_argmin_ties_go_to_the_smallest_index(rng):
    x = rng.integers(0, 4, (8, 32)).astype(np.int32)  # many ties
    values_max, _, sink = run_block(lambda b: tl.argmax(b, axis=1), x, np.int32)
    assert sink == [(tl.int32, (8,))]
    np.testing.assert_array_equal(values_max, np.argmax(x, axis=1))
    values_min, _, _ = run_block(lambda b: tl.argmin(b, 0), x, np.int32)
    np.testing.assert_array_equal(values_min, np.argmin(x, axis=0))
    assert (np.argmax(x, axis=1) != 31 - np.argmax(x[:, ::-1], axis=1)).any()  # ties really matter here


def test_max_min_nan_loses():
    x = np.array([np.nan, 1.0, 5.0, np.nan, -2.0, 3.0, np.nan, 0.0], dtype=np.float32)
    values, _, _ = run_block(lambda b: tl.max(b, axis=0), x, np.float32)
    assert values == 5.0
    values, _, _ = run_block(lambda b: tl.min(b, axis=0), x, np.float32)
    assert values == -2.0
    values, _, _ = run_block(lambda b: tl.argmax(b, axis=0), x, np.int32)
    assert values == 2
    all_nan = np.full(4, np.nan, dtype=np.float32)
    values, _, _ = run_block(lambda b: tl.max(b, axis=0), all_nan, np.float32)
    assert np.isnan(values)


def test_xor_sum(rng):
    x = rng.integers(0, 2**31 - 1, (4, 16)).astype(np.int32)
    values, _, sink = run_block(lambda b: tl.xor_sum(b, axis=1), x, np.int32)
    assert sink == [(tl.int32, (4,))]
    np.testing.assert_array_equal(values, np.bitwise_xor.reduce(x, axis=1))
    with pytest.raises(DTypeError, match="integers"):
        run_block(lambda b: tl.xor_sum(b.to(tl.float32), axis=1), x, np.int32)


def test_axis_out_of_range():
    with pytest.raises(ShapeError, match=r"axis 2 .*rank 2"):
        run_block(lambda b: tl.sum(b, axis=2), np.ones((2, 4), np.float32), np.float32)
    with pytest.raises(ShapeError, match=r"axis -2 .*rank 1"):
        run_block(lambda b: tl.max(b, axis=-2), np.ones(4, np.float32), np.float32)


# ---- tl.reduce with a user combine function ------------------------------------------------------------------


def _multiply(a, b):
    return a * b


def _max_abs(a, b):
    return tl.where(tl.abs(a) >= tl.abs(b), a, b)


def _argmax_combine(value1, index1, value2, index2):
    better = (value1 > value2) | ((value1 == value2) & (index1 < index2))
    return tl.where(better, value1, value2), tl.where(better, index1, index2)


def test_reduce_with_user_combine(rng):
    x = (rng.random((4, 8)) + 0.5).astype(np.float32)
    values, _, sink = run_block(lambda b: tl.reduce(b, 1, _multiply), x, np.float32)
    assert sink == [(tl.float32, (4,))]
    np.testing.assert_allclose(values, x.astype(F64).prod(1), rtol=1e-6)
    y = rng.standard_normal(32).astype(np.float32)
    values, _, _ = run_block(lambda b: b.reduce(0, _max_abs), y, np.float32)
    assert values == y[np.argmax(np.abs(y))]
    values, _, sink = run_block(lambda b: tl.reduce(b, None, _multiply, keep_dims=True), x, np.float32)
    assert sink == [(tl.float32, (1, 1))]
    np.testing.assert_allclose(values, [[x.astype(F64).prod()]], rtol=1e-5)


def test_reduce_tuple_argmax_like(rng):
    x = rng.integers(0, 5, (8, 16)).astype(np.int32)

    def op(block):
        index = tl.broadcast_to(tl.arange(0, 16)[None, :], 8, 16)
        return tl.reduce((block, index), 1, _argmax_combine)

    values, idx, sink = run_block(op, x, np.int32)
    assert sink == [(tl.int32, (8,)), (tl.int32, (8,))]
    np.testing.assert_array_equal(values, x.max(1))
    np.testing.assert_array_equal(idx, np.argmax(x, 1))


def test_reduce_combine_must_keep_types():
    with pytest.raises(DTypeError, match="combine_fn returned"):
        run_block(lambda b: tl.reduce(b, 0, lambda a, c: (a + c).to(tl.float32)), np.arange(4, dtype=np.int32),
                  np.int32)
