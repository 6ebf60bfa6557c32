"""Packed rows: which 16-bit rows stay as loaded words across cross-warp reductions, and which tails run by runs.

A row kernel that widens a 16-bit row (`tl.load(...).to(tl.float32)`) and reads it again after a cross-warp
reduction (layernorm: the mean, then the variance of `x - mean`, then `(x - mean) * rstd * w + b`) holds the fp32
row, one register an element, from the load to the last reading; and its tail loads every other row it reads
(W, B) in full before computing the first output. At 4096x12288 fp16 on 8 warps that is 127 registers, two
programs a SM (bench/NOTES.md, issue 18 session 10). Decided here, from the IR and the layouts:

1. **Packed roots and re-widened values.** A block load of fp16/bf16 in a fixed layout (the root) and the values
   computed from it by cheap elementwise ops (casts, `+ - *`, `where`, each other operand a scalar, a flexible
   value or another such value, all in the root's layout and region), when one of them is read after a
   cross-warp reduction that follows its definition. The emitter then recomputes such a value in each phase
   between two of those reductions where it is read (from the root, the same fp32 operations in the same order:
   bit-identical), and reads the root in a later phase through a copy of its 32-bit words the C compiler cannot
   see through (`tp::opaque_words`), so it cannot merge the later widening into the first one and hold the fp32
   row again: across a barrier only the loaded words, two halves a register, live.
2. **Run-by-run tails.** In a region holding a packed root, the ops after its last cross-warp reduction that are
   block loads, stores, casts and plain elementwise ops in one layout, with the scalar arithmetic and the views
   (broadcasts, `x[:, None]`) of values made before them among them, each block operand read as it is held
   (no conversion) and every value they define read only by them, run one run of registers at a time (the widest access's), so a tail's other
   loads are consumed as they arrive instead of held in full.

`TRANSPILER_PACKED_ROWS=1` turns it on (off by default until measured on the H200 through the compiler).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..parse.ir import OpKind
from ..targets import switch

_CHEAP = {"add", "sub", "mul", "neg", "select"}     # elementwise fns re-done per phase: one instruction each
_WINDOWED_KINDS = (OpKind.LOAD, OpKind.STORE, OpKind.CAST, OpKind.ELEMENTWISE)
_OPAQUE_FNS = ("inline_asm", "map")
_SCALAR_KINDS = (OpKind.CONSTANT, OpKind.CAST, OpKind.ELEMENTWISE, OpKind.ADDPTR)
_VIEW_KINDS = (OpKind.SPLAT, OpKind.BROADCAST, OpKind.EXPAND_DIMS, OpKind.RESHAPE, OpKind.PERMUTE)


@dataclass(frozen=True)
class RunTail:
    """A tail run `window` registers at a time: `ops` in program order, all in `layout`."""
    ops: tuple
    layout: object
    window: int

    @property
    def runs(self) -> int:
        return self.layout.num_regs // self.window


@dataclass
class PackedRows:
    roots: frozenset = frozenset()        # load ops whose 16-bit result is read through opaque copies later
    rewidened: frozenset = frozenset()    # values recomputed in each later phase that reads them
    boundaries: frozenset = frozenset()   # the cross-warp reductions and scans (a phase ends after each)
    tails: dict = field(default_factory=dict)   # first op of a tail -> RunTail

    def __bool__(self):
        return bool(self.roots)


def plan_packed_rows(kernel, layouts, widths, combined_loads, row_ring, decisions) -> PackedRows:
    if not switch("TRANSPILER_PACKED_ROWS"):
        return PackedRows()
    boundaries = frozenset(op for op in kernel.walk() if _crosses_warps(op, layouts))
    if not boundaries:
        return PackedRows()
    users = _users(kernel)
    roots, chains, tails = set(), set(), {}
    for region in _regions(kernel.body):
        position = {op: i for i, op in enumerate(region.ops)}
        top = _top_level_op(region)
        cuts = sorted(position[top[b]] for b in boundaries if top.get(b) in position)
        if not cuts:
            continue
        held = False
        for op in region.ops:
            if not _is_root(op, layouts, combined_loads, row_ring):
                continue
            chain = _chain(op, region, layouts, users)
            if _read_after_a_cut(op, chain, position, top, cuts, users):
                roots.add(op)
                chains |= chain
                held = True
                decisions.add("packed_rows", op, f"{op.result.dtype.name} row kept as loaded words across the "
                              f"cross-warp reductions; {len(chain)} values widened from it re-done in each "
                              "later phase that reads them",
                              "read after a cross-warp reduction: held widened, the row would take a 32-bit "
                              "register an element from the load to its last reading (analysis/packed_rows.py)")
        if held:
            packed = chains | {r.result for r in roots}
            tail = _tail(region.ops[cuts[-1] + 1:], layouts, widths, combined_loads, row_ring, users, packed)
            if tail is not None:
                tails[tail.ops[0]] = tail
                decisions.add("packed_rows", tail.ops[0], f"the tail ({len(tail.ops)} ops) run {tail.window} "
                              f"registers at a time, {tail.runs} runs",
                              "loads, stores and elementwise ops in one layout after the last cross-warp "
                              "reduction: each run's loads consumed as they come, not held in full")
    return PackedRows(frozenset(roots), frozenset(chains), boundaries, tails)


def _crosses_warps(op, layouts) -> bool:
    """A reduction or scan whose axis runs across warps (a shared-memory combine and a barrier)."""
    if op.name not in (OpKind.REDUCE, OpKind.SCAN) or not op.operands:
        return False
    layout = layouts.layout.get(op.operands[0])
    axis = op.attrs.get("axis")
    return layout is not None and axis is not None and any(b[axis] for b in layout.warp)


def _regions(region):
    yield region
    for op in region.ops:
        for inner in op.regions:
            yield from _regions(inner)


def _top_level_op(region):
    """op (at any depth under `region`) -> the op of `region` that holds it."""
    top = {}

    def visit(r, owner):
        for op in r.ops:
            top[op] = owner or op
            for inner in op.regions:
                visit(inner, owner or op)
    visit(region, None)
    return top


def _users(kernel):
    users = {}
    for op in kernel.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    return users


def _is_root(op, layouts, combined_loads, row_ring) -> bool:
    v = op.result if op.name == OpKind.LOAD and len(op.results) == 1 else None
    if v is None or not v.shape or v.dtype.name not in ("fp16", "bf16") or v not in layouts.layout:
        return False
    if op in combined_loads or (row_ring is not None and row_ring.ring_of(op) is not None):
        return False
    return layouts.layout[v].num_regs % 2 == 0      # copied a 32-bit word (two registers) at a time


def _chain(root, region, layouts, users) -> set:
    """The values computed from `root`'s result by cheap elementwise ops in its region and layout."""
    layout = layouts.layout[root.result]
    chain, frontier = set(), [root.result]
    in_region = set(region.ops)
    while frontier:
        v = frontier.pop()
        for op in users.get(v, []):
            r = op.results[0] if len(op.results) == 1 else None
            if r is None or r in chain or op not in in_region or not _cheap(op):
                continue
            if layouts.layout.get(r) != layout or not r.dtype.is_standard_floating():
                continue
            if all(o is root.result or o in chain or not o.shape or o in layouts.flexible for o in op.operands):
                chain.add(r)
                frontier.append(r)
    return chain


