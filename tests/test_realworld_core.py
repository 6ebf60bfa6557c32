"""The kernels of `tests/realworld_core_kernels.py` and `tests/realworld_s7_kernels.py` (defects real-world Triton kernels hit in the core
language, reduced): the interpreter matches NumPy, NVRTC compiles the generated CUDA for sm_80 and sm_90a
without warnings or spills, and what Triton refuses stays refused with a located error."""

import numpy as np
import pytest

import realworld_core_kernels as rk
import realworld_s7_kernels
import transpiler
import transpiler.language as tl
from feature_kernels import check
from transpiler.errors import CompileTimeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

CASES = rk.all_cases(np.random.default_rng(13)) + realworld_s7_kernels.all_cases(np.random.default_rng(7))
COMPILED_ONLY = rk.compiled_only_cases(np.random.default_rng(13))
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_interpreted_matches_numpy(name, case):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, **case["constexprs"])
    check(case, args)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES + COMPILED_ONLY, ids=[c[0] for c in CASES + COMPILED_ONLY])
def test_compiles_without_warnings_or_spills(name, case, arch):
    result = compile_offline(case["kernel"].cuda_source(*case["args"], **case["constexprs"]), arch)
    assert result.spill_bytes == 0 and not result.warnings, result.log


# ---- returns from a runtime if -----------------------------------------------------------------------------

@transpiler.jit
def _pick(flag, a, b):
    if flag > 0:
        return a, b
    return b


@transpiler.jit
def _returns_differ_kernel(X, Y):
    t = _pick(tl.load(X), 1.0, 2.0)
    tl.store(Y, t)


@transpiler.jit
def _half_return(x):
    if x > 0:
        return x * 2


@transpiler.jit
def _half_return_kernel(X, Y):
    tl.store(Y, _half_return(tl.load(X)))


@pytest.mark.parametrize("kernel,words", [(_returns_differ_kernel, "different structures"),
                                          (_half_return_kernel, "one path of this if but not on the other")])
def test_a_runtime_if_returning_unlike_values_is_refused_at_its_line(kernel, words):
    x, y = np.ones(1, np.float32), np.zeros(1, np.float32)
    with pytest.raises(CompileTimeError, match=words) as info:
        kernel.cuda_source(x, y)
    assert info.value.loc is not None


@transpiler.jit
def _nested_returns(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        if hi > 100.0:
            return 100.0
        return hi
    return x


@transpiler.jit
def _clip_kernel(X, Y, lo, hi, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    # a scalar helper with nested returning ifs, applied through a reduction's combine region
    y = tl.reduce(x, 0, _keep_right)
    tl.store(Y + tl.program_id(0), _nested_returns(y, lo, hi))


@transpiler.jit
def _keep_right(a, b):
    return b


@pytest.mark.parametrize("last,lo,hi", [(-5.0, -1.0, 3.0), (2.0, -1.0, 3.0), (7.0, -1.0, 3.0), (700.0, -1.0, 300.0),
                                        (200.0, -1.0, 300.0)])
def test_nested_value_returns_pick_the_taken_path(last, lo, hi):
    x = np.arange(16, dtype=np.float32)
    x[-1] = last
    want = min(max(last, lo), hi if hi <= 100 else 100.0) if last > hi else max(last, lo)
    y = np.full(1, np.nan, np.float32)
    _clip_kernel.interpret[(1,)](x, y, lo, hi, 16, BLOCK=16)
    assert y[0] == want
    result = compile_offline(_clip_kernel.cuda_source(x, y, lo, hi, 16, BLOCK=16), "sm_80")
    assert not result.warnings, result.log


# ---- inline PTX ----------------------------------------------------------------------------------------------

def test_inline_asm_is_spelled_with_cudas_operand_names_and_escaped_percent():
    case = dict(COMPILED_ONLY)["inline_asm"]
    src = case["kernel"].cuda_source(*case["args"], **case["constexprs"])
    src = " ".join(src.split()).replace("( ", "(")     # a statement over 120 columns is broken over lines
    assert 'asm("{\\nsqrt.rn.f32 %0, %1;\\n}" : "=f"(asm_out0) : "f"(' in src
    assert '"=r"(asm_out0), "=r"(asm_out1)' in src
    assert '"{\\n{\\n .reg .u32 t;\\n shl.b32 t, %1, 3;\\n add.u32 %0, t, %2;\\n}\\n}"' in src


def test_inline_asm_refuses_to_interpret_at_its_line():
    case = dict(COMPILED_ONLY)["inline_asm"]
    with pytest.raises(transpiler.TranspilerError, match="interpreter cannot") as info:
        case["kernel"].interpret[case["grid"]](*case["args"], **case["constexprs"])
    assert info.value.loc is not None


@transpiler.jit
def _packed_asm(X, BLOCK: tl.constexpr, PACK: tl.constexpr, LETTER: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(X + offs, tl.inline_asm_elementwise("mov.b32 $0, $1;", "=" + LETTER + "," + LETTER, [x], dtype=x.dtype,
                                                 is_pure=True, pack=PACK))


@pytest.mark.parametrize("dtype,pack,letter,words", [
    (np.int8, 3, "r", "pack must be a power of two"),
    (np.int64, 2, "l", "name 2 registers, but 1 result.* with pack=2 use 4"),
    (np.int64, 1, "r", "a 32-bit register '=r' cannot hold 1 x tl.int64"),
    (np.float16, 2, "f", "a 32-bit register '=f' cannot hold 2 x tl.float16"),
    (np.float32, 1, "q", "not supported yet: tl.inline_asm_elementwise: constraint '=q'")])
def test_inline_asm_refuses_what_it_cannot_spell(dtype, pack, letter, words):
    with pytest.raises(transpiler.TranspilerError, match=words):
        _packed_asm.cuda_source(np.zeros(32, dtype), BLOCK=32, PACK=pack, LETTER=letter)
