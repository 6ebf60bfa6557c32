"""Per-group partial sums for gradients of blocks every program reads (a weight vector): the second kernel.

Contended atomics (every program adding into the same N elements) serialise at the L2; instead the derived
backward adds program p's contribution into row p % GROUPS of a float32 buffer [GROUPS, N] (contention cut
GROUPS-fold), and `sum_partials` adds the GROUPS rows into the gradient array afterwards and zeroes them. The
buffer is allocated once per library, device and size, in the gradient array's library and device.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

GROUPS = 64
BLOCK = 1024


@transpiler.jit
def sum_partials(PARTIAL, GRAD, numel, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    """GRAD += the GROUPS rows of PARTIAL, which it zeroes behind it (ready for the next backward)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < numel
    total = tl.zeros((BLOCK,), tl.float32)
    for g in range(GROUPS):
        total += tl.load(PARTIAL + g * numel + offs, mask=live, other=0.0)
        tl.store(PARTIAL + g * numel + offs, tl.zeros((BLOCK,), tl.float32), mask=live)
    tl.store(GRAD + offs, tl.load(GRAD + offs, mask=live, other=0.0) + total, mask=live)


def numel(a) -> int:
    return int(np.prod(a.shape))


def zeros_like_library(a, shape):
    """A float32 zero array of `shape` in the library and device of `a`."""
    module = type(a).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.zeros(shape, dtype=torch.float32, device=a.device)
    if module == "cupy":
        import cupy
        return cupy.zeros(shape, dtype=np.float32)
    return np.zeros(shape, np.float32)


_buffers = {}


def _stream(module):
    if module == "torch":
        import torch
        return torch.cuda.current_stream().cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr


def buffer_for(grad, slot):
    """The partial buffer for a gradient array like `grad`: on the GPU allocated zeroed once per library,
    device, current stream, size and `slot` (the input's place among a launch's partial gradients), and left
    zeroed by `sum_partials` after each use, so a launch costs no allocation and no memset; on the host (the
    interpreter) a new one each time."""
    module = type(grad).__module__.split(".")[0]
    if module == "numpy":
        return zeros_like_library(grad, (GROUPS, numel(grad)))
    key = (module, str(getattr(grad, "device", "")), _stream(module), numel(grad), slot)
    found = _buffers.get(key)
    if found is None:
        if len(_buffers) > 64:
            _buffers.clear()
        found = _buffers[key] = zeros_like_library(grad, (GROUPS, numel(grad)))
    return found


def reduce_into(grad, partial, interpret=False):
    n = numel(grad)
    k = sum_partials.interpret if interpret else sum_partials
    k[(transpiler.cdiv(n, BLOCK),)](partial, grad, n, GROUPS=GROUPS, BLOCK=BLOCK, num_warps=4)


def forget(buffers):
    """Drop buffers a failed launch may have left non-zero."""
    for key in [k for k, b in _buffers.items() if any(b is x for x in buffers)]:
        del _buffers[key]
