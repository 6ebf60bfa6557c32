"""Reads a kernel's Python source once and parses it with libcst, keeping exact file positions.

`parsed_function(fn)` returns the libcst `FunctionDef`, a position lookup that maps any node to its
`SourceLocation` in the real file (line offset and dedent undone), and the raw source lines for comments in
the generated code. Results are cached per function object: specializations share one parse.
"""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass

import libcst as cst

from ..errors import CompileTimeError, SourceLocation
from .positions import start_positions


@dataclass
class ParsedFunction:
    node: cst.FunctionDef
    file: str
    name: str
    first_line: int
    indent: int
    positions: dict      # node -> (line, column) where it starts in the dedented source (parse/positions.py)
    lines: dict          # absolute line number -> source text

    def loc(self, node) -> SourceLocation:
        pos = self.positions.get(node)
        if pos is None:
            return SourceLocation(self.file, self.first_line, 0, self.name)
        line, column = pos
        return SourceLocation(self.file, line + self.first_line - 1, column + self.indent, self.name)


_cache: dict = {}


def parsed_function(fn) -> ParsedFunction:
    cached = _cache.get(fn)
    if cached is not None:
        return cached
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise CompileTimeError(f"cannot read the source of {getattr(fn, '__name__', fn)!r}: {e}",
                               hint="kernels must be defined in a .py file (Triton reads their source too)") from None
    raw = "".join(lines)
    source = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = cst.parse_module(source)
    positions = start_positions(module)
    func = next(n for n in module.body if isinstance(n, cst.FunctionDef))
    file = inspect.getsourcefile(fn) or "<unknown>"
    parsed = ParsedFunction(func, file, fn.__name__, first_line, indent, positions,
                            {first_line + i: text.rstrip("\n") for i, text in enumerate(lines)})
    _cache[fn] = parsed
    return parsed
