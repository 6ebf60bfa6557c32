"""Layout conversions that write shared memory with `stmatrix` (sm_90): which ones, and where each 8x8 block goes.

A conversion through shared memory (emitter.convert) writes its value in its own layout and reads it back in
the other. When the value has 16-bit elements and its own layout holds them as the tensor cores' 8x8 fragments
(an mma or wgmma accumulator cast to fp16/bf16: register bit 0 the next column, lane bits 0-1 columns 2 and 4,
lane bits 2-4 rows 1, 2 and 4), one `stmatrix.m8n8.x4` writes four such blocks per warp: each lane gives the
address of one 16-byte block row, and its four registers hold its parts of the four blocks. That replaces four
4-byte stores per lane with one instruction (the bench matmul's 128x128 epilogue: 64 stores a thread -> 16).

Decided from the layout alone: the remaining register bits (register pairs) and the warp bits must move whole
blocks (multiples of 8 along both dimensions), the pairs must come in fours, and the buffer's padded row pitch
must keep the block rows 16-byte aligned. Only for the sm_90a source (stmatrix exists from sm_90 on);
`TRANSPILER_STMATRIX=0` keeps the element stores.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..targets import WGMMA_TARGETS, switch

FRAGMENT_LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))     # an 8x8 block of 16-bit elements over a warp


@dataclass(frozen=True)
class StmatrixPlan:
    pairs: tuple       # per register-pair bit (register bit 1, 2, ...): the (row, col) it moves a block by
    warps: tuple       # per warp bit: the same

    @property
    def per_instruction(self):
        return 8       # registers: 4 pairs, one per block


def plan_stmatrix(layout, itemsize, row_pitch_elems, arch):
    """A StmatrixPlan for writing `layout` into a buffer of row pitch `row_pitch_elems`, or None."""
    if arch not in WGMMA_TARGETS or not switch("TRANSPILER_STMATRIX"):
        return None
    if itemsize != 2 or layout.rank != 2 or (row_pitch_elems * itemsize) % 16:
        return None
    if not layout.reg or layout.reg[0] != (0, 1) or tuple(layout.lane) != FRAGMENT_LANES:
        return None
    pairs, warps = tuple(layout.reg[1:]), tuple(layout.warp)
    if len(pairs) < 2 or any(r % 8 or c % 8 for r, c in pairs + warps):
        return None
    return StmatrixPlan(pairs, warps)


__all__ = ["StmatrixPlan", "plan_stmatrix"]
