"""Triton's options are honoured, accepted with a documented reason, or refused with a warning or an error: none
is dropped silently (runtime/triton_options.py)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from option_kernels import checked_sqrt, checked_sqrt_debug, copy_generic, copy_specialized
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def _spec_lines(kernel, *args, **kw):
    return kernel.explain(*args, **kw).split("per line:")[0]


def test_do_not_specialize_keeps_integers_and_pointers_generic():
    x = np.ones(64, np.float32)                   # 16-byte aligned, as NumPy allocates
    keys = {copy_generic.spec_key((x, x, n, 64)) for n in (1, 16, 17)}
    assert len(keys) == 1
    text = _spec_lines(copy_generic, x, x, 16, BLOCK=64)
    assert "n: int32 (no divisibility known)" in text
    assert "X: ptr<fp32> (alignment unknown)" in text      # named by index 0
    assert "Y: ptr<fp32> (16-byte aligned)" in text        # not named: specialized as usual


def test_without_do_not_specialize_the_same_values_give_three_specializations():
    x = np.ones(64, np.float32)
    assert len({copy_specialized.spec_key((x, x, n, 64)) for n in (1, 16, 17)}) == 3
    assert "n: int32 (== 1, folded)" in _spec_lines(copy_specialized, x, x, 1, BLOCK=64)


def test_do_not_specialize_must_name_a_runtime_parameter():
    def k(X, n, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), n)
    for bad in (["m"], ["BLOCK"], [7]):
        with pytest.raises(transpiler.LaunchError, match="not a runtime parameter") as err:
            transpiler.jit(k, do_not_specialize=bad)
        assert err.value.line == k.__code__.co_firstlineno


def test_jit_debug_flag_compiles_device_asserts_with_message_and_line(monkeypatch):
    monkeypatch.delenv("TRANSPILER_DEBUG", raising=False)
    x = np.ones(100, np.float32)
    src = checked_sqrt_debug.cuda_source(x, x, 100, BLOCK=128)
    line = checked_sqrt_debug.fn.__code__.co_firstlineno + 3
    assert f"option_kernels.py:{line}: sqrt of a negative input" in src and "__trap()" in src
    assert checked_sqrt_debug.debug and not checked_sqrt.debug
    assert "__trap()" not in checked_sqrt.cuda_source(x, x, 100, BLOCK=128)


@needs_nvrtc
def test_debug_kernel_compiles_without_warnings_or_spills():
    x = np.ones(100, np.float32)
    result = compile_offline(checked_sqrt_debug.cuda_source(x, x, 100, BLOCK=128), "sm_90a")
    assert result.warnings == [] and result.spill_bytes == 0


def test_noinline_is_accepted_without_a_warning():
    def k(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        transpiler.jit(k, noinline=True)


def test_unknown_jit_option_is_an_error_and_unhonoured_ones_warn():
    def k(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), 1.0)
    with pytest.raises(transpiler.LaunchError, match="unknown option 'do_not_specialise'"):
        transpiler.jit(k, do_not_specialise=["X"])
    with pytest.warns(transpiler.IgnoredOptionWarning, match="do_not_specialize_on_alignment.*not supported yet"):
        transpiler.jit(k, do_not_specialize_on_alignment=["X"])


def test_num_ctas_other_than_one_is_refused_before_anything_runs():
    x = np.ones(64, np.float32)
    with pytest.raises(transpiler.LaunchError, match=r"not supported yet: num_ctas=2: thread-block clusters"):
        copy_specialized[(1,)](x, x, 64, BLOCK=64, num_ctas=2)
    with pytest.raises(transpiler.LaunchError, match="num_ctas=4"):
        copy_specialized.cuda_source(x, x, 64, BLOCK=64, num_ctas=4)
    copy_specialized.cuda_source(x, x, 64, BLOCK=64, num_ctas=1)       # the default is fine


@pytest.mark.parametrize("option, value", [("enable_fp_fusion", False), ("debug", True)])
def test_ignored_launch_options_warn_once_per_kernel(option, value):
    def k(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, 1.0, mask=offs < n)
    kernel = transpiler.jit(k)
    x = np.ones(64, np.float32)
    with pytest.warns(transpiler.IgnoredOptionWarning, match=f"{option}={value!r} is not supported yet"):
        kernel.cuda_source(x, 64, BLOCK=64, **{option: value})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel.cuda_source(x, 64, BLOCK=64, **{option: value})    # said once
        transpiler.jit(k).cuda_source(x, 64, BLOCK=64, maxnreg=None, enable_fp_fusion=True, debug=False)


def test_maxnreg_caps_the_registers_of_the_cubin():
    """softmax over 4096 columns on 4 warps holds 32 values per thread: ptxas takes 72 registers unbounded."""
    from option_kernels import softmax_rows
    from transpiler.runtime.occupancy import cubin_resources
    x = np.ones(64, np.float32)
    free = softmax_rows.compiled_variant(x, x, 3000, BLOCK=4096, num_warps=4)
    capped = softmax_rows.compiled_variant(x, x, 3000, BLOCK=4096, num_warps=4, maxnreg=40)
    assert free.maxnreg is None and capped.maxnreg == 40 and capped is not free
    assert capped.source == free.source and "__maxnreg__(TP_MAXNREG)" in capped.source
    if nvrtc_available():
        assert cubin_resources(free.cubin("sm_90a")).registers > 40
        assert cubin_resources(capped.cubin("sm_90a")).registers <= 40
    assert softmax_rows.compiled_variant(x, x, 3000, BLOCK=4096, num_warps=4, maxnreg=40) is capped


@pytest.mark.parametrize("bad", [0, 256, 32.0, "32"])
def test_maxnreg_outside_the_hardware_range_is_refused(bad):
    x = np.ones(64, np.float32)
    with pytest.raises(transpiler.LaunchError, match="maxnreg must be an int between 1 and 255"):
        copy_specialized.compiled_variant(x, x, 64, BLOCK=64, maxnreg=bad)
    with pytest.raises(transpiler.LaunchError, match="maxnreg must be an int"):
        copy_specialized[(1,)](x, x, 64, BLOCK=64, maxnreg=bad)


def test_autotune_config_with_num_ctas_is_refused_at_launch():
    kernel = transpiler.autotune([transpiler.Config({"BLOCK": 64}, num_ctas=2)], key=["n"])(copy_specialized)
    x = np.ones(64, np.float32)
    with pytest.raises(transpiler.TranspilerError, match="num_ctas=2"):
        kernel[(1,)](x, x, 64)
