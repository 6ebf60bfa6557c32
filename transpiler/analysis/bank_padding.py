"""Row padding of a layout-conversion buffer, chosen by counting shared-memory bank conflicts.

A conversion writes a block to shared memory in one layout and reads it back in another. Padding each row
of the last dimension shifts consecutive rows across the 32 four-byte banks; which shift is best depends on
both layouts (a transpose reads columns; an mma accumulator writes 8 rows x 4 column pairs per warp). This
tries a few paddings and keeps the one whose writes and reads, for one warp and its first registers, need
the fewest passes (a pass serves one distinct 4-byte word per bank).
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
        cost = sum(_passes(layout, row, itemsize, range(min(layout.num_regs, 4))) for layout in (src, dst))
        if best is None or cost < best[0]:
            best = (cost, pad)
    return best[1]
