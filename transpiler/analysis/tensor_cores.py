"""Tensor-core pass: for every `tl.dot`, which instruction computes it, how warps tile the output block, and
the layout the product lives in.

Decides from the operand dtypes, the precision attribute, the block shape and `num_warps`:
- the instruction: `mma.sync` m16n8k16 (fp16, bf16), m16n8k8 (tf32), m16n8k32 (int8; fp8 e4m3/e5m2, sm_89+),
  or plain FMA (fp32 "ieee", fp64, and int8/fp8 blocks whose K is not a multiple of 32);
- the warp grid (warps_m x warps_n): split the dimension with more work per warp first, never below one
  instruction tile per warp (warps left over hold copies);
- the accumulator layout as a `LinearLayout`: the mma C fragment (lane = 4 rows of 8 x 4 column pairs),
  then n-tiles and m-tiles in registers, then warps. Every later pass treats it like any other layout.
- a batched dot ([B, M, K] @ [B, K, N]): the batch is the layout's outer dimension, over the lowest warp bits
  (up to B warps) and then the highest register bits; each batch's [M, N] is a 2-D dot's plan over the warps
  left (`plan_batched_dot`); mma.sync or FMA, never wgmma.

On the sm_90a target (`target="sm_90a"`, unless TRANSPILER_WGMMA=0) a dot whose block suits warpgroup MMA
takes `wgmma.mma_async` instead (see `plan_wgmma`; `WGMMA_TYPES`: m64nNk16 for fp16/bf16, k8 for tf32, k32 for
int8 with an int32 product and for fp8 e4m3/e5m2; the types other than fp16/bf16 read only K-major tiles, so
an operand loaded with M or N contiguous keeps the dot on mma.sync, with that reason): warpgroups
(4 warps) split the output along M first, each issues one m64 x N instruction per 64 rows per k16 step with
B read from shared memory through a matrix descriptor. Its accumulator is the m16n8 C fragment per warp for
16 rows, repeated over N/8 in registers, the warps of a warpgroup stacked along M.

Where A comes from: shared memory (a descriptor) when it is a load (staged by the pipeline, or written to a
tile) or a value the enclosing loop does not change (written once to a tile of its own); otherwise, a value
computed next to the dot (attention's softmax weights P), *registers*: wgmma's register-A form, the A
fragments in `wgmma_a_layout`. That layout is the m16n8k16 A fragment per warp, which for 16-bit types is
the accumulator layout of a product with N = this dot's K: P computed from Q @ K^T's accumulator is already
where P @ V wants it (the layout pass finds the conversion free), and the emitter only packs register pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..parse.ir import LOOPS, OpKind
from ..targets import WGMMA_TARGETS, wgmma_enabled
from .invariant_operands import invariant_dot_operands
from .layout_assignment import coalesced_order
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
MMA_E4M3 = MmaInstruction("tp::mma_m16n8k32_e4m3", 16, 8, 32, 4, 2, 4)    # sm_89+ (arch_requirements.py)
MMA_E5M2 = MmaInstruction("tp::mma_m16n8k32_e5m2", 16, 8, 32, 4, 2, 4)


@dataclass(frozen=True)
class DotPlan:
    kind: str                      # "mma", "wgmma" or "fma"
    layout: LinearLayout           # the product's layout
    instruction: MmaInstruction | None = None
    warps_m: int = 1
    warps_n: int = 1
    tiles_m: int = 1               # instruction tiles per warp along M
    tiles_n: int = 1
    tf32: bool = False             # round fp32 operands to tf32 first (mma's fragments, or FMA's operands)
    wgmma: "WgmmaShape | None" = None
    a_layout: LinearLayout | None = None   # register-A wgmma: the layout A is read in (its fragments)
    warps_b: int = 1               # a batched dot: warps along the batch (the lowest warp bits)
    tiles_b: int = 1               # batches each warp computes one after the other (the highest register bits)

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
    if a_dtype in FP8_MMA and k % 32 == 0:
        return FP8_MMA[a_dtype]
    return None


FP8_MMA = {dtypes.float8e4nv: MMA_E4M3, dtypes.float8e5: MMA_E5M2}


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


@dataclass(frozen=True)
class WgmmaType:
    """One operand type of `wgmma.mma_async` (PTX "Asynchronous Warpgroup Level Matrix Multiply-Accumulate")."""

    ptx: str               # the operand type in the instruction: f16, bf16, tf32, s8, e4m3, e5m2
    k: int                 # the instruction's K: 32 bytes of each operand row
    acc: str               # the accumulator type: f32 or s32
    transposable: bool     # imm-trans-a/b exist (16-bit types): M/N-major tiles can be read
    scales: bool           # imm-scale-a/b exist (floating-point types)


WGMMA_TYPES = {
    dtypes.float16: WgmmaType("f16", 16, "f32", True, True),
    dtypes.bfloat16: WgmmaType("bf16", 16, "f32", True, True),
    dtypes.float32: WgmmaType("tf32", 8, "f32", False, True),      # with input_precision "tf32" only
    dtypes.int8: WgmmaType("s8", 32, "s32", False, False),
    dtypes.float8e4nv: WgmmaType("e4m3", 32, "f32", False, True),
    dtypes.float8e5: WgmmaType("e5m2", 32, "f32", False, True),
}


@dataclass(frozen=True)
class WgmmaShape:
    """How the warpgroups of a program cover a dot's output with `wgmma.mma_async.m64nNkK`."""

    ptx_type: str        # the operands' PTX type (WgmmaType.ptx)
    groups_m: int        # warpgroups along M
    groups_n: int        # warpgroups along N
    tiles_m: int         # m64 instructions per warpgroup per k step
    n: int               # the instruction's N (the warpgroup's columns)
    k: int = 16          # the instruction's K (elements per k step)
    a_in_registers: bool = False   # the register-A form: A fragments in registers (`wgmma_a_layout`)
    acc_type: str = "f32"
    transposable: bool = True
    scales: bool = True

    @property
    def helper(self):
        return f"tp::wgmma_m64n{self.n}k{self.k}_{self.ptx_type}" + ("_rs" if self.a_in_registers else "")


