"""In how many passes a layout conversion through shared memory runs, and which index bits split it.

A conversion writes a whole block to shared memory and reads it back in the other layout; a large block (a
256 x 256 fp32 accumulator is 256 KiB) would crowd out everything else in shared memory, or not fit at all.
Triton converts such blocks piece by piece through a smaller buffer; so do we. Coordinate bits that only
register bits select, in both layouts, split the block into 2^n chunks of which each thread holds whole
registers on both sides: chunk by chunk, every thread writes its registers of the chunk, a barrier, every
thread reads its registers of the chunk, a barrier. The buffer holds one chunk.

Decided from the two layouts and the element size: as few chunks as bring the buffer to `BUDGET_BYTES` or
less, taking the highest such bits first (the outer repetitions of the layouts), so a chunk is a run of whole
rows where the layouts allow. When no such bits exist the conversion runs in one pass, as before.
"""
from __future__ import annotations

from dataclasses import dataclass

from .layouts import LinearLayout, log2

BUDGET_BYTES = 64 * 1024   # Triton's conversion scratch is a few tens of KiB; this keeps big tiles under it


@dataclass(frozen=True)
class ConversionChunks:
    """The coordinate bits `(dim, bit)` numbering the chunks: bit i of a chunk's number is `bits[i]`."""

    bits: tuple = ()

    @property
    def count(self) -> int:
        return 1 << len(self.bits)

    def squeeze(self, layout: LinearLayout) -> LinearLayout:
        """`layout` restricted to one chunk: the chunk bits removed from every coordinate (the registers that
        selected them keep their index and now select nothing), the shape shrunk to a chunk's."""
        def squeeze_basis(basis):
            out = []
            for d, x in enumerate(basis):
                if not x or (d, log2(x)) in self.bits:
                    out.append(0)
                    continue
                below = sum(1 for dd, b in self.bits if dd == d and b < log2(x))
                out.append(x >> below)
            return tuple(out)
        shape = tuple(s >> sum(1 for dd, _ in self.bits if dd == d) for d, s in enumerate(layout.shape))
        return LinearLayout(shape, tuple(map(squeeze_basis, layout.reg)), tuple(map(squeeze_basis, layout.lane)),
                            tuple(map(squeeze_basis, layout.warp)))

    def register_bits(self, layout: LinearLayout) -> list:
        """(register bit, chunk-number bit) pairs: which register bits of `layout` give a register's chunk."""
        pairs = []
        for j, basis in enumerate(layout.reg):
            for d, x in enumerate(basis):
                if x and (d, log2(x)) in self.bits:
                    pairs.append((j, self.bits.index((d, log2(x)))))
        return pairs


def _register_only_bits(layout: LinearLayout) -> set:
    """Coordinate bits `(dim, bit)` that no lane or warp basis of `layout` touches."""
    threads = {(d, log2(x)) for basis in layout.lane + layout.warp for d, x in enumerate(basis) if x}
    return {(d, b) for d, size in enumerate(layout.shape) for b in range(log2(size))} - threads


def plan(src: LinearLayout, dst: LinearLayout, itemsize: int, budget: int = BUDGET_BYTES) -> ConversionChunks:
    """The chunks a conversion from `src` to `dst` of elements of `itemsize` bytes runs in."""
    numel = 1
    for s in src.shape:
        numel *= s
    nbytes = numel * itemsize
    if nbytes <= budget:
        return ConversionChunks()
    # highest bits first: dimension 0's top bits, then dimension 1's, ...
    candidates = sorted(_register_only_bits(src) & _register_only_bits(dst), key=lambda db: (db[0], -db[1]))
    bits = []
    for db in candidates:
        if nbytes >> len(bits) <= budget:
            break
        bits.append(db)
    return ConversionChunks(tuple(bits))
