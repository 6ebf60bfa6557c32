"""The values a runtime `if` returns from its branches (`builder_statements._returning_if`): each branch's
returned value split into runtime leaves, which the `if` yields, and the nesting and compile-time leaves around
them, which must be the same on both paths and are rebuilt around the `if`'s results.
"""
from __future__ import annotations

from ..language.core import constexpr
from .ir import Value
from .records import Record


class ReturnedValues:
    """A value returned from a branch: its runtime leaves (values and numbers, yielded by the if) and the
    nesting around them (tuples; compile-time leaves such as dtypes must be equal on both paths)."""

    LEAF = "leaf"

    def __init__(self, value):
        self.leaves = []
        self.structure = self._flatten(value)

    def _flatten(self, value):
        if isinstance(value, constexpr):
            value = value.value
        if isinstance(value, (tuple, list)):
            return ("tuple",) + tuple(self._flatten(v) for v in value)
        if isinstance(value, (Value, Record, bool, int, float)):
            self.leaves.append(value)
            return self.LEAF
        return ("const", value)

    def rebuild(self, results):
        it = iter(results)

        def build(structure):
            if structure == self.LEAF:
                return next(it)
            if structure[0] == "const":
                return structure[1]
            return tuple(build(s) for s in structure[1:])
        return build(self.structure)
