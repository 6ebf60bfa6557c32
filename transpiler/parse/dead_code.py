"""Dropping pure operations whose results nothing reads.

Inlined helpers compute more than their callers keep: `r, _, _, _ = tl.randint4x(seed, offs)` discards three
of Philox's four words. Blocks are emitted where they are first needed, so unread ones never appear in the
CUDA, but scalars are emitted in program order and would leave statements nobody reads. This pass removes
every op in `PURE_OPS` none of whose results has a user. One walk backwards through the kernel suffices:
structured regions keep every user after its operands' definitions, so an op is visited only after all its
users, and removing it already frees its operands when their turn comes. A load nobody reads goes too (Triton
drops it as well; it only reads memory), unless it is volatile; reductions and scans are pure; inline assembly
is pure only when the kernel says `is_pure=True`. Ops with
effects (stores, atomics, prints, barriers, control flow) and ops not listed here always stay, except that a
runtime `if` loses the results nothing reads (with the values its branches yield for them: Triton's
canonicalizer drops unused scf.if results too), so a value updated under `if` but read only inside it (a
decode kernel's running max and sum) leaves no variable behind; an `if` left with no results and empty branches
goes as a whole.
"""
from __future__ import annotations

from collections import Counter

from .ir import KernelIR, OpKind, Region, walk

PURE_OPS = frozenset({OpKind.CONSTANT, OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS, OpKind.ARANGE, OpKind.SPLAT,
                      OpKind.BROADCAST, OpKind.EXPAND_DIMS, OpKind.PERMUTE, OpKind.RESHAPE, OpKind.HINT,
                      OpKind.ELEMENTWISE, OpKind.CAST, OpKind.BITCAST, OpKind.ADDPTR, OpKind.REDUCE, OpKind.SCAN,
                      OpKind.GATHER})


def _removable(op) -> bool:
    if op.attrs.get("is_pure") is False:      # tl.inline_asm_elementwise(..., is_pure=False) has effects
        return False
    return op.name in PURE_OPS or (op.name == OpKind.LOAD and not op.attrs.get("volatile"))


def remove_dead_code(kernel: KernelIR) -> None:
    """Remove, in place, the pure ops of `kernel` whose results are never used."""
    uses = Counter(operand for op in walk(kernel.body) for operand in op.operands)
    _sweep(kernel.body, uses)


def _drop_unread_if_results(op, uses: Counter) -> None:
    """Remove the results of an `if` nobody reads, and what each branch's closing yield passes for them."""
    unread = [i for i, r in enumerate(op.results) if not uses[r]]
    if not unread:
        return
    for branch in op.regions:
        closing = branch.ops[-1] if branch.ops else None
        if closing is None or closing.name != OpKind.YIELD or len(closing.operands) != len(op.results):
            return           # not the shape every runtime if is built with: keep it as it is
    for branch in op.regions:
        closing = branch.ops[-1]
        for i in unread:
            uses[closing.operands[i]] -= 1
        closing.operands = [v for i, v in enumerate(closing.operands) if i not in unread]
    op.results = [r for i, r in enumerate(op.results) if i not in unread]


def _is_empty_if(op) -> bool:
    return (op.name == OpKind.IF and not op.results
            and all(all(inner.name == OpKind.YIELD and not inner.operands for inner in branch.ops)
                    for branch in op.regions))


def _sweep(region: Region, uses: Counter) -> None:
    kept = []
    for op in reversed(region.ops):
        if op.name == OpKind.IF:
            _drop_unread_if_results(op, uses)
        for inner in reversed(op.regions):
            _sweep(inner, uses)
        if (_removable(op) and not any(uses[r] for r in op.results)) or _is_empty_if(op):
            for operand in op.operands:
                uses[operand] -= 1
            continue
        kept.append(op)
    region.ops = kept[::-1]
