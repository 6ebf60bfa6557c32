"""Tensor-core pass: for every `tl.dot`, which instruction computes it, how warps tile the output block, and
the layout the product lives in.

Decides from the operand dtypes, the precision attribute, the block shape and `num_warps`:
- the instruction: `mma.sync` m16n8k16 (fp16, bf16), m16n8k8 (tf32), m16n8k32 (int8), or plain FMA (fp32
  "ieee", fp64, and int8 blocks whose K is below 32);
- the warp grid (warps_m x warps_n): split the dimension with more work per warp first, never below one
  instruction tile per warp (warps left over hold copies);
- the accumulator layout as a `LinearLayout`: the mma C fragment (lane = 4 rows of 8 x 4 column pairs),
  then n-tiles and m-tiles in registers, then warps. Every later pass treats it like any other layout.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from .layouts import LANE_BITS, LinearLayout, blocked, log2


@dataclass(frozen=True)
class MmaInstruction:
    """One `mma.sync` shape and the fragment maps of its operands (PTX ISA "Matrix Fragments for mma")."""

    ptx: str               # the device helper that issues it (templates/device.cuh)
    m: int
    n: int
    k: int
    a_regs: int            # 32-bit registers of the A fragment per thread
    b_regs: int
    elems_per_reg: int     # operand elements packed in one 32-bit register

    def a_element(self, reg, e):
        """(row, col) of element e of A register `reg`, as C expressions of gid = lane/4 and tig = lane%4."""
        row = _plus("gid", 8 * (reg & 1))
        if self.elems_per_reg == 1:          # tf32: a0=(g,t) a1=(g+8,t) a2=(g,t+4) a3=(g+8,t+4)
            col = _plus("tig", 4 * (reg >> 1))
        else:                                # 2 or 4 elements per register, k-consecutive
            col = _plus(f"{self.elems_per_reg} * tig", e + (self.k // 2) * (reg >> 1))
        return row, col

    def b_element(self, reg, e):
        """(k, n) of element e of B register `reg`."""
        if self.elems_per_reg == 1:
            k = _plus("tig", 4 * reg)
        else:
            k = _plus(f"{self.elems_per_reg} * tig", e + (self.k // 2) * reg)
        return k, "gid"


def _plus(base, c):
    return f"{base} + {c}" if c else base


MMA_F16 = MmaInstruction("tp::mma_m16n8k16_f16", 16, 8, 16, 4, 2, 2)
MMA_BF16 = MmaInstruction("tp::mma_m16n8k16_bf16", 16, 8, 16, 4, 2, 2)
MMA_TF32 = MmaInstruction("tp::mma_m16n8k8_tf32", 16, 8, 8, 4, 2, 1)
MMA_S8 = MmaInstruction("tp::mma_m16n8k32_s8", 16, 8, 32, 4, 2, 4)


@dataclass(frozen=True)
class DotPlan:
    kind: str                      # "mma" or "fma"
    layout: LinearLayout           # the product's layout
    instruction: MmaInstruction | None = None
    warps_m: int = 1
    warps_n: int = 1
    tiles_m: int = 1               # instruction tiles per warp along M
    tiles_n: int = 1
    tf32: bool = False             # round fp32 operands to tf32 first

    @property
    def warp_rows(self):
        return self.tiles_m * 16

    @property
    def warp_cols(self):
        return self.tiles_n * 8


def choose_instruction(a_dtype, precision, k):
    if a_dtype is dtypes.float16:
        return MMA_F16
    if a_dtype is dtypes.bfloat16:
        return MMA_BF16
    if a_dtype is dtypes.float32 and precision == "tf32":
        return MMA_TF32
    if a_dtype is dtypes.int8 and k % 32 == 0:
        return MMA_S8
    return None


def warp_grid(m, n, num_warps, tile_m=16, tile_n=8):
    """Split warps over the output: the dimension with more elements per warp first, down to one tile."""
    wm = wn = 1
    while wm * wn < num_warps:
        can_m, can_n = m // (wm * 2) >= tile_m, n // (wn * 2) >= tile_n
        if can_m and (m // wm >= n // wn or not can_n):
            wm *= 2
        elif can_n:
            wn *= 2
        else:
            break
    return wm, wn


def mma_layout(m, n, wm, wn, num_warps):
    """The accumulator of a warps_m x warps_n grid of warps, each holding (m/wm) x (n/wn) in m16n8 tiles."""
    tiles_m, tiles_n = m // (16 * wm), n // (8 * wn)
    reg = [(0, 1), (8, 0)]
    reg += [(0, 8 << j) for j in range(log2(tiles_n))]
    reg += [(16 << i, 0) for i in range(log2(tiles_m))]
    lane = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
    warp = [(16 * tiles_m << i, 0) for i in range(log2(wm))]
    warp += [(0, 8 * tiles_n << j) for j in range(log2(wn))]
    warp += [(0, 0)] * (log2(num_warps) - len(warp))
    assert len(lane) == LANE_BITS
    return LinearLayout((m, n), tuple(reg), tuple(lane), tuple(warp)), tiles_m, tiles_n


def plan_dot(op, num_warps) -> DotPlan:
    a, b = op.operands[0], op.operands[1]
    (m, k), n = a.shape, b.shape[1]
    instr = choose_instruction(a.dtype, op.attrs["precision"], k)
    if instr is None:
        return DotPlan("fma", blocked((m, n), 1, [1, 0], num_warps))
    wm, wn = warp_grid(m, n, num_warps)
    layout, tiles_m, tiles_n = mma_layout(m, n, wm, wn, num_warps)
    return DotPlan("mma", layout, instr, wm, wn, tiles_m, tiles_n, tf32=instr is MMA_TF32)


def plan_dots(kernel, decisions):
    plans = {}
    for op in kernel.walk():
        if op.name != "dot":
            continue
        plan = plan_dot(op, kernel.num_warps)
        plans[op] = plan
        a, b = op.operands[0], op.operands[1]
        shape = f"{a.shape[0]}x{b.shape[1]}x{a.shape[1]}"
        if plan.kind == "mma":
            i = plan.instruction
            decisions.add("tensor_cores", op,
                          f"dot {shape}: mma.sync m{i.m}n{i.n}k{i.k} ({a.dtype}), warps {plan.warps_m}x{plan.warps_n},"
                          f" each {plan.warp_rows}x{plan.warp_cols} = {plan.tiles_m}x{plan.tiles_n} tiles",
                          "the output is split along the dimension with more work per warp first")
        else:
            why = {"ieee": "exact fp32/fp64 products were asked for", "native": "int8 with K below 32"}
            decisions.add("tensor_cores", op, f"dot {shape}: FMA on CUDA cores",
                          why.get(op.attrs["precision"], "no tensor-core instruction for these inputs"))
    return plans


__all__ = ["DotPlan", "MmaInstruction", "plan_dots", "plan_dot", "warp_grid", "mma_layout"]
