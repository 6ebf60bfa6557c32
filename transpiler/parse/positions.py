"""Where each libcst node of a parsed function starts: (line, column), as libcst's `PositionProvider` gives
`range.start`, computed by one code generation of the module that records start positions only.

libcst's provider records a start and an end `CodeRange` for every node (whitespace included) through a
regular-expression split of every token: 0.25 s for the compile-time bench's attention module on this project's
CPU machine, half of its parse. The builder reads only where nodes start (an op's line above the code it
produced, an error's line and column); this state keeps that, with the provider's rules (a node's syntactic start
where it records one, overriding; else where its code generation began, never overriding), so the positions are
the provider's (`tests/test_positions.py` compares them on every node of the examples and bench kernels).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

try:     # libcst's code-generation state is not public API: where it moves, the provider itself is used
    from libcst._nodes.internal import CodegenState
except ImportError:      # pragma: no cover
    CodegenState = None

_NEWLINE = re.compile(r"\r\n?|\n")       # the provider's newline rule


class _StartPositions(CodegenState or object):
    def __init__(self, default_indent: str, default_newline: str):
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.line = 1              # one-based
        self.column = 0            # zero-based
        self.pending = []
        self.starts = {}

    def _advance(self, value: str):
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def add_indent_tokens(self):
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str):
        self.tokens.append(value)
        self._advance(value)

    def before_codegen(self, node):
        self.pending.append((self.line, self.column))

    def after_codegen(self, node):
        start = self.pending.pop()
        if node not in self.starts:
            self.starts[node] = start

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = (self.line, self.column)
        try:
            yield
        finally:
            self.starts[node] = self.starts[start_node] if start_node is not None else start


def start_positions(module) -> dict:
    """{node: (line, column)} for every node of `module` (a libcst Module), line one-based, column zero-based."""
    if CodegenState is None:
        return _from_provider(module)
    state = _StartPositions(module.default_indent, module.default_newline)
    module._codegen(state)
    return state.starts


def _from_provider(module) -> dict:
    from libcst.metadata import MetadataWrapper, PositionProvider
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (r.start.line, r.start.column) for node, r in ranges.items()}
