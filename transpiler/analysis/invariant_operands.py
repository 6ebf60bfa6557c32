"""Which `tl.dot` operands inside a loop are defined before it: the loop-invariant operands.

Such an operand (the query block of an attention kernel, loaded once and multiplied with every key block) would
otherwise stay in registers through the whole loop and be written to scratch shared memory on every iteration.
Written once to a shared-memory tile of its own before the loop, its registers are free inside it (fewer
spills: Triton keeps such operands in shared memory too) and the loop does less work.

Decided from the IR: per loop, each block operand of a dot anywhere in its body (nested loops and branches
included) whose value is not computed inside the loop, with the role it plays (A, K along columns; B, K along
rows). An operand used as A by one dot and as B by another is left alone.

For an `if` holding such loops, the operands they share that are defined before the `if` are written before it
(`operands_of_inner_loops`): otherwise each loop wrote its own copy, and the value stayed in registers from its
definition through the first loop to the second one's write (attention's Q: 64 registers through the full-block
loop, a 384-byte stack frame).
"""
from __future__ import annotations

from ..parse.ir import OpKind, walk


def invariant_dot_operands(loop) -> list:
    """[(value, k_dim)] for the loop-invariant dot operands of `loop` (a `for` or `while` op), in program order."""
    inside = set()
    for region in loop.regions:
        inside.update(region.args)
        for op in walk(region):
            inside.update(op.results)
    roles = {}
    for region in loop.regions:
        for op in walk(region):
            if op.name != OpKind.DOT or len(op.result.shape) != 2:   # a batched dot writes its own tiles
                continue
            for value, k_dim in ((op.operands[0], 1), (op.operands[1], 0)):
                if value.shape and value not in inside:
                    roles.setdefault(value, set()).add(k_dim)
    return [(value, next(iter(dims))) for value, dims in roles.items() if len(dims) == 1]


def operands_of_inner_loops(op) -> list:
    """[(value, k_dim)] of the loop-invariant dot operands of the loops nested in `op` (an `if`) that are defined
    before `op`, in the same role in every such loop, in program order."""
    nested = {}
    for region in op.regions:
        for inner in walk(region):
            if inner.name in (OpKind.FOR, OpKind.WHILE):
                for value, k_dim in invariant_dot_operands(inner):
                    nested.setdefault(value, set()).add(k_dim)
    return [(value, k_dim) for value, k_dim in invariant_dot_operands(op) if nested.get(value) == {k_dim}]
