"""Spelling of the emitted text as a whole, after the rules wrote it: nothing here changes what the code does.

`indent_pragmas`: a `#pragma` line takes the indentation of the statement it governs (the next non-empty line),
so an unrolled loop reads as one block; the templates may write pragmas at any indentation.
"""
from __future__ import annotations


def indent_pragmas(lines: list) -> list:
    out = list(lines)
    for i, line in enumerate(out):
        if not line.lstrip().startswith("#pragma"):
            continue
        following = next((ln for ln in out[i + 1:] if ln.strip()), "")
        pad = following[:len(following) - len(following.lstrip())]
        out[i] = pad + line.strip()
    return out


__all__ = ["indent_pragmas"]
