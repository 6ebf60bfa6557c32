"""GPU: the `tl.inline_asm_elementwise` kernels (`inline_asm_kernels.py`) against NumPy float64 (fresh inputs,
poisoned outputs; the approximate PTX functions within their tolerance) and, where Triton is importable, against
Triton running the same source on the same inputs."""
from pathlib import Path

import numpy as np
import pytest

import test_inline_asm as cpu
import transpiler
from triton_twin import triton_twin_of

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", cpu.NAMES)
def test_inline_asm_on_gpu_matches_numpy(name):
    cupy = pytest.importorskip("cupy")
    kernel, args, outs, wants, tol = cpu.cases(np.random.default_rng())[name]
    device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    n = args[-1]
    kernel[(transpiler.cdiv(n, cpu.BLOCK),)](*device, BLOCK=cpu.BLOCK)
    for i, want in zip(outs, wants):
        np.testing.assert_allclose(cupy.asnumpy(device[i]).astype(np.float64), want, **tol)


@pytest.mark.parametrize("name", cpu.NAMES)
def test_inline_asm_on_gpu_matches_triton(name):
    twin = triton_twin_of(Path(__file__).with_name("inline_asm_kernels.py"))
    import torch
    results = []
    for module in (None, twin):
        kernel, args, outs, _, _ = cpu.cases(np.random.default_rng(7))[name]
        if module is not None:
            kernel = getattr(module, kernel.__name__)
        device = [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in args]
        kernel[(transpiler.cdiv(args[-1], cpu.BLOCK),)](*device, BLOCK=cpu.BLOCK)
        results.append([device[i].cpu().numpy() for i in outs])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
