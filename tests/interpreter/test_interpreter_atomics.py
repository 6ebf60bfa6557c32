"""The interpreter runs every atomic kernel (tests/atomic_kernels.py) and matches its NumPy reference; its
sequential semantics (lane order within a block, old values, masks) and its errors match the compiler's."""
import numpy as np
import pytest

import atomic_kernels as A
import transpiler
import transpiler.language as tl
from transpiler.errors import CompileTimeError, DTypeError, ShapeError
from transpiler.interpreter import interpret

CASES = A.all_cases(np.random.default_rng(0))


def run(case):
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    after = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    interpret(case["kernel"], case["grid"], after, case["constexprs"], num_warps=case["num_warps"])
    return before, after


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_interpreter_atomic_kernel_matches_numpy(name, case):
    before, after = run(case)
    case["check"](before, after)


@transpiler.jit
def _old_values(P, IDX, OLD, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_add(P + tl.load(IDX + offs), offs + 1, mask=offs % 3 != 0)
    tl.store(OLD + offs, old)


def test_interpreter_atomic_lanes_hitting_one_address_apply_in_lane_order():
    idx = np.array([2, 0, 2, 2, 1, 2, 0, 2], np.int32)
    p = np.array([10, 20, 30], np.int32)
    old = np.full(8, -99, np.int32)
    interpret(_old_values, (1,), [p, idx, old], dict(BLOCK=8))
    # Lanes 0, 3, 6 are masked off (old value 0); the others see the sum of the earlier lanes.
    expected_old, mem = [], [10, 20, 30]
    for lane, i in enumerate(idx):
        if lane % 3 == 0:
            expected_old.append(0)
            continue
        expected_old.append(mem[i])
        mem[i] += lane + 1
    np.testing.assert_array_equal(old, expected_old)
    np.testing.assert_array_equal(p, mem)


@transpiler.jit
def _float_max(P, X, OLD, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OLD + offs, tl.atomic_max(P + offs, tl.load(X + offs)))


def test_interpreter_float_atomic_max_compares_bits_as_triton_does():
    # Triton's pair of integer atomics: -0.0 does not replace +0.0 but +0.0 replaces -0.0; a NaN with its sign
    # bit clear wins, one with the sign bit set never does; negative numbers order as numbers.
    neg_nan = np.array([0xFFC00000], np.uint32).view(np.float32)[0]
    p = np.array([0.0, -0.0, 1.0, 1.0, -3.0, -3.0, 5.0, -1.0], np.float32)
    x = np.array([-0.0, 0.0, np.nan, neg_nan, -2.0, -4.0, -7.0, 2.0], np.float32)
    before = p.copy()
    old = np.zeros(8, np.float32)
    interpret(_float_max, (1,), [p, x, old], dict(BLOCK=8))
    expected = np.array([0.0, 0.0, np.nan, 1.0, -2.0, -3.0, 5.0, 2.0], np.float32)
    np.testing.assert_array_equal(p.view(np.uint32)[[0, 1, 3, 4, 5, 6, 7]],
                                  expected.view(np.uint32)[[0, 1, 3, 4, 5, 6, 7]])
    assert np.isnan(p[2])
    np.testing.assert_array_equal(old.view(np.uint32), before.view(np.uint32))


@transpiler.jit
def _bad(P, X, OP: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    offs = tl.arange(0, 16)
    if OP == "add":
        tl.atomic_add(P + offs, tl.load(X + offs), sem=SEM, scope=SCOPE)
    elif OP == "max":
        tl.atomic_max(P + offs, tl.load(X + offs), sem=SEM, scope=SCOPE)
    elif OP == "xor":
        tl.atomic_xor(P + offs, tl.load(X + offs), sem=SEM, scope=SCOPE)
    elif OP == "cas":
        tl.atomic_cas(P + offs, tl.load(X + offs), 1, sem=SEM, scope=SCOPE)
    elif OP == "scalar_ptr":
        tl.atomic_add(P, tl.load(X + offs))
    else:
        tl.atomic_add(P + offs, tl.load(X + offs), mask=offs)


BAD = [
    ("max", np.float16, np.float16, "acq_rel", "gpu", DTypeError, "does not support"),
    ("add", np.int16, np.int16, "acq_rel", "gpu", DTypeError, "32- or 64-bit"),
    ("add", np.int8, np.int8, "acq_rel", "gpu", DTypeError, "32- or 64-bit"),
    ("xor", np.float32, np.float32, "acq_rel", "gpu", DTypeError, "integer elements"),
    ("cas", np.int8, np.int8, "acq_rel", "gpu", DTypeError, "16-, 32- or 64-bit"),
    ("cas", np.float32, np.int32, "acq_rel", "gpu", DTypeError, "int32"),
    ("add", np.float32, np.float32, "seq_cst", "gpu", CompileTimeError, "memory order"),
    ("add", np.float32, np.float32, "relaxed", "cluster", CompileTimeError, "scope"),
    ("scalar_ptr", np.float32, np.float32, "acq_rel", "gpu", ShapeError, "scalar pointer"),
    ("mask", np.float32, np.float32, "acq_rel", "gpu", DTypeError, "mask"),
]


@pytest.mark.parametrize("op,pdt,xdt,sem,scope,err,words", BAD)
def test_interpreter_and_compiler_reject_the_same_atomics(op, pdt, xdt, sem, scope, err, words):
    p, x = np.zeros(16, pdt), np.ones(16, xdt)
    with pytest.raises(err, match=words):
        interpret(_bad, (1,), [p, x], dict(OP=op, SEM=sem, SCOPE=scope))
    with pytest.raises(err, match=words):
        _bad.cuda_source(p, x, OP=op, SEM=sem, SCOPE=scope)
