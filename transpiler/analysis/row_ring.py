"""Row ring: whether the rows a row loop holds ahead (`row_loop.py`) live in shared memory, copied by `cp.async`.

A folded row loop `depth` rows ahead carries, per row load, the row it reduces now and the `depth - 1` after it,
and loads the row `depth` ahead at the top of each iteration. In registers that is `depth` rows of registers a
thread; here each of those rows is one slot of a ring of `depth + 1` slots in shared memory instead, and only the
row being reduced is read into registers. Every thread copies and reads back its own elements only (its runs,
one after another, each slot laid out run by run with the block's threads side by side, so a warp's accesses of
one run are consecutive), so no barrier is needed: `cp.async.wait_group` orders a thread's copies before its own
reads. Per iteration: copy the row `depth` ahead into the slot the previous iteration read (its values were
used by then), commit the group, wait until only `depth - 1` groups are in flight (this row's has landed), read
this row's slot. A run the row's mask leaves out is written with the load's `other` by the thread (no copy);
a ragged run (mask not uniform over it) is read element by element; the prologue copies the first `depth` rows,
one group each.

Decides, from the row-loop plan, the layouts and the vector widths: the ring of each prefetched load (its
layout, run width, slots) when every copy of every row load runs 4, 8 or 16 bytes in one layout; otherwise the
rows stay in registers as the IR holds them (the row-loop decision then says so).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..targets import switch

RING_BYTES = (4, 8, 16)     # what one cp.async copies


@dataclass
class RingLoad:
    """The ring of one prefetched row load."""
    index: int
    layout: object
    vec: int                 # elements per run (one cp.async)
    dtype: object
    threads: int             # threads of the block, each with its own runs in every slot
    slots: int
    arg: object              # the loop's region argument holding the row reduced now
    copies: dict = field(default_factory=dict)    # load op -> slot (an int: the prologue's) or None (the body's)

    @property
    def runs(self) -> int:
        return self.layout.num_regs // self.vec

    @property
    def slot_elems(self) -> int:
        return self.layout.num_regs * self.threads

    @property
    def count(self) -> int:
        return self.slots * self.slot_elems


@dataclass
class RowRing:
    loop: object
    depth: int
    loads: list                          # RingLoad per prefetched load
    carried: set                         # indices of the loop's carried values the ring holds
    last_prologue: dict                  # prologue row k -> its last copy (the group is committed after it)
    last_ahead: object                   # the body's last copy: then commit, wait, read this row's slots

    def ring_of(self, op):
        return next((r for r in self.loads if op in r.copies), None)

    @property
    def shared_bytes(self) -> int:
        return sum(r.count * r.dtype.itemsize for r in self.loads)


def _rows(n):
    return "one row" if n == 1 else f"{n} rows"


def plan_row_ring(kernel, plan, layouts, widths, decisions, threads):
    """The RowRing of `plan` (row_loop.RowLoopPlan) or None, with the decision logged."""
    if plan is None or not plan.ring or not plan.prefetched or plan.loop is None:
        return None
    region = plan.loop.regions[0]
    loads, carried, last_prologue = [], set(), {}
    for j, user_load in enumerate(plan.prefetched):
        copies = plan.first_loads[j] + [plan.ahead_loads[j]]
        shapes = {(layouts.mem_layout.get(op), widths.get(op)) for op in copies}
        (layout, vec), = shapes if len(shapes) == 1 else ((None, None),)
        itemsize = user_load.result.dtype.itemsize
        if layout is None or not switch("TRANSPILER_ROW_RING") or vec * itemsize not in RING_BYTES:
            why = ("TRANSPILER_ROW_RING=0" if not switch("TRANSPILER_ROW_RING") else
                   f"the copies of line {user_load.loc.line if user_load.loc else '?'} do not share one layout and "
                   f"a 4, 8 or 16-byte run width")
            decisions.add("row_ring", user_load, f"{_rows(plan.depth)} ahead held in registers", why)
            return None
        arg = region.args[1 + plan.carried[j][0]]
        if layouts.layout.get(arg) != layout:
            decisions.add("row_ring", user_load, f"{_rows(plan.depth)} ahead held in registers",
                          "the row is reduced in another layout than it is loaded in")
            return None
        ring = RingLoad(j, layout, vec, user_load.result.dtype, threads, plan.depth + 1, arg)
        for k, op in enumerate(plan.first_loads[j]):
            ring.copies[op] = k
            last_prologue[k] = op
        ring.copies[plan.ahead_loads[j]] = None
        carried |= set(plan.carried[j])
        loads.append(ring)
    ring = RowRing(plan.loop, plan.depth, loads, carried, last_prologue, plan.ahead_loads[-1])
    for r in loads:
        decisions.add("row_ring", plan.prefetched[r.index],
                      f"rows ahead in shared memory: a ring of {r.slots} slots of {r.slot_elems * r.dtype.itemsize} "
                      f"bytes, {r.vec * r.dtype.itemsize}-byte cp.async per run",
                      f"the loop holds {_rows(plan.depth)} ahead; in registers that would be {plan.depth} x "
                      f"{r.layout.num_regs} registers a thread more; each thread copies and reads its own runs, so "
                      f"no barrier")
    return ring


__all__ = ["RowRing", "RingLoad", "plan_row_ring"]
