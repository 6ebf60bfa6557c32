"""C names for values the Python code leaves unnamed, from the role they play rather than the op that made them:
a pointer computed from the argument `IN` is `in_ptr` (a block of them `in_ptrs`), the offset added to it
`in_offset` (`in_offsets`), a value computed only to be stored through `OUT` `out_values`. Values with a Python name keep it; the others keep their op's stem (names.py makes
every name unique)."""
from __future__ import annotations

from ..parse.ir import OpKind

# Through these a pointer is still the argument's pointer (moved, spread over a block).
_POINTER_PATH = (OpKind.ADDPTR, OpKind.SPLAT, OpKind.BROADCAST, OpKind.EXPAND_DIMS, OpKind.RESHAPE,
                 OpKind.PERMUTE, OpKind.HINT)


class Roles:
    def __init__(self, kernel):
        self.args = {a.value: a.name for a in kernel.args}
        self.users: dict = {}
        for op in kernel.walk():
            for v in op.operands:
                self.users.setdefault(v, []).append(op)

    def root_argument(self, v):
        """The name of the pointer argument `v` is computed from, or None."""
        seen = 0
        while v not in self.args:
            op = v.owner
            if op is None or not hasattr(op, "name") or op.name not in _POINTER_PATH or not op.operands or seen > 64:
                return None
            v, seen = op.operands[0], seen + 1
        return self.args[v]

    def name(self, v):
        """A role name for the unnamed value `v`, or None when it has no role worth a name."""
        op = v.owner
        if op is None or not hasattr(op, "name"):
            return None
        plural = "s" if v.shape else ""
        if op.name == OpKind.ADDPTR:
            root = self.root_argument(v)
            return f"{_stem(root)}_ptr{plural}" if root else None
        users = self.users.get(v, [])
        if len(users) == 1 and users[0].name == OpKind.ADDPTR and users[0].operands[1] is v:
            root = self.root_argument(users[0].operands[0])
            return f"{_stem(root)}_offset{plural}" if root else None
        if len(users) == 1 and users[0].name == OpKind.STORE and users[0].operands[1] is v:
            root = self.root_argument(users[0].operands[0])     # `tl.store(OUT + offs, e / s)`: out_values
            return f"{_stem(root)}_value{plural}" if root else None
        return None


def _stem(arg_name: str) -> str:
    """`IN` -> `in`, `a_ptr` -> `a`, `X_ptrs` -> `x`: the argument's name without a pointer suffix."""
    stem = arg_name.lower()
    for suffix in ("_ptrs", "_ptr", "ptr"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)].rstrip("_") or stem
    return stem


__all__ = ["Roles"]
