"""CPU tests of the shared-memory decisions behind tl.dot and layout conversions: the tile swizzle is linear
over XOR (so addresses can be split into a per-thread part and a constant part), 8 rows read at one column
land in 8 different 16-byte bank groups, and the conversion padding search removes the bank conflicts of a
transpose."""
from __future__ import annotations

import itertools
import random

import pytest

from transpiler import dtypes
from transpiler.analysis.layouts import blocked
from transpiler.analysis.bank_padding import _access_passes, _passes, conversion_padding
from transpiler.emit_cuda.tiles import SharedTile

GEOMETRIES = [((64, 32), 1, dtypes.float16), ((32, 64), 1, dtypes.float16), ((16, 256), 1, dtypes.float16),
              ((64, 16), 1, dtypes.float16), ((32, 16), 1, dtypes.float32), ((64, 64), 0, dtypes.int8),
              ((128, 64), 1, dtypes.bfloat16)]


def _bits(n):
    return [1 << i for i in range(n.bit_length() - 1)]


@pytest.mark.parametrize("shape, col_dim, dt", GEOMETRIES)
def test_swizzle_is_linear_over_xor(shape, col_dim, dt):
    tile = SharedTile("t", shape, col_dim, dt)
    rng = random.Random(0)
    for _ in range(500):
        a = (rng.randrange(shape[0]), rng.randrange(shape[1]))
        b = (rng.randrange(shape[0]), rng.randrange(shape[1]))
        both = (a[0] ^ b[0], a[1] ^ b[1])
        assert tile.offset_value(both) == tile.offset_value(a) ^ tile.offset_value(b)


@pytest.mark.parametrize("shape, col_dim, dt", GEOMETRIES)
def test_swizzle_is_a_permutation_of_the_tile(shape, col_dim, dt):
    tile = SharedTile("t", shape, col_dim, dt)
    offsets = {tile.offset_value((i, j)) for i in range(shape[0]) for j in range(shape[1])}
    assert offsets == set(range(shape[0] * shape[1]))


@pytest.mark.parametrize("shape, col_dim, dt", [g for g in GEOMETRIES if g[2].itemsize == 2])
def test_eight_rows_at_one_column_hit_eight_bank_groups(shape, col_dim, dt):
    """What one ldmatrix phase reads: 8 consecutive rows, 16 bytes each, at the same logical column."""
    tile = SharedTile("t", shape, col_dim, dt)
    rows, cols = shape[1 - col_dim], shape[col_dim]
    chunk = 16 // dt.itemsize
    for row0 in range(0, rows - 7, 8):
        for col in range(0, cols, chunk):
            groups = set()
            for r in range(row0, row0 + 8):
                coords = [0, 0]
                coords[1 - col_dim], coords[col_dim] = r, col
                groups.add((tile.offset_value(coords) * dt.itemsize // 16) % 8)
            assert len(groups) == 8, (row0, col)


def test_split_offset_adds_when_the_parts_cannot_share_a_bit():
    tile = SharedTile("t", (64, 32), 1, dtypes.float16)
    # rows 0..7 from lanes, rows 8.. from registers, one 16-byte chunk per row: the register part only moves rows
    assert "+" in tile.split_offset("base", [(1, 0), (2, 0), (4, 0)], ["8 * r", "0"], [(8, 0), (16, 0), (32, 0)])
    # the thread's row picks the swizzle phase of the chunk the constant column also picks: XOR is needed
    assert "^" in tile.split_offset("base", [(2, 0)], ["0", "8 * r"], [(0, 8)])


def test_conversion_padding_removes_transpose_conflicts():
    rows_layout = blocked((64, 64), 1, [1, 0], 4)      # lanes along columns: writes are conflict-free rows
    cols_layout = blocked((64, 64), 1, [0, 1], 4)      # lanes along rows: reads walk a column
    pad = conversion_padding(rows_layout, cols_layout, dtypes.float32)
    unpadded = _passes(cols_layout, 64, 4, range(4))
    padded = _passes(cols_layout, 64 + pad, 4, range(4))
    assert pad > 0 and padded < unpadded and padded == 4   # one pass per register once padded


def test_conversion_padding_is_zero_for_rows_and_vectors():
    layout = blocked((8, 128), 4, [1, 0], 4)
    assert conversion_padding(layout, layout, dtypes.float32) == 0
    vec = blocked((1024,), 4, [0], 4)
    assert conversion_padding(vec, vec, dtypes.float32) == 0


def test_conversion_padding_keeps_sixteen_byte_reads_aligned():
    """fp16 from an mma accumulator's layout (pairs of columns, 8 rows x 4 lanes per warp) to 8 contiguous
    elements per thread: an 8-byte pad would make each 16-byte read two 8-byte ones; 16 bytes keeps both sides
    conflict-free and the reads whole."""
    from transpiler.analysis.layouts import LinearLayout
    acc = LinearLayout((128, 128), ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64), (64, 0)),
                       ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), ((16, 0), (32, 0)))
    rows = blocked((128, 128), 8, [1, 0], 4)
    pad = conversion_padding(acc, rows, dtypes.float16)
    assert pad * 2 == 16
    assert _access_passes(rows, 128 + pad, 2) < _access_passes(rows, 128 + 4, 2)     # vs the 8-byte pad
    assert _access_passes(acc, 128 + pad, 2) == acc.num_regs // 2                   # one pass per 4-byte write
