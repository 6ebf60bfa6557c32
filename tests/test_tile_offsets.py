"""The swizzled offsets of shared-memory tiles (emit_cuda/tiles.py): `split_offset` writes an element's offset
from a per-thread part and a per-register constant part, XORing the constant bits the thread part can share and
adding the rest (which then become immediate address offsets). Each expression it writes is evaluated here for
every thread and register value and compared with the swizzle of the element's whole coordinates."""
import itertools
import re

import pytest

from transpiler.emit_cuda.tiles import SharedTile
from transpiler.language import float16, float32, int8


def evaluate(expr, **names):
    """A C offset expression of tp::swizzle / tp::swizzle_slabs, integers and names, evaluated in Python."""
    def swizzle(row_bytes, es, row, col):
        return SharedTile("t", (1, row_bytes // es), 1, {1: int8, 2: float16, 4: float32}[es]).offset_value((row, col))

    def slabs(row_bytes, es, rows, row, col):
        tile = SharedTile("t", (rows, row_bytes // es), 1, {1: int8, 2: float16, 4: float32}[es], slabs=True)
        return tile.offset_value((row, col))
    text = re.sub(r"tp::swizzle<(\d+), (\d+)>\(", r"swizzle(\1, \2, ", expr)
    text = re.sub(r"tp::swizzle_slabs<(\d+), (\d+), (\d+)>\(", r"slabs(\1, \2, \3, ", text)
    return eval(text, {"swizzle": swizzle, "slabs": slabs}, names)


# (tile shape, col_dim, dtype, slabs, thread coordinates as functions of lane/warp, their bases,
#  constant coordinates as C of counters, the counters' values, their bases)
CASES = [
    # the skinny bench matmul's A (16 x 128 fp16, K along rows) and B (128 x 128, N along rows) ldmatrix reads
    ((16, 128), 1, float16, False, ("(lane & 15)", "8 * (lane >> 4)"), [(1, 0), (2, 0), (4, 0), (8, 0), (0, 8)],
     ("0", "kk"), {"kk": range(0, 128, 16)}, [(0, 16), (0, 32), (0, 64)]),
    ((128, 128), 1, float16, False, ("lane & 15", "(warp & 3) * 32 + 8 * (lane >> 4)"),
     [(1, 0), (2, 0), (4, 0), (8, 0), (0, 8), (0, 32), (0, 64)],
     ("kk", "8 * nt"), {"kk": range(0, 128, 16), "nt": (0, 2)}, [(16, 0), (32, 0), (64, 0), (0, 16)]),
    # the square matmul's 128 x 32 A (64-byte rows: two rows a 128-byte line) with mt and kk counters
    ((128, 32), 1, float16, False, ("(warp & 1) * 64 + (lane & 15)", "8 * (lane >> 4)"),
     [(1, 0), (2, 0), (4, 0), (8, 0), (0, 8), (64, 0)],
     ("16 * mt", "kk"), {"mt": range(4), "kk": (0, 16)}, [(16, 0), (32, 0), (0, 16)]),
    # int8 and fp32 rows, wgmma slabs (rows over 128 bytes cut into 128-byte slabs)
    ((64, 256), 1, int8, False, ("lane & 15", "16 * (lane >> 4)"), [(1, 0), (2, 0), (4, 0), (8, 0), (0, 16)],
     ("16 * mt", "kk"), {"mt": range(4), "kk": range(0, 256, 32)}, [(16, 0), (32, 0)] + [(0, 32 << i) for i in range(3)]),
    ((64, 128), 1, float32, False, ("lane & 7", "4 * (lane >> 3)"), [(1, 0), (2, 0), (4, 0), (0, 4), (0, 8)],
     ("8 * mt", "kk"), {"mt": range(8), "kk": range(0, 128, 16)}, [(8, 0), (16, 0), (32, 0), (0, 16), (0, 32), (0, 64)]),
    ((64, 256), 1, float16, True, ("lane & 15", "8 * (lane >> 4)"), [(1, 0), (2, 0), (4, 0), (8, 0), (0, 8)],
     ("16 * mt", "kk"), {"mt": range(4), "kk": range(0, 256, 16)}, [(16, 0), (32, 0)] + [(0, 16 << i) for i in range(4)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0][0]}x{c[0][1]}_{c[2].name}{'_slabs' if c[3] else ''}")
def test_split_offset_is_the_swizzle_of_the_whole_coordinates(case):
    shape, col_dim, dtype, slabs, thread, thread_bases, const, counters, const_bases = case
    tile = SharedTile("t", shape, col_dim, dtype, slabs)
    expr = tile.split_offset("thread_offset", thread_bases, const, const_bases)
    names = list(counters)
    for lane, warp in itertools.product(range(32), range(4)):
        coords = [evaluate(c, lane=lane, warp=warp) for c in thread]
        thread_offset = tile.offset_value(coords)
        for values in itertools.product(*(counters[n] for n in names)):
            env = dict(zip(names, values))
            whole = [t + evaluate(c, **env) for t, c in zip(coords, const)]
            assert evaluate(expr, thread_offset=thread_offset, **env) == tile.offset_value(whole), (expr, lane, env)


def test_the_skinny_tiles_k_steps_are_immediates():
    """A's 8 k steps need 4 values XORed with the lane's offset (the k bits under the 8-chunk swizzle phase) and
    add the last bit; B's k steps (rows, above the phase) are all added: one register per n pair."""
    shape, col_dim, dtype, slabs, thread, thread_bases, const, counters, const_bases = CASES[0]
    a = SharedTile("t", shape, col_dim, dtype, slabs).split_offset("x", thread_bases, const, const_bases)
    assert a == "((x ^ tp::swizzle<256, 2>(0, ((kk) & 48))) + tp::swizzle<256, 2>(0, ((kk) & 64)))"
    shape, col_dim, dtype, slabs, thread, thread_bases, const, counters, const_bases = CASES[1]
    b = SharedTile("t", shape, col_dim, dtype, slabs).split_offset("x", thread_bases, const, const_bases)
    assert b == "((x ^ tp::swizzle<256, 2>(0, 8 * nt)) + tp::swizzle<256, 2>(kk, 0))"
