"""The kernel IR: typed values, plain operations with operands and results, and structured regions.

One IR is built per specialization (constexpr values and argument types known), so it holds no constexpr
control flow: `if CONST:` and `tl.static_range` were resolved while building it. Runtime `for`, `while` and
`if` are operations owning regions. `print(kernel_ir)` shows it; tests and humans read it that way.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .. import dtypes
from ..errors import SourceLocation


@dataclass(frozen=True)
class Type:
    """An element dtype (scalar or pointer) and a shape; `shape == ()` is a scalar."""

    dtype: dtypes.dtype
    shape: tuple = ()

    @property
    def is_block(self) -> bool:
        return bool(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def with_shape(self, shape) -> "Type":
        return Type(self.dtype, tuple(shape))

    def with_dtype(self, dt) -> "Type":
        return Type(dt, self.shape)

    def __str__(self):
        if not self.shape:
            return str(self.dtype)
        return f"{self.dtype}[{'x'.join(map(str, self.shape))}]"


_ids = itertools.count()


class Value:
    """An SSA value. `name` is the Python variable it was bound to (for readable C++), when there is one."""

    __slots__ = ("type", "name", "id", "owner")

    def __init__(self, type: Type, name: str | None = None):
        self.type = type
        self.name = name
        self.id = next(_ids)
        self.owner = None  # the Op producing it, or the Region whose argument it is

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def shape(self):
        return self.type.shape

    def __repr__(self):
        return f"%{self.name or 'v'}{self.id}"


@dataclass(eq=False)
class Region:
    """A straight-line list of ops with block arguments (loop induction variable, loop-carried values)."""

    args: list = field(default_factory=list)
    ops: list = field(default_factory=list)


class OpKind:
    """The kinds of IR op (an `Op`'s `name`), spelled once: passes and rules compare with these, and an op of any
    other name cannot be made (a misspelt kind would otherwise match no rule and be silently skipped)."""

    CONSTANT, PROGRAM_ID, NUM_PROGRAMS, ARANGE = "constant", "program_id", "num_programs", "arange"
    SPLAT, BROADCAST, EXPAND_DIMS, PERMUTE, RESHAPE = "splat", "broadcast", "expand_dims", "permute", "reshape"
    ELEMENTWISE, CAST, BITCAST, ADDPTR, HINT = "elementwise", "cast", "bitcast", "addptr", "hint"
    LOAD, STORE, ATOMIC_RMW, ATOMIC_CAS = "load", "store", "atomic_rmw", "atomic_cas"
    REDUCE, SCAN, DOT, GATHER = "reduce", "scan", "dot", "gather"
    FOR, WHILE, IF, YIELD, CONDITION = "for", "while", "if", "yield", "condition"
    BARRIER, DEVICE_PRINT, DEVICE_ASSERT = "barrier", "device_print", "device_assert"
    LAUNCHED_PROGRAMS, ROW_COUNT = "launched_programs", "row_count"     # the row loop's (analysis/row_loop.py)


OP_KINDS = frozenset(v for k, v in vars(OpKind).items() if k.isupper())
LOOPS = (OpKind.FOR, OpKind.WHILE)
WRITES_MEMORY = (OpKind.STORE, OpKind.ATOMIC_RMW, OpKind.ATOMIC_CAS)


@dataclass(eq=False)
class Op:
    """One operation. `name` (one of `OpKind`) selects the typing, analysis and lowering rules; `attrs` hold
    constants."""

    name: str
    operands: list
    results: list
    attrs: dict = field(default_factory=dict)
    loc: SourceLocation | None = None
    regions: list = field(default_factory=list)

    def __post_init__(self):
        if self.name not in OP_KINDS:
            raise AssertionError(f"no IR op kind '{self.name}' (transpiler/parse/ir.py OpKind)")
        for r in self.results:
            r.owner = self

    @property
    def result(self) -> Value:
        (r,) = self.results
        return r


@dataclass
class Argument:
    """A kernel parameter after specialization: its value in the IR, and what was assumed about it."""

    name: str
    value: Value
    index: int                # position among the launch arguments
    divisibility: int = 1     # bytes for pointers, elements for integers
    equal_to_one: bool = False
    is_none: bool = False     # None was passed: the parameter keeps its slot, the kernel never reads it


@dataclass(eq=False)
class KernelIR:
    name: str
    args: list
    body: Region
    source_file: str
    source_lines: dict        # line number -> text, for comments in the emitted code
    constexprs: dict = field(default_factory=dict)

    def walk(self):
        """Every op, depth first, in program order."""
        yield from walk(self.body)

    def __str__(self):
        return format_kernel(self)


def walk(region: Region):
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


# ---------------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------------

def _fmt_attr(v):
    if isinstance(v, dtypes.dtype):
        return repr(v)
    return repr(v)


def format_op(op: Op, indent: str = "") -> str:
    res = ", ".join(f"{r!r}: {r.type}" for r in op.results)
    head = f"{res} = " if op.results else ""
    attrs = ", ".join(f"{k}={_fmt_attr(v)}" for k, v in op.attrs.items() if not k.startswith("_"))
    operands = ", ".join(repr(o) for o in op.operands)
    text = f"{indent}{head}{op.name}({operands}{'; ' if attrs and operands else ''}{attrs})"
    if op.loc:
        text += f"  # line {op.loc.line}"
    lines = [text]
    for i, region in enumerate(op.regions):
        args = ", ".join(f"{a!r}: {a.type}" for a in region.args)
        lines.append(f"{indent}  region {i} ({args}):")
        for inner in region.ops:
            lines.append(format_op(inner, indent + "    "))
    return "\n".join(lines)


def format_kernel(k: KernelIR) -> str:
    params = ", ".join(f"{a.value!r}: {a.value.type}" for a in k.args)
    lines = [f"kernel {k.name}({params})"]
    for op in k.body.ops:
        lines.append(format_op(op, "  "))
    return "\n".join(lines)
