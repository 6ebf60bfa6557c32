"""Residency of warpgroup-MMA kernels: how many programs may share one SM, and the shared memory a launch
asks for so that no more do.

On sm_90a each program's warpgroups stream their own large wgmma products through the SM's tensor cores; once
two 128 x 128 products are resident, more programs add no tensor-core work, only L2 footprint (more tiles of A
and B live at once) and shared-memory traffic. Measured on the H200 (bench/NOTES.md, session 7, one run): the
bench matmul (128 x 128 accumulators, one warpgroup, 64 KiB of stages, 164 registers, so 3 programs per SM) ran
at 1.03 / 1.06 / 1.07x Triton at fp16 4096^3 / bf16 4096^3 / fp16 8192^3 held at 2 programs per SM, against
0.92 / 0.97 / 1.01x at 3 (Triton's 200 registers give it 2).

The rule: the resident programs' wgmma accumulators together hold at most `TILES_PER_SM` x 128 x 128 elements
(a program counts its largest dot once): a 128 x 128 product gives 2 programs per SM, 128 x 256 gives 1, 64 x 64
gives 8 (in practice no limit). Where the program's own shared memory already keeps the next program out,
nothing is reserved; else the launch's dynamic shared memory is raised to the smallest multiple of 1 KiB with
which one more program does not fit (Hopper: 228 KiB per SM, 1 KiB of each block's taken by the system), which
costs nothing the kernel uses. `TRANSPILER_WGMMA_TILES_PER_SM=0` leaves residency to registers and shared memory.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import targets

SM_SHARED_BYTES = 228 * 1024      # sm_90: shared memory per SM for programs (CUDA C++ Programming Guide)
BLOCK_RESERVED_BYTES = 1024       # per block, taken by the system from that budget
TILE = 128 * 128                  # accumulator elements of one product that keeps the tensor cores busy


@dataclass(frozen=True)
class ResidencyPlan:
    programs_per_sm: int          # at most this many programs share an SM
    launch_shared_bytes: int      # dynamic shared memory a launch asks for (>= what the kernel uses)
    used_shared_bytes: int        # what the kernel's buffers use
    why: str


def plan_residency(kernel, dots, shared_bytes, decisions):
    """The plan for a kernel with wgmma dots whose own `shared_bytes` let more programs share an SM than the
    rule allows, else None."""
    tiles = targets.switch_value("TRANSPILER_WGMMA_TILES_PER_SM")
    wgmma = [op for op, plan in dots.items() if plan.kind == "wgmma"]
    if not wgmma or tiles <= 0:
        return None
    largest = max(op.results[0].shape[-2] * op.results[0].shape[-1] for op in wgmma)
    cap = max(1, tiles * TILE // largest)
    per_block = shared_bytes + BLOCK_RESERVED_BYTES
    if per_block * (cap + 1) > SM_SHARED_BYTES:
        return None                  # the kernel's shared memory already keeps the next program out
    need = SM_SHARED_BYTES // (cap + 1) + 1 - BLOCK_RESERVED_BYTES     # (cap + 1) blocks of this overflow the SM
    reserve = -(-need // 1024) * 1024
    first = min(wgmma, key=lambda op: op.loc.line if op.loc else 0)
    why = (f"a {largest}-element wgmma accumulator per program, at most {tiles} x 128 x 128 resident per SM; "
           f"{shared_bytes} bytes of its own would let {SM_SHARED_BYTES // per_block} share an SM")
    decisions.add("residency", first, f"at most {cap} program(s) per SM: the launch asks for {reserve} bytes of "
                                      f"dynamic shared memory", why)
    return ResidencyPlan(cap, reserve, shared_bytes, why)
