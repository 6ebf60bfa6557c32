"""Which `tl.dot` operands inside a loop are defined before it: the loop-invariant operands.

Such an operand (the query block of an attention kernel, loaded once and multiplied with every key block) would
otherwise stay in registers through the whole loop and be written to scratch shared memory on every iteration.
Written once to a shared-memory tile of its own before the loop, its registers are free inside it (fewer
spills: Triton keeps such operands in shared memory too) and the loop does less work.

Decided from the IR: per loop, each block operand of a dot anywhere in its body (nested loops and branches
included) whose value is not computed inside the loop, with the role it plays (A, K along columns; B, K along
rows). An operand used as A by one dot and as B by another is left alone.
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
            if op.name != OpKind.DOT:
                continue
            for value, k_dim in ((op.operands[0], 1), (op.operands[1], 0)):
                if value.shape and value not in inside:
                    roles.setdefault(value, set()).add(k_dim)
    return [(value, next(iter(dims))) for value, dims in roles.items() if len(dims) == 1]
