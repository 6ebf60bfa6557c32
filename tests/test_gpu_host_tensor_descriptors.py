"""GPU: kernels taking host tensor descriptors (`host_descriptor_kernels.py`) launched on CuPy arrays against NumPy
float64 (fresh inputs, poisoned outputs), and on torch tensors against Triton running the same source with
`triton.tools.tensor_descriptor.TensorDescriptor` arguments."""
from pathlib import Path

import numpy as np
import pytest

import test_host_tensor_descriptors as cpu
from transpiler.tools.tensor_descriptor import TensorDescriptor
from triton_twin import triton_twin_of

pytestmark = pytest.mark.gpu


def _on_device(args, to_device, descriptor):
    """The case's arguments with arrays (also inside descriptors) copied by `to_device`; returns the copies and
    a map from each host array's id to its device copy."""
    copies = {}

    def dev(a):
        if isinstance(a, np.ndarray):
            return copies.setdefault(id(a), to_device(a))
        if isinstance(a, TensorDescriptor):
            return descriptor(dev(a.base), list(a.shape), list(a.strides), list(a.block_shape), a.padding)
        return a
    return [dev(a) for a in args], copies


@pytest.mark.parametrize("name", list(cpu.CASES))
def test_host_descriptors_on_gpu_match_numpy(name):
    cupy = pytest.importorskip("cupy")
    kernel, args, consts, grid, outs, wants = cpu.CASES[name](np.random.default_rng())
    device, copies = _on_device(args, cupy.asarray, TensorDescriptor)
    kernel[grid](*device, **consts)
    for out, want in zip(outs, wants):
        got = cupy.asnumpy(copies[id(out)]).astype(np.float64)
        np.testing.assert_allclose(got, want, **cpu.TOLERANCE.get(name, dict(rtol=1e-6)))


@pytest.mark.parametrize("name", [n for n in cpu.CASES if n != "scale-pointer"])
def test_host_descriptors_on_gpu_match_triton(name):
    twin = triton_twin_of(Path(__file__).with_name("host_descriptor_kernels.py"))
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor
    results = []
    for module, make in ((None, TensorDescriptor), (twin, TritonDescriptor)):
        kernel, args, consts, grid, outs, _ = cpu.CASES[name](np.random.default_rng(5))
        if module is not None:
            kernel = getattr(module, kernel.__name__)
        device, copies = _on_device(args, lambda a: torch.from_numpy(a).cuda(), make)
        kernel[grid](*device, **consts)
        results.append([copies[id(o)].cpu().numpy().astype(np.float64) for o in outs])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **cpu.TOLERANCE.get(name, dict(rtol=1e-6)))
