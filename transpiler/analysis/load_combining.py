"""Load combining: loads of neighbouring fields of the same records become one wide access per record.

Decides, from the ops of each region and the axis information, which loads read `n` consecutive fields of
one record (`tl.load(P + 4 * i + 0)`, `+ 1`, `+ 2`, `+ 3`, as in a GIoU loss over [n, 4] boxes): their
pointers are one base block plus the constants 0..n-1, their masks are the same value, they sit in the same
region with the first field loaded first, n fields fit in 16 bytes, and the base is aligned to n fields.
Each such group is read with one n-field vector load per record; every original load takes its own field
(with its own `other` where the mask is off). Triton issues the n strided loads separately.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..parse.ir import OpKind, walk
from .layout_assignment import coalesced_order


@dataclass(frozen=True)
class CombinedLoad:
    loads: tuple          # the original loads, field 0 first
    fields: int           # n

    @property
    def leader(self):
        return self.loads[0]


class _Keys:
    """Structural keys of values: two pointer blocks computed by the same ops from the same inputs (Python
    evaluates `P + 4 * box` anew on every line) get the same key."""

    def __init__(self, kernel):
        self.cache = {}
        self.args = {a.value: i for i, a in enumerate(kernel.args)}

    def __call__(self, v):
        if v in self.cache:
            return self.cache[v]
        owner = v.owner
        if v in self.args:
            key = ("arg", self.args[v])
        elif (owner is None or not hasattr(owner, "operands") or owner.regions
              or owner.name in (OpKind.LOAD, OpKind.DOT)):
            key = ("value", id(v))       # region arguments, loaded data: only themselves
        else:
            attrs = tuple(sorted((k, repr(x)) for k, x in owner.attrs.items() if not k.startswith("_")))
            key = (owner.name, attrs, str(v.type), tuple(self(o) for o in owner.operands),
                   owner.results.index(v))
        self.cache[v] = key
        return key


def _constant_int(v):
    """The integer a (splatted) constant holds, else None."""
    op = v.owner
    while op is not None and getattr(op, "name", None) == OpKind.SPLAT:
        op = op.operands[0].owner
    if getattr(op, "name", None) == OpKind.CONSTANT and isinstance(op.attrs.get("value"), int):
        return op.attrs["value"]
    return None


def _field(load, keys):
    """(base key, field offset) of a load's pointer: base + constant, or (pointer, 0)."""
    ptr = load.operands[0]
    op = ptr.owner
    if getattr(op, "name", None) == OpKind.ADDPTR:
        k = _constant_int(op.operands[1])
        if k is not None:
            return keys(op.operands[0]), k, op.operands[0]
    return keys(ptr), 0, ptr


def combine_loads(kernel, axis, layouts, vector_width, decisions):
    keys = _Keys(kernel)
    combined = {}
    regions = [kernel.body] + [r for op in walk(kernel.body) for r in op.regions]
    for region in regions:
        groups = {}
        for index, op in enumerate(region.ops):
            if (op.name != OpKind.LOAD or not op.result.shape or op.attrs.get("volatile")
                    or vector_width.get(op, 1) != 1):
                continue
            base_key, k, _ = _field(op, keys)
            mask_key = keys(op.operands[1]) if len(op.operands) > 1 else None
            group_key = (base_key, mask_key, op.attrs.get("cache"), op.attrs.get("eviction"), str(op.result.type))
            groups.setdefault(group_key, []).append((index, k, op))
        for members in groups.values():
            group = _valid_group(members, region, axis, layouts)
            if group is None:
                continue
            for op in group.loads:
                combined[op] = group
            lines = sorted({op.loc.line for op in group.loads if op.loc})
            elem = group.leader.result.dtype.itemsize
            decisions.add("load_combining", group.leader,
                          f"{group.fields} loads of neighbouring fields (lines {', '.join(map(str, lines))}) read "
                          f"as one {group.fields * elem}-byte access per element",
                          "their pointers are one base plus 0.." f"{group.fields - 1}, with one mask, and the base is "
                          f"aligned to {group.fields * elem} bytes")
    return combined


def _valid_group(members, region, axis, layouts):
    n = len(members)
    members.sort(key=lambda m: m[1])
    if n not in (2, 4, 8) or [k for _, k, _ in members] != list(range(n)):
        return None
    first_index = min(i for i, _, _ in members)
    leader_index, _, leader = members[0]
    if leader_index != first_index:
        return None                       # field 0 must come first: its pointer is the base of the access
    elem = leader.result.dtype.itemsize
    if n * elem > 16:
        return None
    layout = layouts.mem_layout.get(leader)
    if any(layouts.mem_layout.get(op) != layout for _, _, op in members):
        return None
    ptr = leader.operands[0]
    info = axis[ptr]
    fastest = coalesced_order(info, len(ptr.shape))[0]
    if info.divisibility[fastest] < n * elem:
        return None
    # Every field's `other` must exist where the combined access is made (constants are computed there).
    defined_later = {id(op) for op in region.ops[first_index:]}
    for _, _, op in members[1:]:
        for o in op.operands[2:]:
            if o.owner is not None and id(o.owner) in defined_later and o not in layouts.flexible:
                return None
    return CombinedLoad(tuple(op for _, _, op in members), n)


__all__ = ["CombinedLoad", "combine_loads"]
