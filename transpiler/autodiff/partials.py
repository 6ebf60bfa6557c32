"""Partial sums for gradients of blocks every program reads (a weight vector), and the second kernel.

Every program adding into the same N elements would serialise at the L2. Instead program p (its linear id over
the grid) writes its contribution into row p of a buffer [rows, row_stride] (float32; float64 for float64
gradients), and `sum_partials` adds the rows into the gradient array afterwards:
- *full rows* (the read is one lane per element of [0, BLOCK): `W + arange(0, BLOCK)`, masked): row_stride is
  BLOCK and, when the buffer has a row per program, each program stores its whole row with plain (vector)
  stores, its masked-off lanes as zeros, so the buffer needs no zeroing. The buffer has a row per program
  while that is at most CAP_BYTES; past it, `rows` = GROUPS and programs add atomically into row p % GROUPS
  (the kernel tests `rows >= programs` at run time).
- otherwise row_stride is the gradient's size and programs add atomically into row p % GROUPS.
The atomic forms need a zeroed buffer: the kernel object zeroes it before the launch. Buffers are allocated
once per library, device, current stream, shape and slot (an input's place among a launch's partial
gradients) and kept.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

GROUPS = 64
CAP_BYTES = 256 << 20
BLOCK = 1024


CHUNK_ROWS = 16   # rows one program of a summing pass adds: few enough that the passes run wide


@transpiler.jit
def sum_partial_chunks(PARTIAL, numel, rows, row_stride, rows_per_chunk, BLOCK: tl.constexpr):
    """One summing pass: the first row of each chunk of `rows_per_chunk` rows of PARTIAL[:, :numel] becomes
    the chunk's sum (program (i, c): columns block i of chunk c, which no other program reads or writes)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < numel
    first = tl.program_id(1) * rows_per_chunk
    total = tl.zeros((BLOCK,), PARTIAL.dtype.element_ty)
    for r in range(first, tl.minimum(first + rows_per_chunk, rows)):
        total += tl.load(PARTIAL + r * row_stride + offs, mask=live, other=0.0)
    tl.store(PARTIAL + first * row_stride + offs, total, mask=live)


@transpiler.jit
def sum_partials(PARTIAL, GRAD, numel, rows, row_stride, BLOCK: tl.constexpr):
    """GRAD[:numel] += the sum of the `rows` rows of PARTIAL."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < numel
    total = tl.zeros((BLOCK,), PARTIAL.dtype.element_ty)
    for r in range(0, rows):
        total += tl.load(PARTIAL + r * row_stride + offs, mask=live, other=0.0)
    tl.store(GRAD + offs, tl.load(GRAD + offs, mask=live, other=0.0) + total, mask=live)


def numel(a) -> int:
    return int(np.prod(a.shape))


def _module(a):
    return type(a).__module__.split(".")[0]


def zeros_like_library(a, shape):
    """A zero array of `shape` in the library and device of `a`: float64 for a float64 `a` (the adjoints of
    float64 values are float64), float32 otherwise."""
    module = _module(a)
    wide = "float64" in str(a.dtype)
    if module == "torch":
        import torch
        return torch.zeros(shape, dtype=torch.float64 if wide else torch.float32, device=a.device)
    if module == "cupy":
        import cupy
        return cupy.zeros(shape, dtype=np.float64 if wide else np.float32)
    return np.zeros(shape, np.float64 if wide else np.float32)


def _zero(a):
    if _module(a) == "torch":
        a.zero_()
    else:
        a.fill(0)


def _stream(module):
    if module == "torch":
        import torch
        return torch.cuda.current_stream().cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr


_buffers = {}


class Plan:
    """What one launch passes for one input's partial gradient, and how it sums them afterwards."""

    def __init__(self, grad, slot, programs, full_row_stride):
        self.grad = grad
        size = numel(grad)
        self.row_stride = full_row_stride or size
        own_rows = full_row_stride and programs * full_row_stride * 4 <= CAP_BYTES
        self.rows = programs if own_rows else min(programs, GROUPS)
        self.summed = min(size, self.row_stride)
        self.buffer = self._buffer(slot)
        if not own_rows:
            _zero(self.buffer)          # atomic adds into shared rows

    def _buffer(self, slot):
        module = _module(self.grad)
        shape = (self.rows, self.row_stride)
        if module == "numpy":
            return zeros_like_library(self.grad, shape)
        key = (module, str(getattr(self.grad, "device", "")), _stream(module), shape, slot)
        found = _buffers.get(key)
        if found is None:
            if len(_buffers) > 64:
                _buffers.clear()
            found = _buffers[key] = zeros_like_library(self.grad, shape)
        return found

    def arguments(self):
        return [self.buffer, self.row_stride, self.rows]

    def reduce(self, interpret=False):
        """Add the rows into the gradient. One program per column block looping over thousands of rows would
        be serial (4096 rows took 3.2 ms on the H200); passes of CHUNK_ROWS rows per program first fold the
        rows in place (4096 -> 256 -> 16), then the last pass adds into the gradient."""
        chunks = sum_partial_chunks.interpret if interpret else sum_partial_chunks
        final = sum_partials.interpret if interpret else sum_partials
        columns = transpiler.cdiv(self.summed, BLOCK)
        rows, stride = self.rows, self.row_stride
        while rows > CHUNK_ROWS:
            count = transpiler.cdiv(rows, CHUNK_ROWS)
            chunks[(columns, count)](self.buffer, self.summed, rows, stride, CHUNK_ROWS, BLOCK=BLOCK, num_warps=4)
            rows, stride = count, stride * CHUNK_ROWS
        final[(columns,)](self.buffer, self.grad, self.summed, rows, stride, BLOCK=BLOCK, num_warps=4)
