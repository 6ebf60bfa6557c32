"""Partial sums for gradients of blocks every program reads (a weight vector), and the kernels summing them.

Every program adding into the same N elements would serialise at the L2. Instead program p (its linear id over
the grid) writes its contribution into row p of a buffer [rows, row_stride] (float32; float64 for float64
gradients), and `Plan.reduce` adds the rows into the gradient array afterwards:
- *full rows* (the read is one lane per element of [0, BLOCK): `W + arange(0, BLOCK)`, masked): row_stride is
  BLOCK and, when the buffer has a row per program, each program stores its whole row with plain (vector)
  stores, its masked-off lanes as zeros, so the buffer needs no zeroing. The buffer has a row per program
  while that is at most CAP_BYTES; past it, `rows` = GROUPS and programs add atomically into row p % GROUPS
  (the kernel tests `rows >= programs` at run time). When the backward is folded (reverse.py: one program
  runs several of the forward's programs and keeps their partial sums in registers), the programs are one
  wave of resident programs, not the forward's grid: a few thousand rows, not one per forward program.
- otherwise row_stride is the gradient's size and programs add atomically into row p % GROUPS.
The atomic forms need a zeroed buffer: the plan zeroes it before the launch. Buffers are allocated once per
library, device, current stream, shape and slot (an input's place among a launch's partial gradients) and
kept.

The rows are summed by tiles, never by a loop over rows: a loop of dependent loads is bound by memory latency
(one program per column block looping over 4096 rows took 3.2 ms on the H200, about 0.8 us a row). The last
kernel loads all rows left of a few columns in one tile (up to TILE values: 2048 rows of 8 columns, 64 rows of
128) and adds their sums into (or, with accumulate=False, stores them as) the gradient; a folded backward's
one wave of programs (about a thousand rows) takes that one launch per gradient, since launches, not bytes,
are what a few MiB of partial rows cost; two gradients share a launch (`sum_two_into`: layernorm's dW and dB
in one). Past FINAL_ROWS rows, passes first fold PASS_ROWS rows per program in place, each into the first row
of its chunk.
"""
from __future__ import annotations

import math

import numpy as np

import transpiler
import transpiler.language as tl

GROUPS = 64
CAP_BYTES = 256 << 20
COLUMNS = 128        # columns per pass program
PASS_ROWS = 64       # rows one pass program sums (a 64 x 128 fp32 tile: 32 values a thread on 8 warps)
FINAL_ROWS = 2048    # rows the last kernel sums in one tile
TILE = 16384         # values in the last kernel's tile (32 a thread on 16 warps)


