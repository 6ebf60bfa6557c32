"""Streaming stores: which block stores write with the evict-first cache operator (`st.global.cs`), so the L2
does not keep lines that nothing reads again.

Decides, from the IR, under TRANSPILER_STREAM_STORES=1 (off by default: not measured yet): in a kernel with a
reduction or scan (a row kernel, which writes each output element once), every block store that has no cache
modifier or eviction policy of the user's, through a pointer argument no load of the kernel reads. The row
kernels' L2 ran at 75-77% of its throughput with 50% hits, the stores' write-allocated lines (ncu, issue 18,
session 7: bench/NOTES.md); whether evict-first stores move that is the experiment this switch is for. The
results are the same bits either way (a cache operator changes where lines live, not what is written).
"""
from __future__ import annotations

from ..parse.ir import OpKind
from ..targets import switch


def _roots(value, args):
    """The pointer arguments `value` may come from (None: a value whose source cannot be followed)."""
    out, stack, seen = set(), [value], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in args:
            out.add(args[v])
            continue
        owner = getattr(v, "owner", None)
        if owner is None or not hasattr(owner, "operands"):
            return None
        stack.extend(o for o in owner.operands if o.dtype.is_ptr())
    return out


def plan_streaming_stores(kernel, decisions) -> list:
    """Mark the stores chosen (their `cache` attribute becomes ".cs"); returns them."""
    if not switch("TRANSPILER_STREAM_STORES"):
        return []
    ops = list(kernel.walk())
    if not any(op.name in (OpKind.REDUCE, OpKind.SCAN) for op in ops):
        return []
    args = {a.value: a.name for a in kernel.args if a.value.dtype.is_ptr()}
    read = set()
    for op in ops:
        if op.name == OpKind.LOAD:
            roots = _roots(op.operands[0], args)
            read |= set(args.values()) if roots is None else roots
    chosen = []
    for op in ops:
        if op.name != OpKind.STORE or not op.operands[0].shape or op.attrs.get("cache") \
                or op.attrs.get("eviction"):
            continue
        roots = _roots(op.operands[0], args)
        if roots is None or roots & read:
            continue
        op.attrs["cache"] = ".cs"
        chosen.append(op)
        decisions.add("streaming_stores", op, "store with the evict-first cache operator (st.global.cs)",
                      f"{', '.join(sorted(roots))} written, never read by the kernel; TRANSPILER_STREAM_STORES=1")
    return chosen


__all__ = ["plan_streaming_stores"]
