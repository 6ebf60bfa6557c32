"""C expressions that move index bits: the arithmetic behind every layout in the generated code.

Layouts map bits of (register, lane, warp) to bits of block coordinates. `bit_moves(var, pairs, width)`
writes "take bit s of var to bit d" for many bits as few shift-and-mask terms, merging runs of consecutive
bits, so `cols = lane * 4 + ...` reads like hand-written code.
"""
from __future__ import annotations


def bit_moves(var: str, pairs, width: int) -> str:
    """Expression placing bit `s` of `var` (which has `width` significant bits) at bit `d`, for each (s, d)."""
    pairs = sorted(pairs)
    if not pairs:
        return "0"
    runs = []
    for s, d in pairs:
        if runs and runs[-1][0] + runs[-1][2] == s and runs[-1][1] + runs[-1][2] == d:
            runs[-1][2] += 1
        else:
            runs.append([s, d, 1])
    terms = []
    for s, d, n in runs:
        x = var
        if s:
            x = f"({x} >> {s})"
        if s + n < width:
            x = f"({x} & {(1 << n) - 1})"
        if d:
            x = f"({x} << {d})"
        terms.append(x)
    return " | ".join(terms) if len(terms) > 1 else terms[0]
