"""Distributed layouts as linear maps from (register, lane, warp) index bits to block coordinates.

A `LinearLayout` lists one basis vector (a coordinate per block dimension) for every register bit, every
lane bit (5) and every warp bit; the element a thread holds in register r is the XOR of the bases of the set
bits of r, lane and warp (Triton's LinearLayout; "Linear Layouts", 2025). A zero basis means replication:
those threads (or registers) hold the same element. Blocked, sliced, broadcast, transposed, reshaped and
mma-accumulator layouts are all this one kind of object, so "is this conversion free?" is a comparison and
"are these registers contiguous?" is a look at the low register bases.

The layouts built here use bases that are zero or a single power of two in one dimension, with no two bases
sharing a bit (permutation layouts). The emitter relies on that to write coordinates as shifts and masks.
"""
from __future__ import annotations

from dataclasses import dataclass

LANE_BITS = 5


def log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


def _zero(rank):
    return (0,) * rank


def _unit(rank, dim, bit):
    c = [0] * rank
    c[dim] = 1 << bit
    return tuple(c)


@dataclass(frozen=True)
class LinearLayout:
    shape: tuple
    reg: tuple      # basis per register bit
    lane: tuple     # basis per lane bit (5)
    warp: tuple     # basis per warp bit

    # -- queries -------------------------------------------------------------------------------------------
    @property
    def rank(self):
        return len(self.shape)

    @property
    def num_regs(self):
        return 1 << len(self.reg)

    @property
    def num_warps(self):
        return 1 << len(self.warp)

    def coords(self, r: int, lane: int, warp: int):
        c = [0] * self.rank
        for bits, bases in ((r, self.reg), (lane, self.lane), (warp, self.warp)):
            for i, basis in enumerate(bases):
                if bits >> i & 1:
                    for d, x in enumerate(basis):
                        c[d] ^= x
        return tuple(c)

    def contiguous_regs(self, dim: int) -> int:
        """How many leading registers hold consecutive elements along `dim` (a power of two)."""
        n = 0
        for i, basis in enumerate(self.reg):
            if basis == _unit(self.rank, dim, i):
                n += 1
            else:
                break
        return 1 << n

    def replicated_lane_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.lane) if not any(b))

    def replicated_warp_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.warp) if not any(b))

    def dim_bits(self, dim):
        """(kind, index, coordinate bit) for every basis touching `dim`."""
        out = []
        for kind, bases in (("reg", self.reg), ("lane", self.lane), ("warp", self.warp)):
            for i, basis in enumerate(bases):
                if basis[dim]:
                    out.append((kind, i, log2(basis[dim])))
        return out

    def describe(self) -> str:
        def fmt(bases):
            return "[" + ", ".join("(" + ",".join(map(str, b)) + ")" for b in bases) + "]"
        return f"shape {list(self.shape)}: reg {fmt(self.reg)} lane {fmt(self.lane)} warp {fmt(self.warp)}"

    # -- transformations (all free: they only rename index bits) ------------------------------------------
    def drop_dims(self, dims) -> "LinearLayout":
        """Remove `dims` (a reduction, or the operand of a broadcast); registers left holding copies go."""
        keep = [d for d in range(self.rank) if d not in dims]
        proj = lambda b: tuple(b[d] for d in keep)  # noqa: E731
        reg = tuple(proj(b) for b in self.reg if any(proj(b)))
        return LinearLayout(tuple(self.shape[d] for d in keep), reg, tuple(proj(b) for b in self.lane),
                            tuple(proj(b) for b in self.warp))

    def zero_dims(self, dims, new_shape) -> "LinearLayout":
        """Keep the rank but collapse `dims` to size 1 (the operand layout of a broadcast)."""
        proj = lambda b: tuple(0 if d in dims else x for d, x in enumerate(b))  # noqa: E731
        reg = tuple(proj(b) for b in self.reg if any(proj(b)))
        return LinearLayout(tuple(new_shape), reg, tuple(proj(b) for b in self.lane),
                            tuple(proj(b) for b in self.warp))

    def insert_dim(self, axis) -> "LinearLayout":
        ins = lambda b: b[:axis] + (0,) + b[axis:]  # noqa: E731
        return LinearLayout(self.shape[:axis] + (1,) + self.shape[axis:], tuple(ins(b) for b in self.reg),
                            tuple(ins(b) for b in self.lane), tuple(ins(b) for b in self.warp))

    def permute(self, order) -> "LinearLayout":
        p = lambda b: tuple(b[d] for d in order)  # noqa: E731
        return LinearLayout(tuple(self.shape[d] for d in order), tuple(p(b) for b in self.reg),
                            tuple(p(b) for b in self.lane), tuple(p(b) for b in self.warp))

    def reshape(self, new_shape) -> "LinearLayout":
        """Row-major reshape: each basis is re-read as a flat index, then unflattened in the new shape."""
        def flat(b):
            idx = 0
            for d, x in enumerate(b):
                idx = idx * self.shape[d] + x
            return idx

        def unflat(i):
            out = []
            for s in reversed(new_shape):
                out.append(i % s)
                i //= s
            return tuple(reversed(out))
        conv = lambda b: unflat(flat(b))  # noqa: E731
        return LinearLayout(tuple(new_shape), tuple(conv(b) for b in self.reg), tuple(conv(b) for b in self.lane),
                            tuple(conv(b) for b in self.warp))


