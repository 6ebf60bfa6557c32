"""Warpgroup MMA spelling: the `tp::wgmma_m64nNk16_<type>` helper of one instruction shape, and the matrix
descriptor of an operand tile.

A descriptor says how the tensor cores walk a tile in shared memory (PTX "Shared Memory Matrix Layout"):
the swizzle mode is the tile's row length in bytes (32, 64 or 128; longer rows are 128-byte slabs, see
tiles.py); a tile whose rows run along K is *K-major* (the stride-dimension offset SBO steps over 8 rows,
a k16 step moves the start 32 bytes along the row); one whose rows run along M (for A) or N (for B) is
*M/N-major*, read with the instruction's transpose bit (16-bit types only): SBO steps over 8 rows of K and the
leading-dimension offset LBO from one 128-byte slab of M/N to the next.
"""
from __future__ import annotations

from dataclasses import dataclass

SWIZZLE_MODES = {128: 1, 64: 2, 32: 3}   # span bytes -> descriptor mode field


@dataclass(frozen=True)
class Descriptor:
    mode: int
    lbo: int
    sbo: int
    transposed: int      # the instruction's imm-trans bit for this operand

    def spell(self, address: str) -> str:
        return f"tp::wgmma_desc<{self.mode}, {self.lbo}, {self.sbo}>({address})"


def descriptor(view, k_dim) -> Descriptor:
    """The descriptor fields of operand `view` (A: k_dim 1, B: k_dim 0)."""
    tile = view.tile
    span = tile.span_bytes
    if view.contiguous(k_dim):
        return Descriptor(SWIZZLE_MODES[span], 16, 8 * span, 0)
    return Descriptor(SWIZZLE_MODES[span], tile.rows * span, 8 * span, 1)


def k_step_offset(view, k_dim, k: str) -> str:
    """C expression of what a descriptor's start-address field (16-byte units) moves by from the tile's k = 0
    to k = `k` (a multiple of the k step): the descriptor at the warpgroup's origin is made once and each k step
    adds a constant (as Triton does). Exact because the other coordinate of both points sits on a swizzle atom
    row (a multiple of 8 rows: 64 * mt, a warpgroup's origin) and k steps are 32 bytes along a row or 8 rows
    across them, so the swizzled offset of the sum is the sum of the offsets."""
    coords = (k, "0") if k_dim == 0 else ("0", k)
    return f"(({view.tile.offset(view.coords(*coords))}) * {view.tile.dtype.itemsize} / 16)"


def instruction_helper(shape) -> str:
    """C++ of `shape.helper`: D (m64 x N, N/2 registers per thread, fp32 or int32) += A * B, B from a descriptor
    and A from one too or (the register-A form) from 4 registers of packed fragments."""
    if shape.a_in_registers:
        return _register_a_helper(shape)
    regs = shape.n // 2
    d_list, out_lines = _accumulator_operands(regs, shape.acc_type)
    name = shape.helper.split("::")[1]
    t, acc_c = shape.ptx_type, ACC_C_TYPES[shape.acc_type]
    if shape.transposable:
        immediates, comment = f"1, 1, %{regs + 2}, %{regs + 3}", "TRANS_A / TRANS_B are 1 for an M-major A / N-major B"
    else:   # no transpose bits: the emitter hands only K-major tiles (static_assert below)
        immediates = "1, 1" if shape.scales else ""
        comment = f"{t} tiles must be K-major (no transpose bits)"
    tail = f"1, {immediates}" if immediates else "1"
    guard = "" if shape.transposable else \
        "  static_assert(TRANS_A == 0 && TRANS_B == 0, \"wgmma reads only K-major tiles of this type\");\n"
    return (f"""namespace tp {{
// D (64 x {shape.n}, {shape.acc_type}) += A (64 x {shape.k}) * B ({shape.k} x {shape.n}), both {t}, read from shared memory
// through descriptors; {comment}. Issued by all 128 threads of a warpgroup.
template <int TRANS_A, int TRANS_B>
__device__ __forceinline__ void {name}({acc_c}* d, unsigned long long a, unsigned long long b) {{
{guard}  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n{shape.n}k{shape.k}.{shape.acc_type}.{t}.{t} "
      "{{{d_list}}}, "
      "%{regs}, %{regs + 1}, {tail};"
      : {out_lines}
      : "l"(a), "l"(b), "n"(TRANS_A), "n"(TRANS_B));
}}
}}  // namespace tp""")


ACC_C_TYPES = {"f32": "float", "s32": "int"}


def _accumulator_operands(regs, acc_type="f32"):
    """(the PTX list of the accumulator registers %0..%regs-1, the C++ "+f" / "+r" operand list)."""
    rows = [", ".join(f"%{i}" for i in range(j, min(j + 16, regs))) for j in range(0, regs, 16)]
    letter = "f" if acc_type == "f32" else "r"
    outs = [f'"+{letter}"(d[{i}])' for i in range(regs)]
    return ',"\n      "'.join(rows), ",\n        ".join(", ".join(outs[i:i + 8]) for i in range(0, regs, 8))


def _register_a_helper(shape) -> str:
    regs = shape.n // 2
    d_list, out_lines = _accumulator_operands(regs)
    name = shape.helper.split("::")[1]
    t = shape.ptx_type
    a_list = ", ".join(f"%{regs + i}" for i in range(4))
    return (f"""namespace tp {{
// D (64 x {shape.n}, fp32) += A (64 x 16) * B (16 x {shape.n}): A from registers (this thread's 4 fragment
// registers, two {t} each, in the m16n8k16 A layout of its warp's 16 rows), B read from shared memory through
// a descriptor; TRANS_B is 1 for an N-major B. Issued by all 128 threads of a warpgroup.
template <int TRANS_B>
__device__ __forceinline__ void {name}(float* d, const unsigned* a, unsigned long long b) {{
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n{shape.n}k16.f32.{t}.{t} "
      "{{{d_list}}}, "
      "{{{a_list}}}, %{regs + 4}, 1, 1, 1, %{regs + 5};"
      : {out_lines}
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(TRANS_B));
}}
}}  // namespace tp""")


__all__ = ["Descriptor", "descriptor", "instruction_helper", "k_step_offset"]
