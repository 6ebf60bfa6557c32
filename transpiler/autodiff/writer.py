"""The backward program as it is written: indented Python lines in the Triton dialect, fresh names, and the
decisions to show in `explain`.

The reverse-mode transform (`reverse.py`) works on the forward's IR and writes its result through this
object as Python source, which the ordinary pipeline (builder, analyses, emitter, interpreter) compiles like
any kernel: the derived backward is readable Python as well as readable CUDA.
"""
from __future__ import annotations

import itertools
import re


class Writer:
    """Lines of the backward kernel's body, with the indentation of the statement being written."""

    def __init__(self, taken_names=()):
        self.lines: list[str] = []
        self.depth = 1
        self.taken = set(taken_names)
        self._counter = itertools.count()
        self.decisions: list[str] = []      # one line per decision, for explain
        self._last_comment = None

    def fresh(self, base: str) -> str:
        """A name not used before in this kernel (derived from `base`, which may be any text)."""
        base = re.sub(r"\W", "_", base) or "v"
        if base[0].isdigit():
            base = "v_" + base
        while True:
            name = f"{base}_{next(self._counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def line(self, text: str):
        self.lines.append("    " * self.depth + text)

    def comment(self, loc, what=""):
        """`# line N: <forward source>` above the code a forward line produced (once per run of lines)."""
        if loc is None:
            return
        key = (loc.line, what)
        if key == self._last_comment:
            return
        self._last_comment = key
        text = loc.source_line().strip()
        self.line(f"# {what}line {loc.line}: {text}" if text else f"# {what}line {loc.line}")

    def let(self, expr: str, base: str = "t") -> str:
        """Bind `expr` to a fresh name and return the name."""
        name = self.fresh(base)
        self.line(f"{name} = {expr}")
        return name

    def indent(self):
        writer = self

        class _Block:
            def __enter__(self):
                writer.depth += 1
                writer._last_comment = None

            def __exit__(self, *exc):
                writer.depth -= 1
                writer._last_comment = None
        return _Block()

    def capture(self):
        """`with w.capture() as lines:` writes into `lines` instead (spliced later with `splice`)."""
        writer = self

        class _Capture:
            def __enter__(self):
                self.saved = writer.lines
                writer.lines = []
                writer._last_comment = None
                return writer.lines

            def __exit__(self, *exc):
                writer.lines = self.saved
                writer._last_comment = None
        return _Capture()

    def splice(self, lines, extra_depth=0):
        self.lines.extend("    " * extra_depth + line for line in lines)

    def decide(self, text: str):
        self.decisions.append(text)