@transpiler.jit
def sum_row_tiles(PARTIAL, numel, rows, row_stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """One summing pass: program (i, c) adds rows [c * ROWS, (c + 1) * ROWS) of columns block i of
    PARTIAL[:rows, :numel] and writes the sums into the chunk's first row (which no other program reads)."""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    first = tl.program_id(1) * ROWS
    chunk = first + tl.arange(0, ROWS)
    live = cols < numel
    tile = tl.load(PARTIAL + chunk[:, None] * row_stride + cols[None, :],
                   mask=(chunk < rows)[:, None] & live[None, :], other=0.0)
    tl.store(PARTIAL + first * row_stride + cols, tl.sum(tile, axis=0), mask=live)


@transpiler.jit
def _sum_tile_into(PARTIAL, GRAD, numel, rows, row_stride, block, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                   ACCUMULATE: tl.constexpr):
    """GRAD[columns block `block`] (+)= the sum of the `rows` (<= ROWS) rows of PARTIAL there, one tile."""
    cols = block * BLOCK + tl.arange(0, BLOCK)
    chunk = tl.arange(0, ROWS)
    live = cols < numel
    tile = tl.load(PARTIAL + chunk[:, None] * row_stride + cols[None, :],
                   mask=(chunk < rows)[:, None] & live[None, :], other=0.0)
    total = tl.sum(tile, axis=0)
    if ACCUMULATE:
        total += tl.load(GRAD + cols, mask=live, other=0.0)
    tl.store(GRAD + cols, total, mask=live)


@transpiler.jit
def sum_rows_into(PARTIAL, GRAD, numel, rows, row_stride, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                  ACCUMULATE: tl.constexpr):
    """GRAD[:numel] (+)= the sum of the `rows` (<= ROWS) rows of PARTIAL, one tile per column block."""
    _sum_tile_into(PARTIAL, GRAD, numel, rows, row_stride, tl.program_id(0), ROWS, BLOCK, ACCUMULATE)


@transpiler.jit
def sum_two_into(PA, GA, numel_a, rows_a, stride_a, PB, GB, numel_b, rows_b, stride_b, blocks_a,
                 ROWS: tl.constexpr, BLOCK: tl.constexpr, ACCUMULATE: tl.constexpr):
    """Two gradients in one launch (layernorm's dW and dB): the first `blocks_a` programs sum A's columns,
    the others B's."""
    block = tl.program_id(0)
    if block < blocks_a:
        _sum_tile_into(PA, GA, numel_a, rows_a, stride_a, block, ROWS, BLOCK, ACCUMULATE)
    else:
        _sum_tile_into(PB, GB, numel_b, rows_b, stride_b, block - blocks_a, ROWS, BLOCK, ACCUMULATE)


def numel(a) -> int:
    return math.prod(a.shape)


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


def _device_and_stream(a, module):
    """(device id, raw current stream) of array `a` (one C call each: this runs at every launch)."""
    from ..runtime.launcher import cupy_stream, torch_stream
    if module == "torch":
        if a.device.type != "cuda":
            return -1, 0                # CPU tensors (the interpreter): no stream
        device = a.device.index if a.device.index is not None else 0
        return device, torch_stream(device)
    device = a.device.id
    return device, cupy_stream(device)


_buffers = {}


def _next_power_of_two(n):
    return 1 << max(n - 1, 0).bit_length()


class Plan:
    """What one launch passes for one input's partial gradient, and how it sums them afterwards. `stream`
    (a raw handle; None: the library's current stream) picks the buffer: launches on one stream reuse it in
    order. Shared rows (atomic adds) are zeroed here unless `zero_now` is False (the caller zeroes them before
    each launch: autodiff/launch_plan.py)."""

    def __init__(self, grad, slot, programs, full_row_stride, accumulate=True, stream=None, zero_now=True):
        self.grad = grad
        self.accumulate = accumulate      # False: the sums are stored into the gradient (no zeroed array needed)
        size = numel(grad)
        self.row_stride = full_row_stride or size
        self.own_rows = bool(full_row_stride and programs * full_row_stride * 4 <= CAP_BYTES)
        self.rows = programs if self.own_rows else min(programs, GROUPS)
        self.summed = min(size, self.row_stride)
        self.buffer = self._buffer(slot, stream)
        if not self.own_rows and zero_now:
            _zero(self.buffer)          # atomic adds into shared rows

    def _buffer(self, slot, stream):
        module = _module(self.grad)
        shape = (self.rows, self.row_stride)
        if module == "numpy":
            return zeros_like_library(self.grad, shape)
        device, current = _device_and_stream(self.grad, module)
        key = (module, device, current if stream is None else stream, shape, slot)
        found = _buffers.get(key)
        if found is None:
            if len(_buffers) > 64:
                _buffers.clear()
            found = _buffers[key] = zeros_like_library(self.grad, shape)
        return found

    def arguments(self):
        return [self.buffer, self.row_stride, self.rows]

    def _passes(self, interpret):
        """Past FINAL_ROWS rows, passes of PASS_ROWS-row tiles in place: ([(launch, arguments, warps)], rows
        and row stride left)."""
        passes = sum_row_tiles.interpret if interpret else sum_row_tiles
        rows, stride, steps = self.rows, self.row_stride, []
        while rows > FINAL_ROWS:
            count = transpiler.cdiv(rows, PASS_ROWS)
            steps.append((passes[(transpiler.cdiv(self.summed, COLUMNS), count)],
                          (self.buffer, self.summed, rows, stride, PASS_ROWS, COLUMNS), (), 8))
            rows, stride = count, stride * PASS_ROWS
        return steps, rows, stride

    def reduce(self, interpret=False):
        """Add the rows into the gradient (this plan alone)."""
        reduce_all([self], interpret)


def _tile(rows):
    """(tile rows, columns, warps) of the last kernel for `rows` rows."""
    tile_rows = _next_power_of_two(rows)
    columns = min(COLUMNS, max(TILE // tile_rows, 1))
    return tile_rows, columns, 16 if tile_rows * columns >= TILE else 8


def reduction_steps(plans, interpret=False):
    """The launches that sum every plan's rows into its gradient, as [(launch function, arguments, grad
    slots, num_warps)]: passes where a plan has more than FINAL_ROWS rows, then one tile kernel per two
    gradients (launches, not bytes, are what a wave's partial rows cost). `grad slots` are (argument index,
    plan index) pairs: where each launch takes a plan's gradient array, so the steps can be made once and run
    with the arrays of any call (`run_steps`); the arguments hold the plans' own arrays there."""
    final = sum_rows_into.interpret if interpret else sum_rows_into
    pair = sum_two_into.interpret if interpret else sum_two_into
    steps, left = [], []
    for i, plan in enumerate(plans):
        passes, rows, stride = plan._passes(interpret)
        steps += passes
        left.append((i, plan, rows, stride))
    while left:
        if len(left) >= 2 and left[0][1].accumulate == left[1][1].accumulate:
            (i, a, rows_a, stride_a), (j, b, rows_b, stride_b) = left[0], left[1]
            left = left[2:]
            tile_rows, columns, warps = _tile(max(rows_a, rows_b))
            blocks_a = transpiler.cdiv(a.summed, columns)
            steps.append((pair[(blocks_a + transpiler.cdiv(b.summed, columns),)],
                          (a.buffer, a.grad, a.summed, rows_a, stride_a, b.buffer, b.grad, b.summed, rows_b, stride_b,
                           blocks_a, tile_rows, columns, a.accumulate), ((1, i), (6, j)), warps))
            continue
        (i, plan, rows, stride), left = left[0], left[1:]
        tile_rows, columns, warps = _tile(rows)
        steps.append((final[(transpiler.cdiv(plan.summed, columns),)],
                      (plan.buffer, plan.grad, plan.summed, rows, stride, tile_rows, columns, plan.accumulate),
                      ((1, i),), warps))
    return steps


def run_steps(steps, grads=None, **options):
    """Launch `reduction_steps`' launches by position (the launcher's fast path), with the gradient arrays
    `grads` (one per plan, in the plans' order; None: the plans' own) and launch options such as `stream`."""
    for launch, arguments, grad_slots, warps in steps:
        if grads is not None and grad_slots:
            arguments = list(arguments)
            for index, plan in grad_slots:
                arguments[index] = grads[plan]
        launch(*arguments, num_warps=warps, **options)


def reduce_all(plans, interpret=False):
    """Sum every plan's rows into its gradient (`reduction_steps`, made and run)."""
    run_steps(reduction_steps(plans, interpret))
