"""Spelling of the emitted text as a whole, after the rules wrote it: nothing here changes what the code does.

`indent_pragmas`: a `#pragma` line takes the indentation of the statement it governs (the next non-empty line),
so an unrolled loop reads as one block; the templates may write pragmas at any indentation. `wrap` fills lines
of at most `WIDTH` columns from comma-separated parts (the header's specialization, the kernel's parameters).
`layout_in_words` says which elements a layout gives each register of each thread, as a formula.
"""
from __future__ import annotations

from . import cexpr
from .bits import bit_moves

WIDTH = 120     # columns of the generated source


def indent_pragmas(lines: list) -> list:
    out = list(lines)
    for i, line in enumerate(out):
        if not line.lstrip().startswith("#pragma"):
            continue
        following = next((ln for ln in out[i + 1:] if ln.strip()), "")
        pad = following[:len(following) - len(following.lstrip())]
        out[i] = pad + line.strip()
    return out


def wrap(parts, first_prefix: str, prefix: str, last: str = "", width: int = WIDTH) -> list:
    """`parts` joined by ", " into lines of at most `width` columns (a part longer than a line gets its own):
    the first line after `first_prefix`, the others after `prefix`; `last` ends the last line. The prefixes
    are part of the lines returned."""
    lines, current = [], first_prefix
    for i, part in enumerate(parts):
        text = part + ("," if i < len(parts) - 1 else last)
        if current.strip() and current not in (first_prefix, prefix) and len(current) + 1 + len(text) > width:
            lines.append(current)
            current = prefix
        current += ("" if current in (first_prefix, prefix) else " ") + text
    lines.append(current)
    return lines


def layout_in_words(layout, index: int) -> list:
    """Comment lines saying what layout `L{index}` holds where: its shape over registers, lanes and warps, and
    the element register `r` of (warp, lane) holds, one index formula per dimension."""
    regs, warps = layout.num_regs, 1 << len(layout.warp)
    head = (f"layout L{index}, shape {list(layout.shape)}: {regs} register{'s' if regs > 1 else ''} x 32 lanes "
            f"x {warps} warp{'s' if warps > 1 else ''}")
    coords = []
    for d in range(layout.rank):
        terms = []
        for var, bases, width in (("r", layout.reg, len(layout.reg)), ("lane", layout.lane, 5),
                                  ("warp", layout.warp, max(len(layout.warp), 1))):
            pairs = [(i, b[d].bit_length() - 1) for i, b in enumerate(bases) if b[d]]
            if pairs:
                terms.append(bit_moves(var, pairs, width))
        coords.append(" + ".join(f"({x})" if " | " in x and not cexpr.is_atom(x) else x for x in terms) or "0")
    where = coords[0] if layout.rank == 1 else "[" + ", ".join(coords) + "]"
    copies = [f"{what} bits {mask:#x} hold copies" for what, mask in
              (("lane", layout.replicated_lane_mask()), ("warp", layout.replicated_warp_mask())) if mask]
    tail = f"; {', '.join(copies)}" if copies else ""
    one_line = f"{head}; register r of (warp, lane) holds element {where}{tail}"
    if len(one_line) <= WIDTH - 3:
        return [one_line]
    return [f"{head}; register r of (warp, lane) holds element"] + wrap_words(f"{where}{tail}", "  ", "  ")


def wrap_words(text: str, first_prefix: str, prefix: str, width: int = WIDTH - 3) -> list:
    """`text` broken at spaces into lines of at most `width` columns (a `// ` comment's worth below WIDTH)."""
    lines, current = [], first_prefix
    for word in text.split(" "):
        if current.strip() and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = prefix + word
        else:
            current += (" " if current.strip() else "") + word
    lines.append(current)
    return lines


__all__ = ["indent_pragmas", "layout_in_words", "wrap", "wrap_words"]
