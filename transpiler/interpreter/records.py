"""Block pointers and tensor descriptors while interpreting: the typing rules' records, with interpreter values.

`tl.make_block_ptr` and `tl.make_tensor_descriptor` are the compiler's rules (`parse/semantic_block_ptr.py`,
`semantic_tensor_desc.py`) run eagerly: they give a `Record` whose leaves (base pointer, shape, strides,
offsets) are evaluated values or Python numbers. Between calls the kernel holds it as a `RecordValue`, the same
record with the interpreter's values as leaves (`eager.to_ir` / `from_ir` convert the leaves), so `tl.advance`,
loads and stores through it are the record's own typing rules too. Its attributes are the compiler's
(`records.record_attribute`: `p.advance(...)`, `p.dtype`, `desc.load(...)`, a located error for the rest), and
an operator on it is refused by the operator rule, as compiled.
"""
from __future__ import annotations

import functools

from ..language import core
from ..parse.records import record_attribute
from .location import error

_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "lt", "le", "gt", "ge")


class RecordValue:
    """A block pointer (or, as `DescriptorValue`, a tensor descriptor) held by the interpreted kernel."""

    __slots__ = ("record",)

    def __init__(self, record):
        self.record = record

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return record_attribute(self.record, name, error,
                                lambda builtin: functools.partial(core.BUILTINS[builtin], self))

    def __repr__(self):
        return f"<{self.record}>"


def _operator(op, reflected):
    def apply(self, other):
        from .eager import binary
        return binary(op, other, self) if reflected else binary(op, self, other)
    return apply


for _op in _OPERATORS:
    setattr(RecordValue, f"__{_op}__", _operator(_op, False))
    if _op not in ("lt", "le", "gt", "ge"):
        setattr(RecordValue, f"__r{_op}__", _operator(_op, True))


def _unary(op):
    def apply(self):
        from .eager import unary
        return unary(op, self)
    return apply


RecordValue.__neg__, RecordValue.__invert__ = _unary("neg"), _unary("invert")


class DescriptorValue(RecordValue):
    __slots__ = ()


core.TENSOR_CLASSES.append(RecordValue)          # `isinstance(p, tl.tensor)`, as the compiler answers it
core.DESCRIPTOR_CLASSES.append(DescriptorValue)  # `isinstance(desc, tl.tensor_descriptor)`
