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


@transpiler.jit
def carried_kernel(X, OUT, n, BLOCK: tl.constexpr):
    count = 0
    big = 2147483647
    half = 0.0
    for start in range(0, n, BLOCK):
        count += 1
        big += 1                                   # int32 wraps, as in the compiled loop
        half = half + tl.sum(tl.load(X + start + tl.arange(0, BLOCK)).to(tl.float16), axis=0)
    tl.static_print(count.dtype, big.dtype, half.dtype)
    tl.store(OUT, count.to(tl.float32))
    tl.store(OUT + 1, big.to(tl.float32))
    tl.store(OUT + 2, half)
    for i in range(0, 2):
        tl.store(OUT + 3 + i, i.to(tl.float32) + 10.0)
        tl.store(OUT + 9 + i, 1.0)  # LOOP-OOB


def test_loop_carried_numbers_take_the_compiled_types(capsys):
    x = np.ones(32, np.float32)
    out = np.full(10, np.nan, np.float32)
    with pytest.raises(InterpreterError) as info:
        carried_kernel.interpret[(1,)](x, out, 32, BLOCK=8)
    printed = capsys.readouterr().out.strip()
    carried_kernel.ir(x, out, 32, BLOCK=8)
    assert printed == capsys.readouterr().out.strip() == "int32 int32 fp32"
    np.testing.assert_array_equal(out[:5], np.array([4, -2147483648 + 3, 32, 10, 11], np.float32))
    # The rewritten kernel still reports the user's line and column.
    assert info.value.loc.line == _line(carried_kernel, "LOOP-OOB")
    assert info.value.loc.col == 8 and "offsets 10 (lane ())" in str(info.value)
