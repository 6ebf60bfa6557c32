"""Launching a kernel of a tests/*_kernels.py file on the GPU, compiled by us or by Triton (its twin, the same
source), with NumPy arrays in and the arrays after the launch out (scalars pass through)."""
import numpy as np

from triton_twin import triton_twin_of


def run_compiled(kernel, grid, args, constexprs):
    import cupy
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*dev, **constexprs)
    cupy.cuda.runtime.deviceSynchronize()
    return [cupy.asnumpy(a) for a in dev if isinstance(a, cupy.ndarray)]


def run_triton(kernel_file, name, grid, args, constexprs):
    """Kernel `name` of `kernel_file` as Triton compiles it, or a skip when Triton or CUDA torch is missing."""
    twin = triton_twin_of(kernel_file)
    import torch
    dev = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    getattr(twin, name)[grid](*dev, **constexprs)
    torch.cuda.synchronize()
    return [a.cpu().numpy() for a in dev if hasattr(a, "cpu")]
