"""Read-only pointers: which pointer arguments no store or atomic writes through, and which pointer values
derive only from those (the emitter declares them `const T* __restrict__`, which lets the C compiler read through
the read-only data path).

Decided from the IR alone: each store's and atomic's pointer operand is followed back through the ops that made
it to the arguments it can come from; a pointer carried through a loop or an `if` whose source cannot be
followed counts every argument as written (conservative). A loop-carried pointer is read-only when its initial
value is; an `if` result when every branch yields a read-only one.
"""
from __future__ import annotations

from dataclasses import dataclass


_WRITES_MEMORY = ("store", "atomic_rmw", "atomic_cas")


def written_pointer_args(kernel):
    """Names of pointer arguments some store or atomic writes through (the rest become `const T*`)."""
    roots = {a.value: a.name for a in kernel.args}
    written = set()
    for op in kernel.walk():
        if op.name not in _WRITES_MEMORY:
            continue
        stack = [op.operands[0]]
        seen = set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in roots:
                written.add(roots[v])
                continue
            owner = v.owner
            if owner is None or not hasattr(owner, "operands"):
                written.update(roots.values())  # a pointer carried through control flow: be conservative
                continue
            stack.extend(o for o in owner.operands if o.dtype.is_ptr())
    return written


def const_pointer_values(kernel, written):
    """Pointer values whose every root argument is read-only (so their C type is `const T*`). A loop-carried
    pointer is read-only when its initial value is."""
    const = {a.value for a in kernel.args if a.value.dtype.is_ptr() and a.name not in written}

    def visit(region):
        for op in region.ops:
            if op.name in ("for", "while"):
                inits = op.operands[3:] if op.name == "for" else op.operands
                for reg in op.regions:
                    carried = reg.args[-len(inits):] if inits else []
                    const.update(a for a, init in zip(carried, inits) if init in const)
                const.update(r for r, init in zip(op.results, inits) if init in const)
                for reg in op.regions:
                    visit(reg)
                continue
            for reg in op.regions:
                visit(reg)
            if op.name == "if":
                const.update(r for i, r in enumerate(op.results)
                             if all(reg.ops[-1].operands[i] in const for reg in op.regions))
                continue
            for r in op.results:
                ptr_operands = [o for o in op.operands if o.dtype.is_ptr()]
                if r.dtype.is_ptr() and ptr_operands and all(o in const for o in ptr_operands):
                    const.add(r)
    visit(kernel.body)
    return const


@dataclass(frozen=True)
class ReadOnlyPointers:
    written_args: frozenset     # names of the pointer arguments written through
    const_values: frozenset     # pointer values whose every root argument is read-only


def plan_read_only(kernel) -> ReadOnlyPointers:
    written = written_pointer_args(kernel)
    return ReadOnlyPointers(frozenset(written), frozenset(const_pointer_values(kernel, written)))


__all__ = ["ReadOnlyPointers", "plan_read_only", "written_pointer_args", "const_pointer_values"]
