"""Dropping pure operations whose results nothing reads.

Inlined helpers compute more than their callers keep: `r, _, _, _ = tl.randint4x(seed, offs)` discards three
of Philox's four words. Blocks are emitted where they are first needed, so unread ones never appear in the
CUDA, but scalars are emitted in program order and would leave statements nobody reads. This pass removes
every op in `PURE_OPS` none of whose results has a user. One walk backwards through the kernel suffices:
structured regions keep every user after its operands' definitions, so an op is visited only after all its
users, and removing it already frees its operands when their turn comes. An if's results nobody reads are
dropped with the values its branches yield for them (before its branches are swept, so those go too), and an
if left with nothing in either branch goes. A load nobody reads goes too (Triton
drops it as well; it only reads memory), unless it is volatile; reductions and scans are pure; inline assembly
is pure only when the kernel says `is_pure=True`. Ops with
effects (stores, atomics, prints, barriers, control flow) and ops not listed here always stay.
"""
from __future__ import annotations

from collections import Counter

from .ir import KernelIR, OpKind, Region, walk

PURE_OPS = frozenset({"constant", "program_id", "num_programs", "arange", "splat", "broadcast", "expand_dims",
                      "permute", "reshape", "hint", "elementwise", "cast", "bitcast", "addptr", "reduce",
                      "scan"})


def _removable(op) -> bool:
    if op.attrs.get("is_pure") is False:      # tl.inline_asm_elementwise(..., is_pure=False) has effects
        return False
    return op.name in PURE_OPS or (op.name == OpKind.LOAD and not op.attrs.get("volatile"))


def remove_dead_code(kernel: KernelIR) -> None:
    """Remove, in place, the pure ops of `kernel` whose results are never used."""
    uses = Counter(operand for op in walk(kernel.body) for operand in op.operands)
    _sweep(kernel.body, uses)


def _sweep(region: Region, uses: Counter) -> None:
    kept = []
    for op in reversed(region.ops):
        if op.name == OpKind.IF:
            _drop_unread_results(op, uses)
        for inner in reversed(op.regions):
            _sweep(inner, uses)
        if op.name == OpKind.IF and not op.results and all(len(r.ops) == 1 for r in op.regions):
            uses[op.operands[0]] -= 1         # nothing left in either branch but its (empty) yield
            continue
        if _removable(op) and not any(uses[r] for r in op.results):
            for operand in op.operands:
                uses[operand] -= 1
            continue
        kept.append(op)
    region.ops = kept[::-1]


def _drop_unread_results(op, uses: Counter) -> None:
    """An if's results that nothing reads, with the values its branches yield for them: a variable assigned in
    a branch and never read after the if (attention's `k_ptrs += ...` before its last loop) would otherwise be
    computed in both branches, in the layout the merge gives it."""
    keep = [i for i, r in enumerate(op.results) if uses[r]]
    if len(keep) == len(op.results):
        return
    for region in op.regions:
        yielded = region.ops[-1]
        for i, v in enumerate(yielded.operands):
            if i not in keep:
                uses[v] -= 1
        yielded.operands = [yielded.operands[i] for i in keep]
    op.results = [op.results[i] for i in keep]
