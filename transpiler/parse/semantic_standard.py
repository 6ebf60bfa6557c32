"""Typing of Triton's standard-library functions that are compositions of other builtins:
`tl.softmax`, `tl.ravel` and `tl.swizzle2d` (`transpiler/language/standard.py`).

Each rule calls the rules of the builtins it is made of, in the order Triton's own definitions use, so the
IR (and the generated CUDA) is what the user would get by writing the composition out. `tl.flip`, `tl.join`,
`tl.split`, `tl.interleave` and `tl.cat` have no rule: the compiler reports them as not supported yet.
"""
from __future__ import annotations

import builtins

from .semantic import RULES, binary_op, const_value, is_const, rule, to_value


@rule("softmax")
def _softmax(b, x, dim=None, keep_dims=False, ieee_rounding=False):
    dim = 0 if const_value(b, dim, "softmax's dim") is None else dim
    z = binary_op(b, "sub", x, RULES["max"](b, x, dim, keep_dims=keep_dims))
    num = RULES["exp"](b, z)
    den = RULES["sum"](b, num, dim, keep_dims=keep_dims)
    return RULES["fdiv"](b, num, den, ieee_rounding)


@rule("ravel")
def _ravel(b, x, can_reorder=False):
    v = to_value(b, x)
    numel = 1
    for s in v.shape:
        numel *= s
    return RULES["reshape"](b, v, numel, can_reorder=can_reorder)


@rule("swizzle2d")
def _swizzle2d(b, i, j, size_i, size_j, size_g):
    ij = binary_op(b, "add", binary_op(b, "mul", i, size_j), j)      # row-major linear index
    size_gj = binary_op(b, "mul", size_g, size_j)                     # elements in one group of size_g rows
    off_i = binary_op(b, "mul", binary_op(b, "floordiv", ij, size_gj), size_g)
    rows = binary_op(b, "sub", size_i, off_i)                         # the last group may have fewer rows
    if is_const(rows) and is_const(size_g):
        group_rows = builtins.min(rows, size_g)
    else:
        group_rows = RULES["minimum"](b, rows, size_g)
    ij = binary_op(b, "mod", ij, size_gj)
    return (binary_op(b, "add", off_i, binary_op(b, "mod", ij, group_rows)),
            binary_op(b, "floordiv", ij, group_rows))

