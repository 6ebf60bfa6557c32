"""parse/positions.py gives every node the start position libcst's PositionProvider gives it, on the example,
bench and test kernel files (statements, expressions, whitespace, parentheses, continued lines)."""
from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from transpiler.parse.positions import start_positions

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("examples/*.py"), *ROOT.glob("bench/*kernels*.py"), *ROOT.glob("tests/*kernels*.py")])


def _both(source):
    module = cst.parse_module(source)
    provider = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return provider, start_positions(module)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_start_positions_are_the_providers(path):
    provider, ours = _both(path.read_text())
    assert set(ours) == set(provider)
    assert all(ours[node] == (r.start.line, r.start.column) for node, r in provider.items())


def test_start_positions_of_carriage_returns_and_continued_lines():
    source = ("def f(a,\r\n      b):\r\n    x = (a +\r\n         b)  # c\r\n    return x \\\n        * 2\n"
              "def g():\n    if a:\n        pass\n    elif b: return\n    else:\n        y = [1,\n 2]\n")
    provider, ours = _both(source)
    assert len(provider) > 50
    assert all(ours[node] == (r.start.line, r.start.column) for node, r in provider.items())
