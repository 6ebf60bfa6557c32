"""`break` and `continue`: Triton 3.6's compiler refuses them ("unsupported AST node type: Break", checked with its
front end on the CPU) wherever it builds one, in runtime loops and `tl.static_range` alike, and builds none under
a constexpr `if` that is false. Both our paths refuse them with the same located refusal: the compiler where it
builds one, the interpreter where it reaches one or enters a runtime `if` whose branches hold one (the compiler
builds both branches of a runtime `if`, taken or not)."""
import inspect

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import UnsupportedSyntaxError
from transpiler.errors import NOT_TRITON


@transpiler.jit
def break_in_runtime_loop_kernel(X, n):
    acc = 0.0
    for i in range(n):
        if i == 3:
            break  # <-
        acc += tl.load(X + i)
    tl.store(X, acc)


@transpiler.jit
def continue_in_static_range_kernel(X, n):
    acc = 0.0
    for i in tl.static_range(8):
        if i == 3:
            continue  # <-
        acc += tl.load(X + i)
    tl.store(X, acc)


@transpiler.jit
def break_in_while_kernel(X, n):
    i = 0
    while i < n:
        i += 1
        if tl.load(X + i) > 4.0:
            break  # <-
    tl.store(X, i.to(tl.float32))


@transpiler.jit
def break_never_taken_kernel(X, n):
    acc = 0.0
    for i in range(n):
        if i == n + 100:           # a runtime condition never true in the run: the compiler builds the branch
            acc += 1.0
            break  # <-
        acc += tl.load(X + i)
    tl.store(X, acc)


@transpiler.jit
def continue_in_else_never_taken_kernel(X, n):
    acc = 0.0
    for i in range(n):
        if i < n:
            acc += tl.load(X + i)
        else:
            continue  # <-
    tl.store(X, acc)


@transpiler.jit
def break_under_constexpr_kernel(X, n, STOP: tl.constexpr):
    acc = 0.0
    for i in range(n):
        if STOP:
            break  # <-
        acc += tl.load(X + i)
    tl.store(X, acc)


REFUSED = [(break_in_runtime_loop_kernel, {}), (continue_in_static_range_kernel, {}), (break_in_while_kernel, {}),
           (break_never_taken_kernel, {}), (continue_in_else_never_taken_kernel, {}),
           (break_under_constexpr_kernel, {"STOP": True})]


def _marked(kernel):
    lines, start = inspect.getsourcelines(kernel.fn)
    index = next(i for i, line in enumerate(lines) if "# <-" in line)
    return start + index, len(lines[index]) - len(lines[index].lstrip())


def _refusal(run):
    with pytest.raises(UnsupportedSyntaxError) as err:
        run()
    return err.value


@pytest.mark.parametrize("kernel, consts", REFUSED, ids=[k.__name__ for k, _ in REFUSED])
def test_both_paths_refuse_a_loop_exit_with_the_same_located_message(kernel, consts):
    x = np.random.default_rng(0).uniform(1.0, 8.0, 16).astype(np.float32)
    before = x.copy()
    compiled = _refusal(lambda: kernel.cuda_source(x, 8, **consts))
    interpreted = _refusal(lambda: kernel.interpret[(1,)](x, 8, **consts))
    for err in (compiled, interpreted):
        assert err.refusal is NOT_TRITON
        assert (err.loc.line, err.loc.col) == _marked(kernel)
        assert "(Triton rejects it too)" in err.error_message
    assert (interpreted.error_message, interpreted.hint) == (compiled.error_message, compiled.hint)
    np.testing.assert_array_equal(x, before)       # refused before any store ran


def test_a_loop_exit_under_a_false_constexpr_if_is_built_by_neither_path():
    x = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    want = x[:8].astype(np.float64).sum()
    src = break_under_constexpr_kernel.cuda_source(x, 8, STOP=False)
    assert "for (" in src                        # the loop is built, the folded branch is not
    break_under_constexpr_kernel.interpret[(1,)](x, 8, STOP=False)
    np.testing.assert_allclose(x[0], want, rtol=1e-6)
