"""Scans in the interpreter: every scan kernel against NumPy, result types, reverse order, combine order
(non-commutative), wrapping integers, and errors."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from feature_kernels import check
from interp_harness import run_block
from scan_kernels import all_cases
from transpiler.errors import DTypeError, ShapeError
from transpiler.interpreter import interpret

F64 = np.float64
NAMES = [name for name, _ in all_cases(np.random.default_rng(0))]


@pytest.mark.parametrize("name", NAMES)
def test_scan_kernel_matches_numpy_in_the_interpreter(name):
    case = dict(all_cases(np.random.default_rng(7)))[name]
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    interpret(case["kernel"], case["grid"], args, case["constexprs"])
    check(case, args)


@pytest.mark.parametrize("axis,reverse", [(0, False), (1, False), (0, True), (1, True), (-1, True)])
def test_cumsum_2d_axes_and_reverse(rng, axis, reverse):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    values, _, sink = run_block(lambda b: tl.cumsum(b, axis=axis, reverse=reverse), x, np.float32)
    assert sink == [(tl.float32, (8, 16))]
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    expected = flip(np.cumsum(flip(x.astype(F64)), axis=axis)).astype(np.float32)
    np.testing.assert_array_equal(values, expected)   # float64 accumulation, rounded once


def test_cumsum_widens_narrow_integers_and_counts_booleans(rng):
    x = rng.integers(100, 127, 64).astype(np.int8)
    values, _, sink = run_block(lambda b: tl.cumsum(b, 0), x, np.int32)
    assert sink == [(tl.int32, (64,))]
    np.testing.assert_array_equal(values, np.cumsum(x.astype(np.int64)))   # would overflow int8
    values, _, sink = run_block(lambda b: tl.cumsum(b > 110, 0), x, np.uint32)
    assert sink == [(tl.uint32, (64,))]
    np.testing.assert_array_equal(values, np.cumsum(x > 110))


def test_cumsum_int32_wraps_and_dtype_argument():
    x = np.full(8, 2**30, dtype=np.int32)
    values, _, _ = run_block(lambda b: tl.cumsum(b, 0), x, np.int32)
    np.testing.assert_array_equal(values, (np.arange(1, 9, dtype=np.int64) * 2**30).astype(np.int32))
    values, _, sink = run_block(lambda b: tl.cumsum(b, 0, dtype=tl.int64), x, np.int64)
    assert sink == [(tl.int64, (8,))]
    np.testing.assert_array_equal(values, np.arange(1, 9) * 2**30)


def test_bf16_scans_as_fp32(rng):
    x = rng.standard_normal(32).astype(np.float32)
    values, _, sink = run_block(lambda b: tl.cumprod(b.to(tl.bfloat16), 0), x, np.float32)
    assert sink == [(tl.float32, (32,))]


def test_cumprod_fp16_keeps_its_type_and_rounds_each_element_once(rng):
    x = (1 + 0.05 * rng.standard_normal(64)).astype(np.float16)
    values, _, sink = run_block(lambda b: b.cumprod(0), x, np.float16)
    assert sink == [(tl.float16, (64,))]
    np.testing.assert_array_equal(values, np.cumprod(x.astype(F64)).astype(np.float16))


@transpiler.jit
def _compose(a_left, b_left, a_right, b_right):
    return a_left * a_right, b_left * a_right + b_right


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_keeps_the_order_of_a_non_commutative_combine(rng, reverse):
    """Affine maps h -> a h + b compose in order; a reverse scan composes from the last element."""
    a = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    out = np.full(16, np.nan, np.float32)

    @transpiler.jit
    def kernel(A, B, OUT, REVERSE: tl.constexpr):
        offs = tl.arange(0, 16)
        _, h = tl.associative_scan((tl.load(A + offs), tl.load(B + offs)), 0, _compose, reverse=REVERSE)
        tl.store(OUT + offs, h)

    interpret(kernel, (1,), (a, b, out), dict(REVERSE=reverse))
    order = range(15, -1, -1) if reverse else range(16)
    h, expected = 0.0, np.zeros(16)
    for t in order:
        h = a[t].astype(F64) * h + b[t]
        expected[t] = h
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@transpiler.jit
def _keep_max(a, b):
    return tl.maximum(a, b)


def test_associative_scan_single_block_running_max(rng):
    x = rng.standard_normal((4, 32)).astype(np.float32)
    values, _, sink = run_block(lambda b: tl.associative_scan(b, 1, _keep_max), x, np.float32)
    assert sink == [(tl.float32, (4, 32))]
    np.testing.assert_array_equal(values, np.maximum.accumulate(x, axis=1))


@pytest.mark.parametrize("op,error", [
    (lambda b: tl.cumsum(tl.sum(b, 0), 0), ShapeError),
    (lambda b: tl.cumsum(b, 1), ShapeError),
    (lambda b: tl.cumsum(b, 0, dtype="int32"), DTypeError),
    (lambda b: tl.associative_scan((b, b.reshape(2, 8)), 0, _keep_max), ShapeError),
])
def test_scan_errors(rng, op, error):
    with pytest.raises(error):
        run_block(op, rng.standard_normal(16).astype(np.float32), np.float32)
