"""What the seventh session's real-world kernels needed beyond their cases: compile-time functions, Triton's
standard-library helpers, refusals with their location. The cases of `tests/realworld_s7_kernels.py` themselves
run in tests/test_realworld_core.py and tests/test_gpu_realworld_core.py."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.errors import CompileTimeError

# ---- compile-time functions ----------------------------------------------------------------------------------

@transpiler.jit
def _cdiv_of_runtime_kernel(X, N, BLOCK: tl.constexpr):
    tl.store(X, transpiler.cdiv(N, BLOCK))


def test_constexpr_function_of_a_runtime_value_is_refused_with_its_location():
    with pytest.raises(CompileTimeError, match="compile-time values") as info:
        _cdiv_of_runtime_kernel.cuda_source(np.zeros(1, np.int32), 100, BLOCK=16)
    assert "test_realworld_s7.py" in str(info.value)


def test_triton_standard_private_helpers_import_through_the_shim():
    """In a subprocess: installing the shim puts a `triton` module into sys.modules, which must not leak into
    this process (the typing oracle's tests take any importable `triton` for the real one)."""
    from test_triton_compat_shim import run_with_shim
    out = run_with_shim("""
        import transpiler
        from triton.language.standard import _is_power_of_two, _log2, zeros_like
        assert [_log2(n) for n in (1, 2, 3, 64, 100)] == [0, 1, 1, 6, 6]
        assert zeros_like is tl.zeros_like
        assert _is_power_of_two(64) and not _is_power_of_two(48) and not _is_power_of_two(0)
        assert triton.constexpr_function is transpiler.constexpr_function
        print("ok")
    """)
    assert out.strip() == "ok"


def _halve(n):
    return n // 2


@transpiler.jit
def _python_function_of_a_block_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, _halve(tl.load(X + offs)))


def test_an_undecorated_function_given_a_block_is_refused_with_its_location():
    with pytest.raises(transpiler.TranspilerError, match="neither a tl builtin nor a @transpile") as info:
        _python_function_of_a_block_kernel.cuda_source(np.zeros(16, np.float32), BLOCK=16)
    assert "test_realworld_s7.py" in str(info.value)


@transpiler.jit
def _halved_block_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, _halve(BLOCK))          # an undecorated function of constexprs runs while compiling
    tl.store(X + offs, offs)


def test_an_undecorated_function_of_constexprs_runs_while_compiling():
    x = np.full(16, -1, np.int32)
    _halved_block_kernel.interpret[(1,)](x, BLOCK=16)
    assert list(x[:8]) == list(range(8)) and (x[8:] == -1).all()
    assert "_halved_block_kernel" in _halved_block_kernel.cuda_source(x, BLOCK=16)


def _fails(n):
    raise ValueError(f"no table for {n}")


@transpiler.jit
def _failing_python_function_kernel(X, BLOCK: tl.constexpr):
    width: tl.constexpr = _fails(BLOCK)
    tl.store(X + tl.arange(0, BLOCK), width)


def test_a_python_function_that_raises_while_compiling_is_located():
    with pytest.raises(CompileTimeError, match="ValueError: no table for 16") as info:
        _failing_python_function_kernel.cuda_source(np.zeros(16, np.float32), BLOCK=16)
    assert "test_realworld_s7.py" in str(info.value)


def test_get_int_dtype_follows_triton():
    assert tl.core.get_int_dtype(1, True) is tl.int1
    assert tl.core.get_int_dtype(16, False) is tl.uint16 and tl.core.get_int_dtype(64, True) is tl.int64
    with pytest.raises(ValueError):
        tl.core.get_int_dtype(24, True)
