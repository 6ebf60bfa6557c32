"""Small C integer expressions spelled as a person would: `x * 1` is `x`, `0 + x` is `x`, `x * 0` is `0`, and
compound operands are parenthesized only where C's precedence needs it."""
from __future__ import annotations

import re

_ATOM = re.compile(r"[A-Za-z_]\w*(\[[^\[\]]*\])?|\d+|\(.*\)")


def is_atom(x: str) -> bool:
    """Whether `x` needs no parentheses as an operand: a name, a subscript, a number or one parenthesized group."""
    return bool(_ATOM.fullmatch(x)) and _balanced(x)


def _atom(x: str) -> str:
    return x if _ATOM.fullmatch(x) and _balanced(x) else f"({x})"


def _balanced(x: str) -> bool:
    if not x.startswith("("):
        return True
    depth = 0
    for i, ch in enumerate(x):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i != len(x) - 1:
            return False          # `(a) * (b)` is not one parenthesized atom
    return True


def strip_parens(x: str) -> str:
    """`x` without the parentheses around all of it (`r + j` for `((r + j))`; `(a) * (b)` stays)."""
    while x.startswith("(") and is_atom(x):
        x = x[1:-1]
    return x


def mul(a, b) -> str:
    a, b = str(a), str(b)
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    return f"{_atom(a)} * {_atom(b)}"


def add(a, b) -> str:
    a, b = str(a), str(b)
    if a == "0":
        return b
    if b == "0":
        return a
    return f"{_summand(a)} + {_summand(b)}"


def _summand(x: str) -> str:
    """`x` as an operand of `+`: parenthesized when it holds an operator that binds less tightly."""
    return x if _atom(x) == x or not re.search(r"[|&^<>?=]", x) else f"({x})"


__all__ = ["add", "is_atom", "mul", "strip_parens"]
