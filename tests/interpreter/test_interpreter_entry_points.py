"""The ways a user reaches the interpreter with a `@transpiler.jit` kernel, and what they see there.

`TRANSPILER_INTERPRET=1` turns `kernel[grid](...)` into a CPU run; `kernel.interpret[grid](...)` asks for one
explicitly. Inside, `print` and `breakpoint()` work on real values, an unmasked out-of-bounds access raises
InterpreterError naming the line and the offsets, and CPU torch tensors are used in place.
"""
import inspect
import sys

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import InterpreterError


@transpiler.jit
def scale_kernel(X, OUT, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(OUT + offs, tl.load(X + offs, mask=m) * factor, mask=m)


@transpiler.jit
def unmasked_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < 10, other=0.0)
    tl.store(OUT + offs, x)  # OOB-STORE


@transpiler.jit
def printing_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    print("x =", x)
    tl.device_print("pid ", tl.program_id(0))


@transpiler.jit
def breakpoint_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs) * 2
    breakpoint()
    tl.store(X + offs, x)


def _line(kernel, marker):
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def test_environment_variable_makes_launches_run_on_the_interpreter(monkeypatch, rng):
    monkeypatch.setenv("TRANSPILER_INTERPRET", "1")
    x = rng.standard_normal(100).astype(np.float32)
    out = np.full(100, np.nan, np.float32)
    scale_kernel[(transpiler.cdiv(100, 32),)](x, out, 100, 3.0, BLOCK=32)   # NumPy arrays: no GPU involved
    np.testing.assert_array_equal(out, x * np.float32(3.0))


def test_interpret_attribute_runs_the_kernel_with_a_callable_grid(rng):
    x = rng.standard_normal(70).astype(np.float32)
    out = np.full(70, np.nan, np.float32)
    scale_kernel.interpret[lambda meta: (transpiler.cdiv(meta["n"], meta["BLOCK"]),)](x, out, 70, -0.5, BLOCK=16)
    np.testing.assert_array_equal(out, x * np.float32(-0.5))


def test_unmasked_out_of_bounds_store_names_the_line_and_the_offsets():
    x = np.arange(16, dtype=np.float32)
    out = np.full(12, np.nan, np.float32)
    with pytest.raises(InterpreterError) as info:
        unmasked_kernel.interpret[(2,)](x, out, BLOCK=8)
    err = info.value
    assert err.loc.line == _line(unmasked_kernel, "OOB-STORE")
    text = str(err)
    assert "in kernel 'unmasked_kernel': out-of-bounds store through 'OUT' in program (1, 0, 0)" in text
    assert "offsets 12 (lane (4,)), 13 (lane (5,)), 14 (lane (6,)), 15 (lane (7,))" in text
    assert "buffer of 12 elements" in text and err.hint
    np.testing.assert_array_equal(out[:8], x[:8])     # program 0 ran; program 1 stored nothing
    assert np.isnan(out[8:]).all()


def test_print_inside_a_kernel_shows_values(capsys):
    unmasked = np.arange(4, dtype=np.float32)
    printing_kernel.interpret[(2,)](unmasked, BLOCK=4)
    printed = capsys.readouterr().out
    assert printed.count("x = [0. 1. 2. 3.]") == 2
    assert "pid" in printed and "1" in printed


def test_breakpoint_inside_a_kernel_sees_the_kernel_locals(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: seen.append(sys._getframe(1).f_locals["x"]))
    x = np.arange(4, dtype=np.float32)
    breakpoint_kernel.interpret[(1,)](x, BLOCK=4)
    assert len(seen) == 1
    np.testing.assert_array_equal(np.asarray(seen[0].data), [0, 2, 4, 6])
    np.testing.assert_array_equal(x, [0, 2, 4, 6])


def test_torch_cpu_tensors_are_read_and_written_in_place(rng):
    torch = pytest.importorskip("torch")
    x = torch.tensor(rng.standard_normal(50), dtype=torch.float32)
    out = torch.full((50,), float("nan"), dtype=torch.float32)
    scale_kernel.interpret[(2,)](x, out, 50, 2.0, BLOCK=32)
    assert torch.equal(out, x * 2)
