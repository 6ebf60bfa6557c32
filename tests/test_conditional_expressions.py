"""A conditional expression on a runtime scalar condition runs only its taken branch when a branch loads,
stores, updates atomically, prints or asserts (an `if` with a result, as Triton's scf.if); pure branches stay a
select. A block condition is refused, as Triton's scf.if takes a scalar. Each case checks the IR's structure,
runs on the interpreter against NumPy, and compiles with NVRTC; the GPU run is test_gpu_conditional_expressions.py.
"""
import numpy as np
import pytest

import conditional_kernels as K
from test_minmax_typing import compiles
from transpiler import CompileTimeError, ShapeError
from transpiler.parse.ir import walk

FAR = 1 << 30          # an index whose address lies far outside any test array


def gather_case(rng, n=37, programs=50):
    x = rng.standard_normal(n).astype(np.float32)
    idx = np.where(rng.random(programs) < 0.5, rng.integers(0, n, programs), FAR).astype(np.int32)
    want = np.where(idx < n, 2.0 * x[np.minimum(idx, n - 1)], -1.0).astype(np.float32)
    return x, idx, want


def loads_outside_ifs(ir):
    """The loads not nested in an `if` (walk the top-level ops, stepping into loops but not into ifs)."""
    found, stack = [], list(ir.body.ops)
    while stack:
        op = stack.pop()
        if op.name == "load":
            found.append(op)
        if op.name != "if":
            for r in op.regions:
                stack.extend(r.ops)
    return found


@pytest.mark.parametrize("via_helper", [False, True], ids=["inline", "helper"])
def test_a_load_in_a_branch_runs_only_when_taken(via_helper):
    rng = np.random.default_rng()
    x, idx, want = gather_case(rng)
    out = np.full(len(idx), np.nan, np.float32)
    args, constexprs = (x, idx, out, len(x)), dict(VIA_HELPER=via_helper)
    ir = K.guarded_gather_kernel.ir(*args, **constexprs)
    assert len(loads_outside_ifs(ir)) == 1                 # IDX[p] only; X[i] is inside the if
    assert any(op.name == "if" and any(o.name == "load" for r in op.regions for o in walk(r))
               for op in walk(ir.body))
    K.guarded_gather_kernel.interpret[(len(idx),)](*args, **constexprs)
    np.testing.assert_array_equal(out, want)
    compiles(K.guarded_gather_kernel, args, constexprs)


def test_a_block_load_in_a_branch_runs_only_when_taken():
    rng = np.random.default_rng()
    n_rows, n_cols, programs = 7, 45, 12
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    rows = np.where(rng.random(programs) < 0.5, rng.integers(0, n_rows, programs), FAR).astype(np.int32)
    out = np.full((programs, n_cols), np.nan, np.float32)
    args, constexprs = (x, rows, out, n_rows, n_cols), dict(BLOCK=64)
    K.guarded_block_kernel.interpret[(programs,)](*args, **constexprs)
    want = np.where((rows < n_rows)[:, None], x[np.minimum(rows, n_rows - 1)] + 1.0, 0.0)
    np.testing.assert_array_equal(out, want.astype(np.float32))
    assert len(loads_outside_ifs(K.guarded_block_kernel.ir(*args, **constexprs))) == 1
    compiles(K.guarded_block_kernel, args, constexprs)


def test_an_atomic_in_a_branch_runs_only_when_taken():
    programs = 9
    old, count = np.full(programs, -7, np.int32), np.zeros(1, np.int32)
    ir = K.guarded_atomic_kernel.ir(old, count)
    assert not any(op.name == "atomic_rmw" for op in ir.body.ops)
    K.guarded_atomic_kernel.interpret[(programs,)](old, count)
    assert count[0] == (programs + 1) // 2
    assert sorted(old[::2]) == list(range((programs + 1) // 2)) and list(old[1::2]) == [-1] * (programs // 2)
    compiles(K.guarded_atomic_kernel, (old, count), {})


def test_pure_branches_stay_a_select():
    rng = np.random.default_rng()
    n, block, programs = 50, 64, 3
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full((programs, block), np.nan, np.float32)
    args, constexprs = (x, out, n), dict(BLOCK=block)
    ir = K.pure_conditional_kernel.ir(*args, **constexprs)
    assert not any(op.name == "if" for op in walk(ir.body))
    K.pure_conditional_kernel.interpret[(programs,)](*args, **constexprs)
    for p in range(programs):
        np.testing.assert_array_equal(out[p, :n], x * np.float32(3.0) if p % 2 == 0 else x - np.float32(1.0))
    compiles(K.pure_conditional_kernel, args, constexprs)


def test_a_block_condition_is_refused():
    x = np.ones(10, np.float32)
    with pytest.raises(ShapeError, match="must be a scalar"):
        K.block_condition_kernel.ir(x, x.copy(), 10, BLOCK=16)
    with pytest.raises(ShapeError, match="scalar"):
        K.block_condition_kernel.interpret[(1,)](x, x.copy(), 10, BLOCK=16)


@pytest.mark.parametrize("guarded", [True, False], ids=["loads", "pure"])
def test_branches_of_different_types_are_refused(guarded):
    x, h = np.ones(4, np.float32), np.ones(4, np.float16)
    with pytest.raises(CompileTimeError, match="same type"):
        K.mixed_types_kernel.ir(x, h, x.copy(), GUARDED=guarded)
