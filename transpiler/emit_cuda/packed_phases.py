"""The emitter's share of packed rows (analysis/packed_rows.py): phases and run windows.

The phase is the count of cross-warp reductions written so far (`Emitter.phase`, bumped after each of the plan's
boundaries). A packed root or re-widened value bound in an earlier phase is made again where a later phase reads
it: the root as a copy of its loaded words (rules/memory.py), a value by its own rule. A tail run by runs is
emitted inside one loop over its runs, and every register loop of its ops covers the run's registers only
(`register_range`).
"""
from __future__ import annotations


class PackedRowsEmission:
    """Mixed into `Emitter`: needs its `packed`, `phase`, `bound_phase`, `stale_roots` and `window` fields."""

    def _remade_here(self, layout) -> bool:
        """Whether a stale packed value read in `layout` is made again here: anywhere but inside a tail run by
        runs in another layout, where it would be made whole in every run (it is read as held instead)."""
        return self.window is None or self.window[2] == layout

    def _made_again(self, v, layout, earlier: Read) -> Read:
        """A packed value bound before the last cross-warp reduction, made in this phase: a root copied through
        opaque words (rules/memory.py), a re-widened value recomputed by its own rule (analysis/packed_rows.py)."""
        key = (v, layout)
        if v.owner in self.packed.roots:
            self.stale_roots[key] = earlier
        try:
            self.run_rule(v.owner, layout)
        finally:
            self.stale_roots.pop(key, None)
        assert self.bound_phase.get(key) == self.phase, f"{v!r} not made again in phase {self.phase}"
        return self.lookup(v, layout)

    def register_range(self, layout, step: int = 1):
        """(first, end) C expressions of the registers a loop over `layout`'s registers covers (`step` registers
        an iteration, the loop counting iterations when `step` > 1): all of them, or one run inside a tail run
        by runs in that layout (analysis/packed_rows.py; a value made there in another layout, as the source of
        a broadcast, is made whole: its registers are not the tail's)."""
        n = layout.num_regs
        if self.window is None or self.window[2] != layout:
            return "0", str(n // step)
        var, size, _ = self.window
        per_run = size // step
        first = f"{var} * {per_run}" if per_run > 1 else var
        return first, f"{first} + {per_run}"

    def _emit_tail_by_runs(self, tail, skip):
        """The ops of `tail` inside one loop over its runs, each op computing only the run's registers
        (analysis/packed_rows.py); what they define lives in the loop's scope."""
        var = self.fresh("run")
        self.write("#pragma unroll")
        self.write(f"for (int {var} = 0; {var} < {tail.runs}; ++{var}) {{  // the tail one run of {tail.window} "
                   "registers at a time")
        self.push_scope()
        self.indent += 1
        self.window = (var, tail.window, tail.layout)
        try:
            self.emit_ops([op for op in tail.ops if op not in skip])
        finally:
            self.window = None
            self.indent -= 1
            self.pop_scope()
        self.write("}")
