"""Debug mode (`TRANSPILER_DEBUG=1`, compile option `debug`) on the CPU: what it adds to the generated code --
device asserts, and Triton's int32 overflow checks on `+`, `-`, `*` -- and that every test kernel still emits,
and a kernel of each family compiles with NVRTC without warnings, under it."""
import numpy as np
import pytest

import atomic_kernels
import block_ptr_kernels
import dot_kernels
import dtype_kernels
import feature_kernels
import scan_kernels
import transpiler
import transpiler.language as tl
import unseen_kernels
from transpiler.runtime import compiler

MODULES = [feature_kernels, unseen_kernels, scan_kernels, atomic_kernels, block_ptr_kernels, dtype_kernels]


@pytest.fixture
def debug(monkeypatch):
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")


def _source(case):
    return case["kernel"].cuda_source(*case["args"], num_warps=case.get("num_warps", 4), **case["constexprs"])


def _offsets(X, Y, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * stride + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2, mask=offs < n)


def test_int32_arithmetic_is_checked_for_overflow_in_debug_mode_only(monkeypatch):
    a = np.zeros(16, np.float32)
    plain = transpiler.jit(_offsets).cuda_source(a, a, 100, 7, BLOCK=128)
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    debug = transpiler.jit(_offsets).cuda_source(a, a, 100, 7, BLOCK=128)
    assert "overflow" not in plain
    assert "int32 overflow in *" in debug and "int32 overflow in +" in debug
    assert "long long" in debug                     # recomputed in int64


def test_int64_and_float_arithmetic_are_not_checked(debug):
    def wide(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK).to(tl.int64) * n
        x = tl.load(X + offs, mask=offs < 100)
        tl.store(X + offs, x * 2.0 + 1.0, mask=offs < 100)
    src = transpiler.jit(wide).cuda_source(np.zeros(4, np.float32), 2**40, BLOCK=64)
    assert "overflow" not in src


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_test_kernel_emits_in_debug_mode(debug, module):
    for name, case in module.all_cases(np.random.default_rng(0)):
        assert "__global__" in _source(case), name


def _first_case(module, kernel_name):
    return next(case for _, case in module.all_cases(np.random.default_rng(0))
                if case["kernel"].__name__ == kernel_name)


FAMILIES = [(feature_kernels, "reduce_cols_kernel"), (scan_kernels, "cumsum_rows_kernel"),
            (atomic_kernels, "histogram_kernel"), (block_ptr_kernels, "bp_pad_kernel")]


@pytest.mark.skipif(not compiler.nvrtc_available(), reason="needs NVRTC and the CUDA headers")
@pytest.mark.parametrize("module, kernel_name", FAMILIES, ids=[k for _, k in FAMILIES])
def test_a_kernel_of_each_family_compiles_without_warnings_in_debug_mode(debug, module, kernel_name):
    result = compiler.compile_offline(_source(_first_case(module, kernel_name)), "sm_90a")
    assert result.warnings == [] and result.spill_bytes == 0


@pytest.mark.skipif(not compiler.nvrtc_available(), reason="needs NVRTC and the CUDA headers")
def test_a_pipelined_tensor_core_kernel_compiles_in_debug_mode(debug):
    case = dot_kernels.CASES[0]
    grid, args, options = dot_kernels.launch_args(case, *dot_kernels.host_stand_ins(case))
    src = dot_kernels.dot_kernel.cuda_source(*args, **options)
    assert "overflow" in src
    assert compiler.compile_offline(src, "sm_90a").warnings == []
