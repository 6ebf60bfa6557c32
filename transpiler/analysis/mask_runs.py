"""Masks that are a prefix of every run: where one lane tells whether a vector access is whole.

Decides, for each block load and store whose mask is not uniform over its runs (vectorize.py), whether the mask
is provably a prefix of each run (true on its first lanes, false on the rest), from the mask's producers and
their axis information: an integer compare `a < b` or `a <= b` (also written `b > a`, `b >= a`) whose `a` is
contiguous along the access's fastest dimension over a run and whose `b` is constant over it (the usual
`cols < n_cols`), a broadcast of such a mask along another dimension, and `&` of such masks and of masks
uniform over the run. Then a run is whole exactly when its last lane is in the mask, and the emitter tests that
lane only (rules/memory.py `whole_run`) instead of every lane: a ragged row's flags need not all live from the
load to the store. On by default since the H200 A/B of 2026-12-02 (softmax fp16 with 4093-column rows: 0.75 -> 0.85
of the copy ceiling, fp32 unchanged; bench/NOTES.md, issue 18 session 10); `TRANSPILER_PREFIX_MASK=0` turns it off.
"""
from __future__ import annotations

from ..parse.ir import Op, OpKind
from ..targets import switch
from .layout_assignment import coalesced_order

_COMPARES = {"lt": False, "le": False, "gt": True, "ge": True}   # fn -> operands swapped to read as a < b
_CONJUNCTIONS = ("and_", "and")
_MAX_DEPTH = 16


def prefix_masks(layouts, axis, widths, uniform, decisions) -> set:
    """The accesses (load and store ops) whose mask is a prefix of each of their runs."""
    found = set()
    if not switch("TRANSPILER_PREFIX_MASK"):
        return found
    for op in layouts.mem_layout:
        mask_index = 2 if op.name == OpKind.STORE else 1
        vec = widths.get(op, 1)
        if len(op.operands) <= mask_index or vec <= 1 or uniform.get(op, False):
            continue
        ptr = op.operands[0]
        dim = coalesced_order(axis[ptr], len(ptr.shape))[0]
        if _is_prefix(op.operands[mask_index], dim, vec, axis, 0):
            found.add(op)
            decisions.add("mask_runs", op, f"{op.name}: mask a prefix of each run of {vec}: its last lane decides "
                          "whether the run is whole", f"an integer compare contiguous against constant along "
                          f"dim {dim} (analysis/mask_runs.py)")
    return found


def _uniform(v, dim, vec, axis) -> bool:
    return axis[v].constancy[dim] >= vec            # unknown values: constancy 1 (axis_info.py)


def _integer(v, dim) -> bool:
    return v.dtype.is_int() and not v.dtype.is_bool() and len(v.shape) > dim


def _contiguous_int(v, dim, vec, axis) -> bool:
    return _integer(v, dim) and axis[v].contiguity[dim] >= vec


def _constant_int(v, dim, vec, axis) -> bool:
    return _integer(v, dim) and axis[v].constancy[dim] >= vec


def _is_prefix(v, dim, vec, axis, depth) -> bool:
    if depth > _MAX_DEPTH or len(v.shape) <= dim:
        return False
    if _uniform(v, dim, vec, axis):
        return True                      # all lanes alike: the run is whole or empty
    op = v.owner
    if not isinstance(op, Op):
        return False
    if op.name == OpKind.ELEMENTWISE:
        fn = op.attrs.get("fn")
        if fn in _COMPARES and len(op.operands) == 2:
            a, b = op.operands[::-1] if _COMPARES[fn] else op.operands
            return _contiguous_int(a, dim, vec, axis) and _constant_int(b, dim, vec, axis)
        if fn in _CONJUNCTIONS:
            return all(_is_prefix(o, dim, vec, axis, depth + 1) for o in op.operands)
        return False
    if op.name == OpKind.BROADCAST:
        src = op.operands[0]
        if len(src.shape) == len(v.shape) and src.shape[dim] == v.shape[dim]:
            return _is_prefix(src, dim, vec, axis, depth + 1)
    return False
