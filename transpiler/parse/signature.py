"""What the IR builder is told about each kernel parameter for one specialization.

The runtime derives these from the launch arguments (`analysis/specialization.py` says how); the builder
turns them into typed IR arguments, and folds constexprs and integers equal to one into constants, as
Triton does.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import dtypes


@dataclass(frozen=True)
class ArgSpec:
    name: str
    dtype: dtypes.dtype | None = None   # None for constexprs
    constexpr: object = None            # the value, for constexpr parameters
    is_constexpr: bool = False
    divisibility: int = 1               # bytes of alignment for pointers; elements for integers
    equal_to_one: bool = False
    is_none: bool = False               # None was passed: the kernel sees None, C keeps the parameter slot
    path: tuple = ()                    # a leaf of tuple parameter `name`: its index path (runtime/tuple_args.py)
    descriptor: tuple = ()              # a leaf of a host tensor descriptor: (its path, block shape, padding)

    @property
    def c_name(self):
        """The C parameter's name: the parameter's, with a leaf's path (`T_0_1`)."""
        return self.name + "".join(f"_{i}" for i in self.path)

    def at_path(self, path, descriptor=()) -> "ArgSpec":
        if not path:
            return self
        return dataclasses.replace(self, path=tuple(path), descriptor=tuple(descriptor))

    def key(self):
        if self.is_constexpr:
            return ("c", self.c_name, _hashable(self.constexpr))
        return (self.c_name, self.dtype.name, self.divisibility, self.equal_to_one, self.is_none) + \
            ((self.descriptor,) if self.descriptor else ())


def _hashable(v):
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dtypes.dtype):
        return ("dtype", v.name)
    return (type(v).__name__, v)