REGISTER_FILE = 65536             # 32-bit registers per SM, shared by the threads of a program (sm_80, sm_90)
MAX_REGISTERS_PER_THREAD = 255
WGMMA_REGISTER_RESERVE = 32       # registers left for addresses, descriptors and loop state


def plan_wgmma(m, n, k, a_dtype, acc_dtype, num_warps, a_in_registers=False, precision="tf32",
               k_major=(True, True)):
    """`(WgmmaShape, None)` when warpgroup MMA can compute an m x n x k dot, else `(None, why not)`;
    `a_in_registers`: A is read from registers (the register-A form), B from shared memory; `precision`: the
    dot's (fp32 operands take tf32 wgmma only under "tf32"); `k_major`: whether A and B reach shared memory with
    K contiguous (types other than fp16/bf16 cannot be read otherwise)."""
    kind = WGMMA_TYPES.get(a_dtype)
    if kind is None or (a_dtype is dtypes.float32 and precision != "tf32"):
        what = "exact fp32 products (input_precision 'ieee')" if a_dtype is dtypes.float32 else f"{a_dtype} operands"
        return None, f"warpgroup MMA has no instruction for {what}"
    if acc_dtype is not (dtypes.int32 if kind.acc == "s32" else dtypes.float32):
        return None, "wgmma is wired for an fp32 (int32 for int8) product only (not built yet)"
    if a_in_registers and not kind.transposable:
        return None, f"the register-A form is wired for fp16/bf16 only, not {a_dtype} (not built yet)"
    if not kind.transposable and not all(k_major):
        which = " and ".join(name for name, ok in zip(("A", "B"), k_major) if not ok)
        return None, (f"{a_dtype} wgmma reads only K-major tiles, and {which} is loaded with its M/N dimension "
                      "contiguous (mma.sync reads it element by element)")
    if num_warps % 4:
        return None, f"num_warps={num_warps} is not a whole number of warpgroups (4 warps)"
    if m % 64 or k % kind.k:
        return None, f"the block ({m}x{n}x{k}) needs M a multiple of 64 and K of {kind.k}"
    es = a_dtype.itemsize
    if (n * k * es) % 1024:
        return None, f"the B tile ({k}x{n}) is smaller than the 1024-byte swizzle atoms wgmma reads"
    groups = num_warps // 4
    gm = min(groups, m // 64)
    gn = groups // gm
    inst_n = n // gn
    # Columns split over warpgroups must start on a whole 128-byte swizzle span (an N-major B tile).
    if gm * gn != groups or inst_n % 8 or (gn > 1 and (inst_n * es) % 128):
        return None, f"{groups} warpgroups do not split a {m}x{n} block into m64 x N tiles"
    if inst_n > 256:
        return None, f"each warpgroup would need N={inst_n} columns; wgmma takes at most 256 (splitting it is not built yet)"
    # wgmma's accumulators live in registers for the whole loop (no spilling inside its asm): they must fit the
    # thread's share of the register file, less room for addresses, descriptors and the epilogue.
    acc_registers = (m // (64 * gm)) * inst_n // 2
    if a_in_registers:     # the A fragments (m/gm rows x k per warpgroup of 128 threads) live as long
        acc_registers += (m // gm) * k * es // (128 * 4)
    register_cap = min(MAX_REGISTERS_PER_THREAD, REGISTER_FILE // (32 * num_warps)) - WGMMA_REGISTER_RESERVE
    if acc_registers > register_cap:
        held = "accumulator and A fragment registers" if a_in_registers else "accumulator registers"
        return None, (f"its {acc_registers} {held} per thread exceed the {register_cap} a thread of "
                      f"{num_warps} warps can hold beside addresses (mma.sync can spill them)")
    return WgmmaShape(kind.ptx, gm, gn, m // (64 * gm), inst_n, kind.k, a_in_registers, kind.acc, kind.transposable,
                      kind.scales), None


def wgmma_layout(m, n, shape: WgmmaShape, num_warps):
    """The accumulator of `shape`: per warp the m16n8 C fragment, N/8 of them along N in registers, then the
    warpgroup's m64 tiles; the 4 warps of a warpgroup stacked along M (16 rows each), then the warpgroups."""
    reg = [(0, 1), (8, 0)]
    reg += [(0, 8 << j) for j in range(log2(shape.n // 8))]
    reg += [(64 << i, 0) for i in range(log2(shape.tiles_m))]
    lane = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
    warp = [(16, 0), (32, 0)]
    warp += [(64 * shape.tiles_m << i, 0) for i in range(log2(shape.groups_m))]
    warp += [(0, shape.n << j) for j in range(log2(shape.groups_n))]
    warp += [(0, 0)] * (log2(num_warps) - len(warp))
    return LinearLayout((m, n), tuple(reg), tuple(lane), tuple(warp))


def wgmma_a_layout(m, k, shape: WgmmaShape, num_warps):
    """The A fragments of the register-A form, as a layout of the [m, k] operand: per warp 16 rows in the
    m16n8k16 A fragment (register bits: column 1, row 8, column 8; lanes: columns 2 and 4, rows 1, 2, 4), then
    the k16 steps and the warpgroup's m64 tiles in registers; the warps of a warpgroup stacked along M, then
    the warpgroups along M; warpgroups along N hold copies (each multiplies the same rows of A)."""
    reg = [(0, 1), (8, 0), (0, 8)]
    reg += [(0, 16 << j) for j in range(log2(k // 16))]
    reg += [(64 << i, 0) for i in range(log2(shape.tiles_m))]
    lane = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
    warp = [(16, 0), (32, 0)]
    warp += [(64 * shape.tiles_m << i, 0) for i in range(log2(shape.groups_m))]
    warp += [(0, 0)] * (log2(num_warps) - len(warp))
    return LinearLayout((m, k), tuple(reg), tuple(lane), tuple(warp))


def loaded_k_major(value, k_dim, axis) -> bool:
    """Whether operand `value` reaches shared memory with K (its dimension `k_dim`) along the tile's rows: a
    load (or a `tl.trans` of one) is staged with its most contiguous dimension along the rows (pipelining.py,
    tiles.py); anything else is written to a tile by the dot, which puts K along the rows for the types whose
    wgmma cannot transpose."""
    dims, owner = (0, 1), value.owner
    if getattr(owner, "name", None) == OpKind.PERMUTE:
        dims, owner = tuple(owner.attrs["order"]), owner.operands[0].owner
    if getattr(owner, "name", None) != OpKind.LOAD or axis is None:
        return True
    ptr = owner.operands[0]
    return dims[k_dim] == coalesced_order(axis[ptr], len(ptr.shape))[0]


# M or N below this: FMA (Triton pads such blocks to its mma tiles; ours are products too small to matter)
MIN_MMA_MN = 16


def _fma_plan(op, shape, num_warps) -> DotPlan:
    """FMA on CUDA cores, each thread its own elements; fp32 operands rounded to tf32 first where the dot's
    precision asks it (as the interpreter and the tensor cores round them)."""
    tf32 = op.operands[0].dtype is dtypes.float32 and op.attrs["precision"] == "tf32"
    return DotPlan("fma", blocked(shape, 1, list(reversed(range(len(shape)))), num_warps), tf32=tf32)


def batched_layout(per_batch: LinearLayout, batch, warps_b) -> LinearLayout:
    """A batched product's layout: the batch is its outer dimension, split over the lowest `warps_b` warp bits
    first, then over the highest register bits; each batch's [M, N] lies in `per_batch` (over the other warps)."""
    lift = lambda bases: tuple((0,) + tuple(b) for b in bases)  # noqa: E731
    reg = lift(per_batch.reg) + tuple((warps_b << j, 0, 0) for j in range(log2(batch // warps_b)))
    warp = tuple((1 << i, 0, 0) for i in range(log2(warps_b))) + lift(per_batch.warp)
    return LinearLayout((batch,) + tuple(per_batch.shape), reg, lift(per_batch.lane), warp)


def plan_batched_dot(op, num_warps) -> DotPlan:
    """[B, M, K] @ [B, K, N]: warps go to the batch first (as many as there are batches), the rest split each
    batch's [M, N] as a 2-D dot's do; each warp runs the batches its registers hold one after the other, each on
    mma.sync as a 2-D product (no wgmma: Triton takes mma v2 for batched dots too), or FMA on CUDA cores."""
    a = op.operands[0]
    batch, m, k = a.shape
    n = op.operands[1].shape[2]
    instr = choose_instruction(a.dtype, op.attrs["precision"], k)
    if instr is None or min(m, n) < MIN_MMA_MN:
        return _fma_plan(op, (batch, m, n), num_warps)
    warps_b = min(batch, num_warps)
    rest = num_warps // warps_b
    wm, wn = warp_grid(m, n, rest)
    per_batch, tiles_m, tiles_n = mma_layout(m, n, wm, wn, rest)
    return DotPlan("mma", batched_layout(per_batch, batch, warps_b), instr, wm, wn, tiles_m, tiles_n,
                   tf32=instr is MMA_TF32, warps_b=warps_b, tiles_b=batch // warps_b)


def plan_dot(op, num_warps, target=None, a_in_registers=False, axis=None) -> DotPlan:
    a, b = op.operands[0], op.operands[1]
    if len(a.shape) == 3:
        return plan_batched_dot(op, num_warps)
    (m, k), n = a.shape, b.shape[1]
    if wgmma_enabled(target) and min(m, n) >= MIN_MMA_MN:
        k_major = (a_in_registers or loaded_k_major(a, 1, axis), loaded_k_major(b, 0, axis))
        shape, _ = plan_wgmma(m, n, k, a.dtype, op.result.dtype, num_warps, a_in_registers, op.attrs["precision"],
                              k_major)
        if shape is None and a_in_registers:       # the register-A form is wired for fewer types
            a_in_registers = False
            k_major = (True, k_major[1])
            shape, _ = plan_wgmma(m, n, k, a.dtype, op.result.dtype, num_warps, False, op.attrs["precision"],
                                  k_major)
        if shape is not None:
            a_layout = wgmma_a_layout(m, k, shape, num_warps) if a_in_registers else None
            return DotPlan("wgmma", wgmma_layout(m, n, shape, num_warps), wgmma=shape, a_layout=a_layout)
    instr = choose_instruction(a.dtype, op.attrs["precision"], k)
    if instr is None or min(m, n) < MIN_MMA_MN:
        return _fma_plan(op, (m, n), num_warps)
    wm, wn = warp_grid(m, n, num_warps)
    layout, tiles_m, tiles_n = mma_layout(m, n, wm, wn, num_warps)
    return DotPlan("mma", layout, instr, wm, wn, tiles_m, tiles_n, tf32=instr is MMA_TF32)


def a_from_registers(op, invariant) -> bool:
    """Whether a dot's A is a value computed next to it (not a load, nor a load seen through `tl.trans`, nor
    one of the loop-invariant operands in `invariant`, which go to shared-memory tiles)."""
    a = op.operands[0]
    owner = a.owner
    if getattr(owner, "name", None) == OpKind.PERMUTE:
        owner = owner.operands[0].owner
    return getattr(owner, "name", None) not in (None, OpKind.LOAD) and a not in invariant


def plan_dots(kernel, decisions, target, num_warps, axis=None):
    plans = {}
    invariant = {v for loop in kernel.walk() if loop.name in LOOPS for v, _ in invariant_dot_operands(loop)}
    for op in kernel.walk():
        if op.name != OpKind.DOT:
            continue
        plan = plan_dot(op, num_warps, target, a_from_registers(op, invariant), axis)
        plans[op] = plan
        a, b = op.operands[0], op.operands[1]
        shape = f"{a.shape[-2]}x{b.shape[-1]}x{a.shape[-1]}"
        if len(a.shape) == 3:
            shape = f"{a.shape[0]} batches of {shape}"
        if plan.kind == "wgmma":
            w = plan.wgmma
            where = ("A from registers (the register-A form), B from shared memory through a descriptor"
                     if w.a_in_registers else "both operands from shared memory through descriptors")
            why = ("A is computed next to the dot, not loaded: its registers are the A fragments"
                   if w.a_in_registers else "warpgroup MMA reads staged or tiled operands in place")
            decisions.add("tensor_cores", op,
                          f"dot {shape}: wgmma.mma_async m64n{w.n}k{w.k} ({a.dtype}), "
                          f"warpgroups {w.groups_m}x{w.groups_n},"
                          f" each {64 * w.tiles_m}x{w.n} = {w.tiles_m} instruction(s) per k step; {where}",
                          f"{target}: {why}")
            continue
        if plan.kind == "mma" and target in WGMMA_TARGETS and len(a.shape) == 3:
            decisions.add("tensor_cores", op, f"dot {shape}: mma.sync rather than wgmma",
                          "a batched dot runs batch by batch on mma.sync (as Triton's mma v2 does)")
        elif plan.kind == "mma" and target in WGMMA_TARGETS:
            _, why = plan_wgmma(a.shape[0], b.shape[1], a.shape[1], a.dtype, op.result.dtype, num_warps,
                                precision=op.attrs["precision"],
                                k_major=(loaded_k_major(a, 1, axis), loaded_k_major(b, 0, axis)))
            why = why or "TRANSPILER_WGMMA=0"
            i = plan.instruction
            decisions.add("tensor_cores", op, f"dot {shape}: mma.sync m{i.m}n{i.n}k{i.k} rather than wgmma", why)
        if plan.kind == "mma":
            i = plan.instruction
            decisions.add("tensor_cores", op,
                          f"dot {shape}: mma.sync m{i.m}n{i.n}k{i.k} ({a.dtype}), "
                          + (f"warps {plan.warps_b} along the batch ({plan.tiles_b} batch(es) each), "
                             if len(a.shape) == 3 else "")
                          + f"warps {plan.warps_m}x{plan.warps_n},"
                          f" each {plan.warp_rows}x{plan.warp_cols} = {plan.tiles_m}x{plan.tiles_n} tiles",
                          "the output is split along the dimension with more work per warp first")
        else:
            why = {"ieee": "exact fp32/fp64 products were asked for",
                   "native": "int8 or fp8 with K not a multiple of 32"}
            if min(a.shape[-2], b.shape[-1]) < MIN_MMA_MN:
                why = f"M or N below {MIN_MMA_MN}" + (" (its fp32 operands rounded to tf32 first)" if plan.tf32 else "")
            else:
                why = why.get(op.attrs["precision"], "no tensor-core instruction for these inputs")
            decisions.add("tensor_cores", op, f"dot {shape}: FMA on CUDA cores", why)
    return plans


__all__ = ["DotPlan", "MmaInstruction", "WgmmaShape", "plan_dots", "plan_dot", "plan_wgmma", "warp_grid",
           "mma_layout", "batched_layout", "plan_batched_dot", "wgmma_layout", "wgmma_a_layout", "a_from_registers", "wgmma_enabled"]
