"""Dead-code removal on the kernel IR: side-effect-free ops whose results nothing reads are dropped.

Values are computed for nothing when a kernel evaluates an argument that no op keeps (`tl.assume(n > 0)`,
`tl.device_assert(x > 0)` outside debug mode) or computes a value it never uses; emitted, they become C++
variables that are set and never read (NVRTC warns). Only ops in `PURE` are removed; memory, control flow,
barriers, prints and anything unknown stay. Runs once on the built IR, before the analyses.
"""
from __future__ import annotations

from .ir import KernelIR, Region, walk

PURE = {"constant", "splat", "broadcast", "expand_dims", "reshape", "permute", "elementwise", "cast", "bitcast",
        "addptr", "arange", "program_id", "num_programs", "hint", "reduce"}


def remove_dead_ops(kernel: KernelIR) -> None:
    while True:
        used = {id(v) for op in walk(kernel.body) for v in op.operands}
        if not _sweep(kernel.body, used):
            return


def _sweep(region: Region, used: set) -> bool:
    removed = False
    kept = []
    for op in region.ops:
        for inner in op.regions:
            removed |= _sweep(inner, used)
        if op.name in PURE and op.results and not any(id(r) in used for r in op.results):
            removed = True
            continue
        kept.append(op)
    region.ops = kept
    return removed
