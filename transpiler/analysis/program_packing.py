"""Program packing: whether a thread block holds several of the user's programs, one warp each.

A program that owns one short row (softmax or layernorm over 512-1024 columns, an argmax of 1024) spread over
`num_warps` warps has a few bytes per thread in flight, crosses warps twice per reduction (shared memory and a
block barrier each time), and a grid of one block per row runs in several waves whose launch and tail cost more
than the row's bytes. Run at one warp, the same program holds its row in 2-4 wide accesses per thread, reduces
with shuffles only, and `num_warps` programs share one block, so the grid is `num_warps` times shorter.

Decides, from the kernel IR and `num_warps`: whether to pack (`num_warps` > 1; a reduction or scan and no runtime
loop of the program's own (a row longer than its block); no atomics, `tl.dot`, barrier, print or assert, which
see or order the whole block; its reductions' and scans' operands at most 64 elements a thread at one warp
together; the program's block loads together at most `TRANSPILER_PACK_ROW_BYTES` bytes, 2 KiB
by default (64 bytes a thread of one warp); and, at one warp, no value that would be converted between layouts
or reduced across warps: every block value and memory access of the program holds one layout and the
shared-memory plan is empty, so no program ever waits for another one of its block). Packed, program
`blockIdx.x * num_warps + warp` runs in warp `warp` of its block; the row loop pass (`row_loop.py`) gives the
program its row through its loop over the user's grid (the blocks past the grid's last program run no
iteration), so `tl.program_id(0)` and `tl.num_programs(0)` keep the user's values. The plan (`PackingPlan`)
is kept on the kernel and read by the emitter (the program id, the first thread of a program) and the runtime
(the grid: `ceil(grid x / num_warps)` blocks).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..parse.ir import LOOPS, OpKind
from ..targets import switch, switch_value
from .axis_info import AxisInfoAnalysis
from .decisions import DecisionLog

# Ops that see or order the whole thread block (or the grid): a program of one warp sharing its block with
# others would change what they mean.
_WHOLE_BLOCK = {OpKind.ATOMIC_RMW: "atomics (programs may depend on each other)",
                OpKind.ATOMIC_CAS: "atomics (programs may depend on each other)",
                OpKind.DOT: "tl.dot (its warps share tiles)",
                OpKind.GATHER: "tl.gather (its source goes through the block's shared memory)",
                OpKind.BARRIER: "tl.debug_barrier (a barrier of the whole block)",
                OpKind.DEVICE_PRINT: "tl.device_print (it prints the block's id)",
                OpKind.DEVICE_ASSERT: "tl.device_assert (it reports the block's id)"}
PROGRAM_WARPS = 1
# Each reduction or scan keeps its operands' elements live in the warp's registers until it is done: summed over
# the program's reductions (elements a thread at one warp, per operand), at most this many. A softmax or an
# argmax of 1024 columns is 64; the four reductions (sum, max, min, argmax) of a 1024-element int16 row, 160,
# spilled on sm_80.
REDUCED_REGISTERS = 64


def row_bytes_limit() -> int:
    return switch_value("TRANSPILER_PACK_ROW_BYTES")


@dataclass(frozen=True)
class PackingPlan:
    programs_per_block: int     # programs of the user's grid x in one thread block, one warp each
    why: str

    @property
    def program_warps(self) -> int:
        return PROGRAM_WARPS


def _structure_refusal(kernel, num_warps):
    """Why the kernel's ops rule packing out, or None."""
    if not switch("TRANSPILER_PACK_PROGRAMS"):
        return "turned off (TRANSPILER_PACK_PROGRAMS=0)"
    if num_warps <= PROGRAM_WARPS:
        return f"num_warps = {num_warps}: a program already has one warp"
    ops = list(kernel.walk())
    for op in ops:
        if op.name in _WHOLE_BLOCK:
            return f"not packed: {_WHOLE_BLOCK[op.name]}"
    if any(op.name in LOOPS for op in ops):
        return "not packed: the program has a runtime loop of its own (a row longer than its block)"
    if not any(op.name in (OpKind.REDUCE, OpKind.SCAN) for op in ops):
        return "not packed: no reduction or scan (a program without one crosses no warps already)"
    limit = row_bytes_limit()
    loaded = sum(op.result.type.numel * op.result.dtype.itemsize for op in ops
                 if op.name == OpKind.LOAD and op.result.shape)
    if loaded > limit:
        # One warp holds all of it: 2 KiB is 64 bytes a thread (measured: a layernorm's three rows of 2 KiB ran 6%
        # slower packed, its registers halving the blocks per SM; bench/NOTES.md).
        return (f"not packed: its loads hold {loaded} bytes a program (at most {limit} bytes are packed, "
                f"TRANSPILER_PACK_ROW_BYTES)")
    reduced = sum(v.type.numel // 32 for op in ops if op.name in (OpKind.REDUCE, OpKind.SCAN) for v in op.operands)
    if reduced > REDUCED_REGISTERS:
        return (f"not packed: its reductions would hold {reduced} elements a thread at one warp (at most "
                f"{REDUCED_REGISTERS}: more spilled)")
    return None


def _cooperation_at_one_warp(kernel):
    """Why a program of one warp would still need its block (a layout conversion or shared memory), or None.
    Every fixed block value, memory access and reduction input in one layout means the emitter converts nothing
    (a flexible value is computed in the layout its user wants); the shared-memory plan covers the rest."""
    from .layout_assignment import LayoutAssignment     # here: layouts import this module's neighbours
    from .shared_memory import plan_shared_memory
    layouts = LayoutAssignment(kernel, AxisInfoAnalysis(kernel), DecisionLog(), PROGRAM_WARPS)
    held = set(layouts.layout.values()) | set(layouts.mem_layout.values()) | set(layouts.reduce_input.values())
    held |= set(layouts.gather_source.values())
    for plan in layouts.scan_plan.values():
        held.add(plan.layout)
    if len(held) > 1:
        return (f"not packed: at one warp its values hold {len(held)} layouts (a conversion between them goes "
                "through shared memory, which the block's programs would have to share)")
    if plan_shared_memory(kernel, layouts, {}, False).total_bytes():
        return "not packed: at one warp it still needs shared memory"
    return None


def plan_packing(kernel, decisions, num_warps):
    """Decide (once per kernel: the plan is kept as `kernel.packing`) and record why. Returns the plan or None."""
    if hasattr(kernel, "packing"):
        return kernel.packing
    why_not = _structure_refusal(kernel, num_warps) or _cooperation_at_one_warp(kernel)
    first = next((op for op in kernel.body.ops if op.loc), None)
    kernel.packing = None if why_not else PackingPlan(
        num_warps, f"a reduction, nothing that sees the whole block, at most {row_bytes_limit()} bytes loaded, "
                   "and at one warp one layout and no shared memory")
    if why_not:
        decisions.add("packing", first, f"one program per block of {num_warps} warps", why_not)
    else:
        decisions.add("packing", first, f"{num_warps} programs per block, one warp each (grid x / {num_warps} "
                      "blocks)", kernel.packing.why)
    return kernel.packing
