"""Scan plans: whether a scan can run in its operand's layout, and which index bits each step walks.

A scan along an axis runs in place when the axis's coordinate bits, from least to most significant, are
held by registers, then lanes, then warps, then registers again (what every blocked layout gives), with the
lane bits consecutive and increasing, so that a shuffle up by a power of two moves one lane group along
the axis. The lowering then scans each thread's low registers in order, the lanes by shuffles, and carries
the totals of warps and of the high-register chunks through shared memory (or a shuffle when one warp
spans the axis). Registers, lanes and warps along other dimensions, or holding copies, ride along.
`plan_scan` returns None for any other layout; layout assignment then runs the scan in the default
blocked layout, which always qualifies.
"""
from __future__ import annotations

from dataclasses import dataclass

from .layouts import LinearLayout


@dataclass(frozen=True)
class ScanPlan:
    layout: LinearLayout
    axis: int
    lo_regs: tuple      # register bits along the axis below every lane and warp bit, least significant first
    hi_regs: tuple      # register bits along the axis above every lane and warp bit (chunks), least first
    other_regs: tuple   # register bits along other dimensions, in register order
    lane_bits: tuple    # lane bits along the axis, least significant first (consecutive)
    warp_bits: tuple    # warp bits along the axis, least significant first

    @property
    def lane_mask(self) -> int:
        return sum(1 << i for i in self.lane_bits)

    def describe(self) -> str:
        steps = [f"{1 << len(self.lo_regs)} registers in order in each thread"] if self.lo_regs else []
        if self.lane_bits:
            steps.append(f"{1 << len(self.lane_bits)} lanes by shuffles")
        if self.warp_bits:
            steps.append(f"{1 << len(self.warp_bits)} warps through shared memory")
        if self.hi_regs:
            steps.append(f"{1 << len(self.hi_regs)} register chunks carried in order")
        return ", then ".join(steps) or "one element per thread along the axis: nothing to combine"


def plan_scan(layout: LinearLayout, axis: int) -> ScanPlan | None:
    """The plan of a scan along `axis` in `layout`, or None when the layout does not allow one in place."""
    bits = []        # (coordinate bit, kind, index) of every basis along the axis
    other_regs = []
    for kind, bases in (("reg", layout.reg), ("lane", layout.lane), ("warp", layout.warp)):
        for i, basis in enumerate(bases):
            if basis[axis]:
                if any(x for d, x in enumerate(basis) if d != axis):
                    return None
                bits.append((basis[axis].bit_length() - 1, kind, i))
            elif kind == "reg":
                if not any(basis):
                    return None      # a register holding a copy: no scan order for it
                other_regs.append(i)
    bits.sort()
    kinds = [k for _, k, _ in bits]
    n_lo = next((j for j, k in enumerate(kinds) if k != "reg"), len(kinds))
    n_hi = next((j for j, k in enumerate(reversed(kinds)) if k != "reg"), 0) if n_lo < len(kinds) else 0
    middle = kinds[n_lo:len(kinds) - n_hi]
    n_lanes = middle.count("lane")
    if middle != ["lane"] * n_lanes + ["warp"] * (len(middle) - n_lanes):
        return None
    lanes = [i for _, k, i in bits if k == "lane"]
    if lanes and lanes != list(range(lanes[0], lanes[0] + len(lanes))):
        return None
    regs = [i for _, k, i in bits if k == "reg"]
    return ScanPlan(layout, axis, tuple(regs[:n_lo]), tuple(regs[n_lo:]), tuple(other_regs), tuple(lanes),
                    tuple(i for _, k, i in bits if k == "warp"))


__all__ = ["ScanPlan", "plan_scan"]
