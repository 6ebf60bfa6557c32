"""Blocks held in shared memory: how an element's coordinates become an offset, and how a block gets there.

A `SharedTile` stores a 2-D block row by row along `col_dim` (the dimension that is contiguous in global
memory, so 16-byte copies stay 16-byte copies), with the 16-byte chunks of each row XOR-swizzled
(`tp::swizzle`, templates/device.cuh) so that reading 8 rows at one column, as ldmatrix does, and writing 16
bytes per thread are both free of bank conflicts. `OperandView` is a tile seen through a permutation (a
`tl.trans` of the staged value costs nothing: the dot reads the same bytes with the roles of rows and
columns swapped).

For warpgroup MMA (`slabs=True`) a row longer than 128 bytes is cut into 128-byte *slabs*, each stored as a
tile of its own one after the other (`tp::swizzle_slabs`): then every 8 rows x 128 bytes of a slab is the
1024-byte atom of the hardware's 128-byte swizzle, which is the same XOR as above (chunk ^= row % 8). Rows of
32, 64 and 128 bytes are already the 32/64/128-byte swizzle atoms, so those tiles do not change.

The swizzled offset is linear over GF(2) in the bits of (row, col): an element's coordinates are the XOR of a
per-thread part (lane and warp bits) and a per-register part (compile-time constants once loops unroll), so
its offset is the XOR of the two parts' offsets. `split_offset` spells it that way: the thread part is
computed once per kernel, and the constant part is an immediate that usually lands in the instruction's
address offset (an XOR becomes an addition when the two parts cannot share a bit).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.layout_assignment import operand_tile_layout, widest_access
from ..parse.ir import OpKind
from ..targets import switch


@dataclass(frozen=True)
class SharedTile:
    base: str              # C expression of the first element (a `T*`)
    shape: tuple           # the block's shape
    col_dim: int           # the dimension that runs along a row
    dtype: object
    slabs: bool = False    # rows over 128 bytes cut into 128-byte slabs (the layout wgmma descriptors read)

    @property
    def row_bytes(self):
        return self.shape[self.col_dim] * self.dtype.itemsize

    @property
    def rows(self):
        return self.shape[1 - self.col_dim]

    @property
    def sliced(self):
        return self.slabs and self.row_bytes > 128

    @property
    def span_bytes(self):
        """Bytes of one (slab) row: the swizzle mode wgmma reads the tile with."""
        return min(self.row_bytes, 128) if self.slabs else self.row_bytes

    def offset(self, coords) -> str:
        row, col = coords[1 - self.col_dim], coords[self.col_dim]
        if self.sliced:
            return f"tp::swizzle_slabs<{self.row_bytes}, {self.dtype.itemsize}, {self.rows}>({row}, {col})"
        return f"tp::swizzle<{self.row_bytes}, {self.dtype.itemsize}>({row}, {col})"

    def offset_value(self, coords) -> int:
        """The offset of integer coordinates (Python mirror of `tp::swizzle` and `tp::swizzle_slabs`)."""
        es = self.dtype.itemsize
        row, col = coords[1 - self.col_dim], coords[self.col_dim]
        if self.sliced:
            slab_elems = 128 // es
            return (col // slab_elems) * self.rows * slab_elems + _swizzled(128, es, row, col % slab_elems)
        return _swizzled(self.row_bytes, es, row, col)

    def image_bits(self, bases) -> int:
        """Every offset bit that coordinates spanned by `bases` (XOR combinations) can set."""
        bits = 0
        for b in bases:
            bits |= self.offset_value(b)
        return bits

    def split_offset(self, thread_offset: str, thread_bases, const_coords, const_bases) -> str:
        """Offset of (thread part XOR constant part): `thread_offset` is a C name holding the thread part's
        offset, `const_coords` C expressions of the constant part, and the bases span each part.

        The constant part is cut in two where its bases allow: the bases whose offset bits the thread part (or
        the bases XORed with it) can set are XORed with the thread offset, `thread ^ overlap` (one register
        per value of those bases, computed before a loop reading them), and the rest, whose bits nothing else
        sets, is added, `+ disjoint`, which becomes the instruction's immediate address offset. A stage's
        ldmatrix addresses then need one register per swizzle phase, not one per k step (the 16 x 128 x 128
        mma.sync loop: 6 lane registers for its 24 ldmatrix, as Triton's, instead of 24)."""
        overlap, disjoint = self._overlapping(thread_bases, const_bases)
        if not overlap or not disjoint or not _single_bits(const_bases) or not switch("TRANSPILER_TILE_IMMEDIATES"):
            joins = "^" if overlap else "+"
            return f"({thread_offset} {joins} {self.offset(const_coords)})"
        xored = self.offset(_masked(const_coords, overlap, const_bases))
        added = self.offset(_masked(const_coords, disjoint, const_bases))
        return f"(({thread_offset} ^ {xored}) + {added})"

    def _overlapping(self, thread_bases, const_bases):
        """(bases of the constant part whose offset bits meet the thread part's, or those of such a base,
        transitively; the others)."""
        taken, bits = [], self.image_bits(thread_bases)
        rest = list(const_bases)
        moved = True
        while moved:
            moved = False
            for b in list(rest):
                if self.offset_value(b) & bits:
                    rest.remove(b)
                    taken.append(b)
                    bits |= self.offset_value(b)
                    moved = True
        return taken, rest

    def at(self, coords) -> str:
        return f"{self.base}[{self.offset(coords)}]"

    def address(self, coords) -> str:
        return f"&{self.base}[{self.offset(coords)}]"


def _single_bits(bases) -> bool:
    """Whether each basis moves one coordinate by a power of two, no two alike: a coordinate's constant
    expression is then the sum of its bases' bits, and masking it picks the bases."""
    seen = set()
    for b in bases:
        moved = [(d, v) for d, v in enumerate(b) if v]
        if len(moved) != 1 or moved[0][1] & (moved[0][1] - 1) or moved[0] in seen:
            return False
        seen.add(moved[0])
    return True


def _masked(coords, bases, all_bases):
    """`coords` (C expressions spanned by `all_bases`, see `_single_bits`) keeping the bits of `bases` only."""
    out = []
    for d, c in enumerate(coords):
        mask, full = sum(b[d] for b in bases), sum(b[d] for b in all_bases)
        out.append("0" if not mask or c == "0" else c if mask == full else f"(({c}) & {mask})")
    return out


def _swizzled(row_bytes, es, row, col):
    row_elems, chunk, chunks = row_bytes // es, 16 // es, row_bytes // 16
    if chunks <= 1:
        return row * row_elems + col
    rows_per_line = 1 if row_bytes >= 128 else 128 // row_bytes
    phases = min(chunks, 8)
    return row * row_elems + (((col // chunk) ^ ((row // rows_per_line) % phases)) * chunk) + col % chunk


@dataclass(frozen=True)
class OperandView:
    """A dot operand read from a tile: operand dimension i is the tile's dimension `dims[i]`."""

    tile: SharedTile
    dims: tuple = (0, 1)

    def coords(self, i0: str, i1: str):
        out = [None, None]
        out[self.dims[0]], out[self.dims[1]] = i0, i1
        return out

    def at(self, i0, i1):
        return self.tile.at(self.coords(i0, i1))

    def address(self, i0, i1):
        return self.tile.address(self.coords(i0, i1))

    def contiguous(self, operand_dim) -> bool:
        """Whether operand dimension `operand_dim` runs along the tile's rows."""
        return self.dims[operand_dim] == self.tile.col_dim


def staged_view(em, value):
    """The tile a staged load put `value` in (directly or through `tl.trans`), or None."""
    if value in em.tiles:
        return OperandView(em.tiles[value])
    owner = value.owner
    if getattr(owner, "name", None) == OpKind.PERMUTE and owner.operands[0] in em.tiles:
        return OperandView(em.tiles[owner.operands[0]], tuple(owner.attrs["order"]))
    return None


def register_layout_for(em, value, k_dim):
    """The layout `value` is read in before it is written to a tile: its own, or for a value computed on
    demand, a blocked layout with 16 bytes per thread along `k_dim`."""
    own = em.layouts.layout.get(value)
    return own if own is not None else operand_tile_layout(value, k_dim, em.options.num_warps)


def write_to_tile(em, value, buffer, k_dim, k_major=False) -> OperandView:
    """Store a block held in registers into `buffer` as a swizzled tile (16 bytes per store where the
    registers allow); with `k_major`, K along the rows whatever the registers hold (wgmma of types other than
    fp16/bf16 reads no other tile). The caller places the barriers."""
    layout = register_layout_for(em, value, k_dim)
    read = em.operand(value, layout)
    reg_dims = [d for d in range(2) if layout.contiguous_regs(d) > 1]
    col_dim = k_dim if k_major or not reg_dims else reg_dims[0]
    tile = SharedTile(buffer, value.shape, col_dim, value.dtype, em.analysis.uses_wgmma)
    vec = widest_access(value.dtype.itemsize, layout.contiguous_regs(col_dim)) if read.is_identity_array else 1
    element = f"{buffer}[{em.tile_offset(layout, tile, 'r')}]"
    if vec > 1:
        em.write(em.macros.run_loop(layout.num_regs // vec, vec,
                                    f"tp::store<{vec}>(&{element}, &{read.array}[r]);"))
    else:
        em.write(em.macros.reg_loop(layout.num_regs, f"{element} = {read.at('r')}"))
    return OperandView(tile)


__all__ = ["SharedTile", "OperandView", "staged_view", "write_to_tile", "register_layout_for"]
