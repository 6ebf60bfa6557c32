"""Row padding of a layout-conversion buffer, chosen by counting shared-memory bank conflicts.

A conversion writes a block to shared memory in one layout and reads it back in another. Padding each row
of the last dimension shifts consecutive rows across the 32 four-byte banks; which shift is best depends on
both layouts (a transpose reads columns; an mma accumulator writes 8 rows x 4 column pairs per warp). This
tries a few paddings and keeps the one whose writes and reads, for one warp and its first accesses, need
the fewest passes (a pass serves one distinct 4-byte word per bank), counted per *access*: a thread's run of
contiguous registers along the last dimension is one access of up to 16 bytes (the C compiler vectorizes it)
when the padded row pitch keeps it aligned, else as many narrower ones as the alignment allows. A 16-byte access
is served a quarter-warp per phase, an 8-byte one a half-warp. So a padding that breaks a 16-byte read into two
8-byte ones costs the passes of both (the H200's SASS of the bench matmul's epilogue: an 8-byte pad turned its
16-byte reads into LDS.64 pairs; a 16-byte pad keeps LDS.128, with the accumulator's writes conflict-free too).
"""
from __future__ import annotations

CANDIDATE_PAD_BYTES = (0, 4, 8, 16, 32)


def _passes(layout, row_elems, itemsize, regs):
    """Shared-memory passes one warp needs to access registers `regs` of `layout` (row pitch `row_elems`)."""
    total = 0
    for r in regs:
        words_per_bank = {}
        for lane in range(32):
            coords = layout.coords(r, lane, 0)
            index = 0
            for d in range(layout.rank - 1):
                index = index * layout.shape[d] + coords[d]
            addr = (index * row_elems + coords[-1]) * itemsize
            words_per_bank.setdefault((addr // 4) % 32, set()).add(addr // 4)
        total += max(len(w) for w in words_per_bank.values())
    return total


def _vector_bytes(layout, row_bytes, itemsize):
    """Bytes of one access: the layout's run of contiguous registers along the last dimension (at most 16),
    halved until the padded row pitch keeps it aligned."""
    vec = min(16, layout.contiguous_regs(layout.rank - 1) * itemsize)
    while vec > itemsize and layout.rank > 1 and row_bytes % vec:
        vec //= 2
    return max(vec, itemsize)


def _access_passes(layout, row_elems, itemsize, sample=4):
    """Shared-memory passes one warp needs for all its accesses of `layout` (row pitch `row_elems`), from its
    first `sample` accesses."""
    vec = _vector_bytes(layout, row_elems * itemsize, itemsize)
    per_access = vec // itemsize
    accesses = max(layout.num_regs // per_access, 1)
    lanes_per_phase = 32 if vec <= 4 else 128 // vec
    total = 0
    taken = range(min(accesses, sample))
    for a in taken:
        addrs = []
        for lane in range(32):
            coords = layout.coords(a * per_access, lane, 0)
            index = 0
            for d in range(layout.rank - 1):
                index = index * layout.shape[d] + coords[d]
            addrs.append((index * row_elems + coords[-1]) * itemsize)
        for first in range(0, 32, lanes_per_phase):
            words_per_bank = {}
            for addr in addrs[first:first + lanes_per_phase]:
                for w in range(addr // 4, (addr + vec - 1) // 4 + 1):
                    words_per_bank.setdefault(w % 32, set()).add(w)
            total += max(len(w) for w in words_per_bank.values())
    return total * accesses / len(taken)


def conversion_padding(src, dst, dtype) -> int:
    """Elements of padding per row for converting a value of `dtype` from layout `src` to `dst`."""
    if src.rank < 2 or src.shape[-1] < 2:
        return 0
    itemsize = dtype.itemsize
    best = None
    for pad_bytes in CANDIDATE_PAD_BYTES:
        if pad_bytes % itemsize:
            continue
        pad = pad_bytes // itemsize
        row = src.shape[-1] + pad
        cost = sum(_access_passes(layout, row, itemsize) for layout in (src, dst))
        if best is None or cost < best[0]:
            best = (cost, pad)
    return best[1]
