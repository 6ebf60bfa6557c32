"""The record every pass writes: what it decided, where, and why. The explain report joins these to Python lines."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Decision:
    pass_name: str
    line: int | None
    what: str
    why: str

    def __str__(self):
        where = f"line {self.line}" if self.line else "kernel"
        return f"[{self.pass_name}] {where}: {self.what} ({self.why})"


@dataclass
class DecisionLog:
    items: list = field(default_factory=list)

    def add(self, pass_name, op_or_loc, what, why):
        loc = getattr(op_or_loc, "loc", op_or_loc)
        self.items.append(Decision(pass_name, getattr(loc, "line", None), what, why))

    def for_pass(self, pass_name):
        return [d for d in self.items if d.pass_name == pass_name]

    def report(self) -> str:
        return "\n".join(str(d) for d in self.items)