def _cheap(op) -> bool:
    if op.name == OpKind.CAST:
        return (op.operands[0].dtype.is_standard_floating() and op.result.dtype.is_standard_floating()
                and not op.attrs.get("rounding"))
    return op.name == OpKind.ELEMENTWISE and op.attrs.get("fn") in _CHEAP


def _read_after_a_cut(root, chain, position, top, cuts, users) -> bool:
    for v in chain | {root.result}:
        defined = position[v.owner]
        for user in users.get(v, []):
            at = position.get(top.get(user))
            if at is not None and any(defined < c < at for c in cuts):
                return True
    return False


def _tail(ops, layouts, widths, combined_loads, row_ring, users, packed):
    """The longest run of windowed ops from the first load of `ops` on that ends with a store, or None. `packed`:
    the values made again where a later phase reads them (a view of one in the tail's layout would see only the
    run's registers made; one of another layout is read as held there)."""
    start = next((i for i, op in enumerate(ops) if op.name == OpKind.LOAD and op.results[0].shape), None)
    if start is None:
        return None
    chosen, layout = [], None
    for op in ops[start:]:
        if op.results and all(r in layouts.flexible for r in op.results):
            chosen.append(op)       # computed on demand where read: inside the tail when read there
            continue
        if op.name in _SCALAR_KINDS and op.results and not any(r.shape for r in op.results):
            chosen.append(op)       # an address or a factor: made in each run (the C compiler makes it once)
            continue
        if op.name in _VIEW_KINDS and not any(o.owner in chosen or (o in packed and layouts.layout.get(o) == layout)
                                              for o in op.operands if o.shape):
            chosen.append(op)       # a view of a whole value made before the tail (`rstd[:, None]`): no code
            continue
        lay = _windowed_layout(op, layouts, combined_loads, row_ring)
        if lay is None or (layout is not None and lay != layout) or not _read_in(op, lay, layouts):
            break
        layout = lay
        chosen.append(op)
    while chosen and chosen[-1].name != OpKind.STORE:
        chosen.pop()
    if not any(op.name == OpKind.STORE for op in chosen):
        return None
    inside = set(chosen)
    for op in chosen:
        if op.name == OpKind.CONSTANT:
            continue                # spelled inline where read
        for r in op.results:
            if r not in layouts.flexible and any(u not in inside for u in users.get(r, [])):
                return None     # a value of the tail read after it: it would hold only the last run
    window = max(widths.get(op, 1) for op in chosen if op.name in (OpKind.LOAD, OpKind.STORE))
    if layout.num_regs % window or any(window % widths.get(op, 1) for op in chosen
                                       if op.name in (OpKind.LOAD, OpKind.STORE)):
        return None
    if window == layout.num_regs:
        return None             # one run: nothing to interleave
    return RunTail(tuple(chosen), layout, window)


def _read_in(op, layout, layouts) -> bool:
    """Whether each block operand of `op` is read in `layout` as it is held (fixed there, or made where read):
    a conversion inside the run loop would be a whole trip through shared memory each run."""
    return all(not o.shape or o in layouts.flexible or layouts.layout.get(o) == layout for o in op.operands)


def _windowed_layout(op, layouts, combined_loads, row_ring):
    """The layout `op` computes in when it can run a window of registers at a time, else None."""
    if op.name not in _WINDOWED_KINDS:
        return None
    if op.name == OpKind.ELEMENTWISE and op.attrs.get("fn") in _OPAQUE_FNS:
        return None
    if op.name in (OpKind.LOAD, OpKind.STORE):
        if op in combined_loads or (row_ring is not None and row_ring.ring_of(op) is not None):
            return None
        return layouts.mem_layout.get(op)
    r = op.results[0] if len(op.results) == 1 else None
    if r is None or not r.shape:
        return None
    return layouts.layout.get(r)
