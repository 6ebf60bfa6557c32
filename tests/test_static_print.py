"""`tl.static_print` as Triton 3.6 prints it on each path: the compiler prints once, while compiling, the types of
runtime values in Triton's spelling (`fp32[constexpr[4]]`, `int32[]`, `pointer<fp32>[]`, `const_pointer<fp32>`)
and compile-time values as Python does; the interpreter prints the values, in every program (Triton's
interpreter calls Python's `print` there). Where Triton is importable (PYTHONPATH=/work/tritoncpu/site here), its
front end prints the same kernel's line and the compiler's must equal it."""
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler
import transpiler.language as tl

ROOT = Path(__file__).resolve().parent.parent


@transpiler.jit
def print_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    pair = tl.reshape(x, (2, BLOCK // 2))
    tl.static_print("values", x, pair, n, X, Y + tl.arange(0, BLOCK), BLOCK, x.dtype, X.dtype, sep="|")
    tl.store(Y + tl.arange(0, BLOCK), x)


COMPILED = ("values|fp32[constexpr[4]]|fp32[constexpr[2], constexpr[2]]|int32[]|const_pointer<fp32>[]|"
            "pointer<fp32>[constexpr[4]]|4|fp32|const_pointer<fp32>")


def _args(rng):
    return rng.standard_normal(4).astype(np.float32), np.full(4, np.nan, np.float32), 9


def test_the_compiler_prints_types_once_in_tritons_spelling(capsys):
    x, y, n = _args(np.random.default_rng(0))
    print_kernel.ir(x, y, n, BLOCK=4)
    assert capsys.readouterr().out == COMPILED + "\n"


def test_the_interpreter_prints_values_in_every_program(capsys):
    x, y, n = _args(np.random.default_rng(1))
    print_kernel.interpret[(3,)](x, y, n, BLOCK=4)
    printed = capsys.readouterr().out.split("values|")
    assert printed[0] == "" and len(printed) == 4 and len(set(printed[1:])) == 1
    fields = printed[1].rstrip("\n").split("|")
    assert fields[0] == str(x) and fields[1] == str(x.reshape(2, 2))
    assert fields[2] == "9" and fields[5:] == ["4", "fp32", "const_pointer<fp32>"]


def test_tritons_front_end_prints_the_compilers_line(capsys):
    pytest.importorskip("triton")
    sys.path.insert(0, str(ROOT))
    from bench.twins import load
    from triton import compile as triton_compile
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    twin = load(Path(__file__), "triton")
    signature = {"X": "*kfp32", "Y": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    capsys.readouterr()
    triton_compile(ASTSource(twin.print_kernel, signature, constexprs={"BLOCK": 4}), target=GPUTarget("cuda", 90, 32))
    assert capsys.readouterr().out.splitlines()[0] == COMPILED
