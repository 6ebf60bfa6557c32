"""What the transform refuses, located at the forward's Python line: in-place updates (a pointer both loaded
and stored), atomics other than add (and atomic adds whose old values are used), data-dependent `while`
loops, random numbers, batched (3-D) dots. Each is an UnsupportedSyntaxError "not supported yet" (Triton has no autodiff, so none of
these is "not Triton's language"); `tl.dot` in integer types is a DTypeError: integers have no derivative.
"""
from __future__ import annotations

import os

from ..errors import NOT_YET, DTypeError, UnsupportedSyntaxError
from ..parse.ir import OpKind, walk

_RANDOM_MODULE = os.path.join("language", "random.py")


def refuse(op, message, hint=None):
    """Refuse `op` as a derivative this transform does not derive yet."""
    raise UnsupportedSyntaxError(f"autodiff: {message}", op.loc if op is not None else None, hint=hint,
                                 refusal=NOT_YET)


def check(ir, roots_of_loads, roots_of_writes):
    """Raise for the first op the backward cannot be derived for. `roots_of_*`: the argument each load and
    each store/atomic goes through (op -> argument name or None)."""
    loaded = {r for r in roots_of_loads.values() if r}
    for op in walk(ir.body):
        loc_file = op.loc.file if op.loc else ""
        if loc_file.endswith(_RANDOM_MODULE):
            refuse(op, "random numbers (tl.rand, tl.randn, tl.randint) in a differentiated kernel",
                   hint="generate the random block in a separate kernel and pass it in")
        if op.name == OpKind.WHILE:
            refuse(op, "a data-dependent while loop cannot be differentiated yet",
                   hint="write it as a for loop over a bounded range")
        if op.name == OpKind.ATOMIC_CAS or (op.name == OpKind.ATOMIC_RMW and op.attrs.get("op") != "add"):
            refuse(op, f"tl.atomic_{op.attrs.get('op', 'cas')} has no derivative here; only tl.atomic_add "
                       "is differentiated")
        if op.name == OpKind.ATOMIC_RMW and _used(ir, op.result):
            refuse(op, "the old values of an atomic add cannot be differentiated")
        if op.name == OpKind.DOT and not op.operands[0].dtype.is_floating():
            raise DTypeError(f"autodiff: tl.dot in {op.operands[0].dtype!r} is not differentiable (integer types)",
                             op.loc)
        if op.name == OpKind.DOT and len(op.result.shape) == 3:
            refuse(op, "a batched (3-D) tl.dot cannot be differentiated yet",
                   hint="differentiate a kernel that loops over the batch with 2-D dots")
        if op in roots_of_writes and roots_of_writes[op] in loaded:
            refuse(op, f"an in-place update (loading and storing through {roots_of_writes[op]}) cannot be "
                       "differentiated yet",
                   hint="write the result to a separate output array")


def _used(ir, value):
    return any(value in op.operands for op in walk(ir.body))
