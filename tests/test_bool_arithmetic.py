"""Arithmetic on int1 (boolean) blocks is typed and computed as Triton 3.6 does, on both paths.

Triton computes int1 with int1 (or a Python bool) as LLVM's i1, which wraps modulo 2: `+` and `-` are xor,
`*` is and, `-x` is x. C's `bool + bool` is the int 2 for true + true, which converts back to true, so the
compiled spelling must not be C's operator. A Python int or a wider integer block promotes int1 (zero-extended)
to its type; int1 counts as unsigned, so dividing it by a signed integer is refused as Triton refuses it.
Each case checks the printed result type on the compiler and the interpreter, runs on the interpreter against
NumPy, compiles with NVRTC, and the C spellings of the int1 operators are run by the host C++ compiler over all
operand pairs (a CPU stand-in for the GPU run in test_gpu_bool_arithmetic.py).
"""
import itertools
import shutil
import subprocess

import numpy as np
import pytest

import bool_kernels as K
from test_minmax_typing import compiles
from transpiler import DTypeError
from transpiler import dtypes
from transpiler.emit_cuda import cspell

N, BLOCK = 300, 128
GRID = (-(-N // BLOCK),)
SCAN_N = 100


def bits(rng, n=N):
    return rng.integers(0, 2, n).astype(np.int32)


@pytest.mark.parametrize("name", list(K.OPS))
def test_bool_arithmetic_is_typed_and_computed_as_triton(capsys, name):
    code, reference, result_type = K.OPS[name]
    rng = np.random.default_rng()
    a, b = bits(rng), bits(rng)
    out = np.full(N, -7, np.int32)
    args, constexprs = (a, b, out, N), dict(OP=code, BLOCK=BLOCK)
    K.bool_arith_kernel.ir(*args, **constexprs)
    compiled = capsys.readouterr().out.strip()
    K.bool_arith_kernel.interpret[GRID](*args, **constexprs)
    interpreted = capsys.readouterr().out.strip().splitlines()[0]
    assert compiled == interpreted == result_type
    np.testing.assert_array_equal(out, reference(a.astype(np.int64), b.astype(np.int64)))
    compiles(K.bool_arith_kernel, args, constexprs)


@pytest.mark.parametrize("op", [0, 1, 2], ids=["floordiv_int", "mod_int32_block", "truediv_int"])
def test_dividing_int1_by_a_signed_integer_is_refused_on_both_paths(op):
    a = bits(np.random.default_rng(1))
    args, constexprs = (a, a + 1, np.zeros(N, np.float32), N), dict(OP=op, BLOCK=BLOCK)
    with pytest.raises(DTypeError, match="different signedness"):
        K.bool_mixed_signedness_kernel.ir(*args, **constexprs)
    with pytest.raises(DTypeError, match="different signedness"):
        K.bool_mixed_signedness_kernel.interpret[(1,)](*args, **constexprs)


@pytest.mark.parametrize("op", [0, 1, 2], ids=["cumsum_int1", "reduce_add_int1", "cumsum_default"])
def test_scans_and_reductions_of_int1_wrap_or_widen_as_triton(op):
    rng = np.random.default_rng()
    a = bits(rng, SCAN_N)
    out = np.full(SCAN_N, -7, np.int32)
    args, constexprs = (a, out, SCAN_N), dict(OP=op, BLOCK=128)
    K.bool_scan_reduce_kernel.interpret[(1,)](*args, **constexprs)
    want = [np.cumsum(a) % 2, np.full(SCAN_N, a.sum() % 2), np.cumsum(a)][op]
    np.testing.assert_array_equal(out, want)
    compiles(K.bool_scan_reduce_kernel, args, constexprs)


INT1_SPELLED = {"add": lambda a, b: (a + b) % 2, "sub": lambda a, b: (a - b) % 2, "mul": lambda a, b: a * b,
                "neg": lambda a, b: (-a) % 2, "invert": lambda a, b: 1 - a, "and": lambda a, b: a & b,
                "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_c_spellings_of_int1_operators_wrap_modulo_2(tmp_path):
    """Every int1 operator's C spelling, assigned to a bool as the emitted code does, over the four pairs."""
    lines = []
    for fn in INT1_SPELLED:
        expr = cspell.elementwise_expr(fn, dtypes.int1, dtypes.int1, ["a", "b"])
        for a, b in itertools.product((False, True), repeat=2):
            lines.append(f'{{ bool a = {str(a).lower()}, b = {str(b).lower()}; bool r = {expr}; '
                         f'std::printf("{fn} %d %d %d\\n", (int)a, (int)b, (int)r); }}')
    src = tmp_path / "spell.cpp"
    src.write_text("#include <cstdio>\nint main() {\n" + "\n".join(lines) + "\nreturn 0; }\n")
    subprocess.run(["g++", "-w", "-o", str(tmp_path / "spell"), str(src)], check=True)
    got = subprocess.run([str(tmp_path / "spell")], check=True, capture_output=True, text=True).stdout.split("\n")
    rows = [r.split() for r in got if r]
    assert len(rows) == 4 * len(INT1_SPELLED)
    for fn, a, b, r in rows:
        assert int(r) == INT1_SPELLED[fn](int(a), int(b)), (fn, a, b, r)
