"""Records: build-time values made of several IR values (a block pointer), and how control flow carries them.

A record is a static part (compile-time facts such as an element type and a block shape) plus *leaves*: IR
`Value`s or Python numbers. It never becomes an IR value itself. A builtin whose first argument is a record
is typed by the record's own rule (`Record.RULES`, looked up by the builder), and runtime `for`/`while`/`if`
carry a record leaf by leaf: `Slots` flattens the variables a loop or branch changes into one slot per plain
value and one per record leaf that changes, and rebuilds the variables from the slots' values. Leaves that
stay the same (a base pointer, a stride known to be 1) are not carried, so what is known about them at
compile time survives the loop.
"""
from __future__ import annotations

from typing import NamedTuple

from ..errors import NOT_YET, DTypeError, NameResolutionError, UnsupportedSyntaxError
from .ir import Type, Value


class Record:
    """Base of build-time records. Subclasses set the class attributes and define the five methods that raise
    NotImplementedError here."""

    KIND = "record"          # how messages name it
    RULES: dict = {}         # builtin name -> typing rule, for calls whose first argument is such a record
    METHODS: tuple = ()      # attributes that call the builtin of the same name: `p.advance(...)`
    ATTRIBUTES: tuple = ()   # attributes read as the record's own (compile-time) properties: `p.dtype`
    NOT_YET: tuple = ()      # Triton's methods of such a record that are not supported yet
    HINT = None              # what to do instead, when a builtin or an attribute does not take the record
    name = None              # the variable it was last assigned to

    def leaves(self) -> tuple:
        raise NotImplementedError

    def leaf_names(self) -> tuple:
        """A short name per leaf (`offset1`), for the variables of the generated code and for messages."""
        raise NotImplementedError

    def leaf_types(self) -> tuple:
        """Per leaf, the IR type a Python-number leaf takes when control flow must carry it."""
        raise NotImplementedError

    def with_leaves(self, leaves) -> "Record":
        raise NotImplementedError

    def structure(self):
        """The static part, comparable with `==`: two records of one variable must agree on it."""
        raise NotImplementedError

    def name_after(self, name: str):
        """Name the record, and its unnamed leaf values, after the variable `name` holding it (for readable
        generated code)."""
        self.name = name
        for leaf, suffix in zip(self.leaves(), self.leaf_names()):
            if isinstance(leaf, Value) and leaf.name is None:
                leaf.name = f"{name}_{suffix}"


def record_rule(b, name, record: Record):
    """The typing rule of builtin `name` applied to `record` (tl.load of a block pointer): the record's own."""
    rule = record.RULES.get(name)
    if rule is None:
        raise b.error(DTypeError, f"tl.{name} does not take a {record.KIND}", hint=record.HINT)
    return rule


def record_attribute(record: Record, attr: str, error, method):
    """`record.attr` in a kernel: a compile-time property (`p.dtype`), a method (`method(builtin name)` bound to the
    record: `p.advance`), or a located error (`error(cls, message, hint=...)`) saying which kind it is."""
    if attr in record.ATTRIBUTES:
        return getattr(record, attr)
    if attr in record.METHODS:      # a tuple of builtin names, or {attribute: builtin name}
        return method(record.METHODS[attr] if isinstance(record.METHODS, dict) else attr)
    if attr in record.NOT_YET:
        raise error(UnsupportedSyntaxError, f"{record.KIND} method '{attr}'", hint=record.HINT, refusal=NOT_YET)
    raise error(NameResolutionError, f"a {record.KIND} has no attribute '{attr}'", hint=record.HINT)


def same_leaf(a, b) -> bool:
    """The same IR value, or equal Python numbers of the same type."""
    if isinstance(a, Value) or isinstance(b, Value):
        return a is b
    return type(a) is type(b) and a == b


class Slot(NamedTuple):
    key: tuple                # (variable, leaf index), or (variable, None) for a plain variable
    name: str                 # for the generated code and messages: `acc`, `a_block_offset1`
    initial: object           # the value before the loop or branch (an IR value or a Python number)
    const_type: Type | None   # the type a Python-number leaf takes when it is carried (plain numbers: None)


class Slots:
    """The variables `names` a loop or a branch changes, as flat slots.

    A plain variable is one slot. A record variable has a slot for each leaf in `carried[name]` (a set of leaf
    indices that grows while the loop body is built, see `grow`); its other leaves keep their initial values.
    """

    def __init__(self, names, initial: dict):
        self.names = list(names)
        self.initial = {n: initial[n] for n in self.names}
        self.carried = {n: set() for n in self.names if isinstance(self.initial[n], Record)}

    def entries(self) -> list:
        """The slots, in order."""
        out = []
        for n in self.names:
            init = self.initial[n]
            if isinstance(init, Record):
                leaves, names, types = init.leaves(), init.leaf_names(), init.leaf_types()
                out += [Slot((n, i), f"{n}_{names[i]}", leaves[i], types[i]) for i in sorted(self.carried[n])]
            else:
                out.append(Slot((n, None), n, init, None))
        return out

    def bind(self, values) -> dict:
        """Variable name -> value, with the slots holding `values` (region arguments or op results)."""
        values = iter(values)
        out = {}
        for n in self.names:
            init = self.initial[n]
            if isinstance(init, Record):
                leaves = list(init.leaves())
                for i in sorted(self.carried[n]):
                    leaves[i] = next(values)
                out[n] = init.with_leaves(leaves)
            else:
                out[n] = next(values)
        return out

    def grow(self, entry: dict, exit: dict, error) -> bool:
        """After building a loop body that started with the variables `entry` and ended with `exit`: carry
        every record leaf that changed. True when a slot was added (the body must be built again)."""
        grew = False
        for n in self.names:
            before, after = entry[n], exit[n]
            check_same_structure(n, before, after, error)
            if n not in self.carried:
                continue
            for i, (a, b) in enumerate(zip(before.leaves(), after.leaves())):
                if i not in self.carried[n] and not same_leaf(a, b):
                    self.carried[n].add(i)
                    grew = True
        return grew

    def carry_differences(self, other: dict, error):
        """Carry the record leaves in which the initial variables and `other` differ (the two branches of an
        if: each branch's values fill the slots)."""
        for n in self.names:
            a, b = self.initial[n], other[n]
            check_same_structure(n, a, b, error)
            if n in self.carried:
                self.carried[n] = {i for i, (x, y) in enumerate(zip(a.leaves(), b.leaves())) if not same_leaf(x, y)}

    def values(self, env: dict) -> list:
        """The slots' values in the variables `env`, in slot order."""
        out = []
        for n in self.names:
            v = env[n]
            if n in self.carried:
                leaves = v.leaves()
                out += [leaves[i] for i in sorted(self.carried[n])]
            else:
                out.append(v)
        return out


def check_same_structure(name, a, b, error):
    """Raise `error(message)` unless `a` and `b` are records of the same structure (or neither is a record)."""
    if not isinstance(a, Record) and not isinstance(b, Record):
        return
    if isinstance(a, Record) and isinstance(b, Record) and a.structure() == b.structure():
        return
    raise error(f"'{name}' is {_describe(a)} on one path and {_describe(b)} on another; a variable keeps one "
                "kind of value through runtime control flow (block pointers: one element type, block shape and "
                "order)")


def _describe(v):
    if isinstance(v, Record):
        return str(v)
    if isinstance(v, Value):
        article = "an" if str(v.type)[:1] in "aeiou" else "a"
        return f"{article} {v.type} value"
    return f"the constant {v!r}"
