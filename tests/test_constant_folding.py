"""Scalar constants the compiler combines at compile time (`parse/semantic.py` `_folded`) have the value the GPU
computes: wrap-around integers of every width (int1 included: `1 + 1` is 0, as Triton's i1 add), IEEE fp32 and
fp64 rounded once, comparisons and bitwise operations. The reference is Python's integers reduced to the width and
NumPy's scalar float arithmetic, not the interpreter whose evaluation the folding shares."""
import operator
import random

import numpy as np
import pytest

from transpiler import dtypes as dt
from transpiler.interpreter.eager import BUILDER
from transpiler.parse import semantic
from transpiler.parse.ir import OpKind

ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
               "ne": operator.ne}
BITWISE = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}
INTEGERS = [dt.int1, dt.int8, dt.uint8, dt.int16, dt.uint16, dt.int32, dt.uint32, dt.int64, dt.uint64]
FLOATS = [dt.float32, dt.float64]


def _wrapped(value, dtype):
    if dtype is dt.int1:
        return value & 1
    value &= (1 << dtype.bits) - 1
    return value - (1 << dtype.bits) if dtype.signed and value >> (dtype.bits - 1) else value


def _random_value(rng, dtype):
    if dtype is dt.int1:
        return rng.choice([0, 1])
    if dtype.is_floating():
        return float(np.float32(rng.uniform(-1e6, 1e6))) if dtype is dt.float32 else rng.uniform(-1e12, 1e12)
    lo, hi = (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1) if dtype.signed else (0, (1 << dtype.bits) - 1)
    return rng.choice([lo, hi, 0, 1, rng.randint(lo, hi), rng.randint(lo, hi)])


def _folded(fn, dtype, a, b):
    out = dt.int1 if fn in COMPARISONS else dtype
    x, y = semantic.constant(BUILDER, a, dtype), semantic.constant(BUILDER, b, dtype)
    result = semantic.elementwise(BUILDER, fn, [x, y], out)
    assert result.owner.name == OpKind.CONSTANT, f"{fn} on {dtype!r} constants was not folded"
    return result.owner.attrs["value"]


@pytest.mark.parametrize("dtype", INTEGERS, ids=repr)
@pytest.mark.parametrize("fn", [*ARITHMETIC, *COMPARISONS, *BITWISE])
def test_folded_integer_constants_wrap_as_the_gpu_does(fn, dtype):
    rng = random.Random(f"{fn}{dtype!r}")
    for _ in range(40):
        a, b = _random_value(rng, dtype), _random_value(rng, dtype)
        table = {**ARITHMETIC, **COMPARISONS, **BITWISE}
        want = table[fn](a, b)
        want = int(want) if fn in COMPARISONS else _wrapped(want, dtype)
        assert int(_folded(fn, dtype, a, b)) == want, (fn, dtype, a, b)


def test_int1_addition_wraps_to_zero():
    """Triton's i1 add: `1 + 1` is 0 (the folding once gave NumPy's boolean `+`, an `or`: 1)."""
    assert int(_folded("add", dt.int1, 1, 1)) == 0
    assert int(_folded("sub", dt.int1, 0, 1)) == 1


@pytest.mark.parametrize("dtype", FLOATS, ids=repr)
@pytest.mark.parametrize("fn", [*ARITHMETIC, *COMPARISONS])
def test_folded_float_constants_round_once_to_their_type(fn, dtype):
    rng = random.Random(f"{fn}{dtype!r}")
    scalar = np.float32 if dtype is dt.float32 else np.float64
    for _ in range(40):
        a, b = _random_value(rng, dtype), _random_value(rng, dtype)
        want = {**ARITHMETIC, **COMPARISONS}[fn](scalar(a), scalar(b))
        got = _folded(fn, dtype, a, b)
        assert got == want and type(got) is (bool if fn in COMPARISONS else float), (fn, dtype, a, b, got, want)
