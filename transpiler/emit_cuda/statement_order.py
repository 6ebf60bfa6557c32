"""The order of the statements one op's lowering writes, so that each Python line is shown once, in order.

A rule asks for its operands while it writes (`Emitter.operand`), and a flexible operand (index arithmetic,
masks, pointer offsets: analysis/layout_assignment.py) is computed right there, under its own Python line. The
load of `x = tl.load(IN + row * stride + cols, mask=valid)` thus wrote the pointer's scalar part, then `cols`,
then the pointer block, then `valid`, then the load: the load's line three times. Here each lowering's text is
a `Chunk` of its own; when the op that started it all is written, the chunks of the operands it computed on
demand are placed first, each after the chunks whose values it reads, earliest Python line first, and the op's
own text last. Nothing moves unless every such chunk is pure arithmetic that touches no shared memory: only
then is its place free (a barrier's or a scratch buffer's place is decided in the order of the requests).
"""
from __future__ import annotations

from ..parse.ir import OpKind

# Op kinds whose lowering only computes registers from registers: their text may move.
MOVABLE = frozenset({OpKind.CONSTANT, OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS, OpKind.ARANGE, OpKind.SPLAT,
                     OpKind.BROADCAST, OpKind.EXPAND_DIMS, OpKind.PERMUTE, OpKind.RESHAPE, OpKind.ELEMENTWISE,
                     OpKind.CAST, OpKind.BITCAST, OpKind.ADDPTR, OpKind.HINT})
_REGION_OPS = frozenset({OpKind.FOR, OpKind.WHILE, OpKind.IF})
_SHARED_TEXT = ("__syncthreads", "tp_smem", "_smem", "__shfl", "shfl_xor", "asm", "cp_async")


class Chunk:
    """The text one lowering wrote itself, as (Python line, indentation, text); where it asked for another op's
    chunk, that chunk stands in `lines`."""

    def __init__(self, op, line):
        self.op = op
        self.line = line
        self.lines: list = []
        self.reads: set = set()       # chunks of this group whose values this one reads

    def own_text(self):
        """(Python line, indentation, text) of each line this lowering wrote itself."""
        return [x for x in self.lines if not isinstance(x, Chunk)]

    def movable(self) -> bool:
        return (self.op.name in MOVABLE and all(not isinstance(x, Chunk) or x.movable() for x in self.lines)
                and not any(word in text for _, _, text in self.own_text() for word in _SHARED_TEXT))


class Group:
    """The chunks written while one op of a region is lowered (the op's own chunk is the last to finish)."""

    def __init__(self):
        self.chunks: list = []
        self.defined_by: dict = {}    # (value, layout) -> the chunk that bound it
        self.detached: set = set()    # (value, layout) bound by a detached text (Emitter.detached_text)
        self.keep_order = False       # a chunk read one of those: its place is not known here


def in_writing_order(group: Group) -> list:
    """The chunks of `group` as they will be written: (chunk, its own (line, indentation, text) entries)."""
    anchor, on_demand = group.chunks[-1], group.chunks[:-1]
    # A region's op (a loop, an if) asks for operands inside its body: they stay there. So does a chunk
    # reading what the op itself defined (a loop variable) or what a detached text did.
    if (not on_demand or group.keep_order or anchor.op.name in _REGION_OPS
            or not all(c.movable() and anchor not in c.reads for c in on_demand)):
        return [(None, _flattened(anchor))]      # as written, each chunk where it was asked for
    placed, order, index = set(), [], {c: i for i, c in enumerate(on_demand)}
    while len(order) < len(on_demand):
        ready = [c for c in on_demand if c not in placed and c.reads <= placed]
        if not ready:                            # a cycle cannot happen; keep what was written if it does
            return [(None, _flattened(anchor))]
        first = min(ready, key=lambda c: (c.line if c.line is not None else 1 << 30, index[c]))
        placed.add(first)
        order.append(first)
    return [(c, c.own_text()) for c in order + [anchor]]


# Scalar ops written where their value is first read rather than at their place in the IR.
_WHERE_READ = frozenset({OpKind.ELEMENTWISE, OpKind.ADDPTR, OpKind.CAST, OpKind.BITCAST})
# ... and these too where every reader is on their own Python line: `row = tl.program_id(0) * N` after
# `offs = tl.arange(...)` wrote the program id at its place, before `offs`, which the load's statements write
# (that line twice); `pid_m, pid_n = tl.program_id(0), tl.program_id(1)` keeps both at their line.
_WHERE_READ_ON_ITS_LINE = frozenset({OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS})


def scalars_written_where_read(kernel) -> set:
    """The ops whose scalar results are written by the first rule that reads them (`Emitter.scalar`), like
    flexible blocks: pure arithmetic of the arguments and program ids read only in its own region, so that
    `IN + row * in_stride` is written with the load it feeds rather than before the lines it comes after. Not what feeds a loop or an if, even
    through other arithmetic: a region's op writes what it asks for where it asks, inside its own text."""
    regions_of, users = {}, {}

    def visit(region):
        for op in region.ops:
            for v in op.operands:
                regions_of.setdefault(v, set()).add(id(region))
                users.setdefault(v, []).append(op)
            for inner in op.regions:
                visit(inner)
    visit(kernel.body)
    feeds_region = {}

    def feeds(v):
        if v not in feeds_region:
            feeds_region[v] = False      # (no cycles in a region's data flow; this guards the recursion)
            feeds_region[v] = any(u.name in _REGION_OPS or (u.name in MOVABLE and any(feeds(r) for r in u.results))
                                  for u in users.get(v, ()))
        return feeds_region[v]
    out = set()

    def on_its_line(op):
        line = op.loc.line if op.loc else None
        return all(u.loc is not None and u.loc.line == line for r in op.results for u in users.get(r, ()))

    def choose(region):
        for op in region.ops:
            where_read = op.name in _WHERE_READ or (op.name in _WHERE_READ_ON_ITS_LINE and on_its_line(op))
            if (where_read and op.results and not any(r.shape for r in op.results)
                    and all(regions_of.get(r, set()) == {id(region)} and not feeds(r) for r in op.results)
                    and all(_from_inputs(v, out) for v in op.operands)):
                out.add(op)
            for inner in op.regions:
                choose(inner)
    choose(kernel.body)
    return out


def _from_inputs(v, written_where_read) -> bool:
    """Whether `v` is an argument, a constant, a program id or arithmetic of those written where read: what an
    address is made of. Other scalars stay where the IR has them (`rstd = 1 / tl.sqrt(var + eps)` moved after
    two loads cost the layernorm of 12288 columns 74 more registers on sm_90a)."""
    op = getattr(v, "owner", None)
    if op is None or not hasattr(op, "name"):
        return True
    return op.name in (OpKind.CONSTANT, OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS) or op in written_where_read


def _flattened(chunk) -> list:
    out = []
    for x in chunk.lines:
        out.extend(_flattened(x) if isinstance(x, Chunk) else [x])
    return out


__all__ = ["Chunk", "Group", "in_writing_order", "MOVABLE", "scalars_written_where_read"]
