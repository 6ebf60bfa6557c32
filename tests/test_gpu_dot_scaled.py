"""GPU: `tl.dot_scaled` compiled and run against the NumPy decoding of `test_dot_scaled.py` on fresh random inputs
with poisoned outputs, and, where Triton is importable, against Triton running the same source on the same inputs
(Triton on Hopper computes the same decomposition: upcast to bf16, scale, NaN mask, wgmma)."""
from pathlib import Path

import numpy as np
import pytest

import test_dot_scaled as cpu
from triton_twin import triton_twin_of

pytestmark = pytest.mark.gpu
CASES = {f"{a}x{b}": (a, b) for a, b in cpu.FORMAT_PAIRS}


def _run(kernel, args, consts, grid, to_device):
    device = [to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*device, **consts)
    return device[4]


@pytest.mark.parametrize("name", list(CASES))
def test_dot_scaled_on_gpu_matches_numpy(name):
    cupy = pytest.importorskip("cupy")
    kernel, args, consts, grid, out, want, tol = cpu.case(np.random.default_rng(), *CASES[name])
    got = cupy.asnumpy(_run(kernel, args, consts, grid, cupy.asarray))
    assert np.all(np.abs(got - want) <= tol)


@pytest.mark.parametrize("name", list(CASES) + ["nan-scale"])
def test_dot_scaled_on_gpu_matches_triton(name):
    twin = triton_twin_of(Path(__file__).with_name("dot_scaled_kernels.py"))
    import torch
    formats, extra = (CASES[name], {}) if name in CASES else (("e4m3", "e4m3"), {"nan_scale": True})
    results = []
    for module in (None, twin):
        kernel, args, consts, grid, _, _, tol = cpu.case(np.random.default_rng(12), *formats, **extra)
        if module is not None:
            kernel = module.dot_scaled_kernel
        results.append(_run(kernel, args, consts, grid, lambda a: torch.from_numpy(a).cuda()).cpu().numpy())
    ours, theirs = results
    # Two fp32 sums of the same exact products in different orders (mma.sync here, wgmma or another K split in
    # Triton) each lie within the per-element bound relative to sum |a_ik b_kj| (`tol`), so they may differ by
    # twice it; a tolerance relative to the result itself fails wherever the products cancel.
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.all(np.isnan(ours) | (np.abs(ours - theirs) <= 2 * tol))
