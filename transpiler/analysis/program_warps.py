"""Program warps: how many warps run one program of a row kernel, when fewer than the launch's `num_warps` hold
its row in fewer instructions per byte.

A program that reduces a row spreads it over `num_warps` warps. Each thread's share of the row costs a fixed
number of instructions whatever its size (the warp's shuffles and the cross-warp combine of every reduction, the
row's addressing, its masks) besides those per element, so the fewer bytes a thread holds, the more instructions
the SM issues per byte moved. Measured on the H200 (bench/NOTES.md, issue 18, session 8): a softmax over 4096
fp16 columns at 16 warps (16 bytes a thread) issues 211 instructions a thread per row, 6.6 per byte, and stays at
0.77 of the copy ceiling however many rows are in flight (a ring three rows ahead moved nothing); the same row in
fp32 (32 bytes a thread, the same instructions) reaches 0.91. Run at 8 warps, the fp16 row is 32 bytes a thread
for 4.6 instructions per byte.

Decides, from the kernel IR and `num_warps`: a program's warps, halving `num_warps` while the widest block load
of the program gives a thread fewer than `thread_bytes()` bytes and at least `MIN_WARPS` warps remain; only for a
kernel with a reduction or scan (what the per-thread fixed cost is) and nothing whose meaning depends on the
block's threads (atomics, `tl.dot`, barriers, prints, asserts, inline assembly); not for packed programs (one
warp each already, `program_packing.py`, decided first). Results are those of a launch with that `num_warps`,
which Triton's semantics leave to the launch (the order of a reduction's combines is not specified). The variant
records the warps it was built for, and the runtime launches its blocks with that many threads
(`runtime/kernel.py`). `TRANSPILER_PROGRAM_WARPS`: the bytes a thread (32; 0: off).
"""
from __future__ import annotations

from ..parse.ir import LOOPS, OpKind
from ..targets import switch_value

# Ops whose meaning or cost depends on the block's threads, or that plan their own warps.
_BLOCK_BOUND = {OpKind.ATOMIC_RMW: "atomics", OpKind.ATOMIC_CAS: "atomics", OpKind.DOT: "tl.dot",
                OpKind.BARRIER: "tl.debug_barrier", OpKind.DEVICE_PRINT: "tl.device_print",
                OpKind.DEVICE_ASSERT: "tl.device_assert"}
MIN_WARPS = 4


def thread_bytes() -> int:
    """Bytes a thread of the widest row load below which a program runs on fewer warps: two 16-byte accesses by
    default (`TRANSPILER_PROGRAM_WARPS`; 0: a program runs on the launch's num_warps always)."""
    return switch_value("TRANSPILER_PROGRAM_WARPS")


def _refusal(kernel):
    ops = list(kernel.walk())
    for op in ops:
        if op.name in _BLOCK_BOUND:
            return f"{_BLOCK_BOUND[op.name]} (depends on the block's threads)"
        if op.name == OpKind.ELEMENTWISE and op.attrs.get("fn") == "inline_asm":
            return "inline assembly (it may read the thread's index)"
    if any(op.name in LOOPS for op in ops):
        return "a runtime loop of its own (a row longer than its block)"
    return None


def plan_program_warps(kernel, decisions, num_warps: int, packed: bool = False) -> int:
    """The warps one program runs on (`num_warps` or fewer); records why in the decision log. Decided once per
    kernel IR (kept as `kernel.program_warps`: the row loop's rewrite, after it, adds a loop this rule refuses)."""
    if not hasattr(kernel, "program_warps"):
        kernel.program_warps = _decide(kernel, decisions, num_warps, packed)
    return kernel.program_warps


def _decide(kernel, decisions, num_warps, packed):
    first = next((op for op in kernel.body.ops if op.loc), None)
    if packed or num_warps <= MIN_WARPS or not any(op.name in (OpKind.REDUCE, OpKind.SCAN) for op in kernel.walk()):
        return num_warps        # nothing to decide: no per-thread reduction cost, or few warps already
    target = thread_bytes()
    if not target:
        decisions.add("program_warps", first, f"{num_warps} warps a program", "turned off (TRANSPILER_PROGRAM_WARPS=0)")
        return num_warps
    why_not = _refusal(kernel)
    if why_not:
        decisions.add("program_warps", first, f"{num_warps} warps a program", f"as launched: {why_not}")
        return num_warps
    widest = max((op.result.type.numel * op.result.dtype.itemsize for op in kernel.walk()
                  if op.name == OpKind.LOAD and op.result.shape and not op.result.dtype.is_ptr()), default=0)
    warps = num_warps
    while warps > MIN_WARPS and widest < target * 32 * warps:
        warps //= 2
    if warps == num_warps:
        decisions.add("program_warps", first, f"{num_warps} warps a program",
                      f"as launched: its widest load gives a thread {widest // (32 * num_warps)} bytes (at least "
                      f"{target}, TRANSPILER_PROGRAM_WARPS)")
        return num_warps
    decisions.add("program_warps", first, f"{warps} warps a program (num_warps = {num_warps} launched as {warps})",
                  f"its widest load ({widest} bytes) gives a thread {widest // (32 * warps)} bytes at {warps} warps, "
                  f"{widest // (32 * num_warps)} at {num_warps}: fewer instructions per byte (a reduction's shuffles "
                  "and cross-warp combine are per thread)")
    return warps