def register_map(target: LinearLayout, source: LinearLayout, broadcast_dims=()):
    """For a value in `source` read by an op in `target` (same thread), the source register of each target
    register, or None if some target element is not held by the same thread in `source` (not free).
    `broadcast_dims` are dimensions of size 1 in `source` that the target broadcasts over."""
    def proj(c):
        return tuple(0 if d in broadcast_dims else x for d, x in enumerate(c))
    if [proj(b) for b in target.lane] != list(source.lane) or [proj(b) for b in target.warp] != list(source.warp):
        return None
    index = {}
    for r in range(source.num_regs):
        index.setdefault(source.coords(r, 0, 0), r)
    out = []
    for r in range(target.num_regs):
        s = index.get(proj(target.coords(r, 0, 0)))
        if s is None:
            return None
        out.append(s)
    return out


def linear_register_map(mapping):
    """If `mapping` (list: target register -> source register) moves bits linearly, return its (s, d) pairs."""
    n = len(mapping)
    if n == 0 or mapping[0] != 0:
        return None
    bits = n.bit_length() - 1
    pairs = []
    for i in range(bits):
        m = mapping[1 << i]
        if m == 0:
            continue
        if m & (m - 1):
            return None
        pairs.append((i, m.bit_length() - 1))
    for r in range(n):
        expect = 0
        for s, d in pairs:
            if r >> s & 1:
                expect |= 1 << d
        if mapping[r] != expect:
            return None
    return pairs


def blocked(shape, size_per_thread: int, order, num_warps: int) -> LinearLayout:
    """Triton's default blocked layout: `size_per_thread` elements along `order[0]`, then lanes, then warps
    filling dimensions fastest-first; leftover dimension bits become register repetitions, and lanes or warps
    left over (blocks smaller than the thread grid) hold copies."""
    rank = len(shape)
    remaining = [log2(s) for s in shape]
    reg, lane, warp = [], [], []
    used = [0] * rank
    d0 = order[0]
    spt_bits = min(log2(size_per_thread), remaining[d0])
    for i in range(spt_bits):
        reg.append(_unit(rank, d0, i))
    used[d0] = spt_bits
    remaining[d0] -= spt_bits

    def take(n_bits, out):
        for _ in range(n_bits):
            for d in order:
                if remaining[d] > 0:
                    out.append(_unit(rank, d, used[d]))
                    used[d] += 1
                    remaining[d] -= 1
                    break
            else:
                out.append(_zero(rank))

    take(LANE_BITS, lane)
    take(log2(num_warps), warp)
    for d in order:
        while remaining[d] > 0:
            reg.append(_unit(rank, d, used[d]))
            used[d] += 1
            remaining[d] -= 1
    return LinearLayout(tuple(shape), tuple(reg), tuple(lane), tuple(warp))
