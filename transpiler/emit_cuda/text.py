"""Spelling of the emitted text as a whole, after the rules wrote it: nothing here changes what the code does.

`indent_pragmas`: a `#pragma` line takes the indentation of the statement it governs (the next non-empty line),
so an unrolled loop reads as one block; the templates may write pragmas at any indentation. `wrap` fills lines
of at most `WIDTH` columns from comma-separated parts (the header's specialization, the kernel's parameters).
`layout_in_words` says which elements a layout gives each register of each thread, as a formula.
`break_long_lines` breaks what is still wider than `WIDTH` as a person would (a trailing comment above its
statement, a long comment at word boundaries, a one-line `for` before its statement, an argument list after its
commas, a condition or sum before its operators), never inside a string, a template's arguments or a
preprocessor line.
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


# Where an expression may be broken, shallowest first; at one depth: commas, then `&&`/`||`, then `^`/`|`, then
# `+`/`-` (the operator starts the continuation line).
_OPERATORS = ((" && ", " || "), (" ^ ", " | "), (" + ", " - "))
CONTINUATION = "    "


def _scan(line):
    """(index, depth, character) of each character outside strings, character literals and a template's
    arguments (`<...>` right after a name), `depth` counting the brackets open before it."""
    out, depth, quote, template = [], 0, None, 0
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "<" and i and (line[i - 1].isalnum() or line[i - 1] == "_") and line[i + 1:i + 2] not in "<=":
            template += 1
        elif c == ">" and template and line[i + 1:i + 2] != ">":
            template -= 1
        elif not template:
            depth += c in "([{"
            depth -= c in ")]}"
            out.append((i, depth, c))
        i += 1
    return out


def _trailing_comment(line):
    """The index where a `//` comment after code starts, or None."""
    for i, _, c in _scan(line):
        if c == "/" and line[i + 1:i + 2] == "/":
            return i if line[:i].strip() else None
    return None


def _for_header_end(line):
    """Where the header of a one-line `for (...) statement;` ends (after its `)`), or None."""
    stripped = line.lstrip()
    if not stripped.startswith("for ("):
        return None
    start = len(line) - len(stripped) + 4
    for i, depth, c in _scan(line):
        if i > start and c == ")" and depth == 0:
            rest = line[i + 1:].strip()
            return i + 1 if rest and not rest.startswith("{") else None
    return None


def _pieces(line):
    """The line cut at its shallowest break points: [(text, hangs)], `hangs` when the piece ends at an open
    bracket the next pieces are the arguments of. None when nothing can be cut."""
    scanned = _scan(line)
    indent = len(line) - len(line.lstrip())
    commas = [(d, i) for i, d, c in scanned if c == "," and line[i + 1:i + 2] == " " and i >= indent]
    ops = [(d, rank, i) for rank, group in enumerate(_OPERATORS) for i, d, _ in scanned
           for op in group if line.startswith(op, i) and i > indent]
    depths = [d for d, _ in commas] + [d for d, _, _ in ops]
    if not depths:
        return None
    top = min(depths)
    call = next((i for i, d, c in scanned if c == "(" and d == 1), None)
    if top >= 2 and call is not None:
        # nothing to cut at the statement's own level but inside one call: its argument on the next line
        return [(line[:call + 1], True), (line[call + 1:], False)]
    at_top = sorted(i for d, i in commas if d == top)
    if at_top:
        # the argument list of the first bracket holding such commas (its own commas only)
        opening = max((i for i, d, c in scanned if c in "([{" and d == top and i < at_top[0]), default=None)
        if opening is not None:
            close = next((i for i, d, c in scanned if i > opening and c in ")]}" and d == top - 1), len(line))
            at_top = [i for i in at_top if i < close]
        cuts = [i + 1 for i in at_top]
        # no bracket opened on this line: a run of arguments of a call opened above, which stay aligned
        pieces = [(line[:opening + 1], True)] if opening is not None else [("", None)]
        start = opening + 1 if opening is not None else 0
        for cut in cuts:
            pieces.append((line[start:cut], False))
            start = cut + 1
        pieces.append((line[start:], False))
        return pieces
    rank = min(r for d, r, _ in ops if d == top)
    cuts = sorted(i for d, r, i in ops if d == top and r == rank)
    pieces, start = [], 0
    for cut in cuts:
        pieces.append((line[start:cut], False))
        start = cut + 1
    pieces.append((line[start:], False))
    return pieces


def _break(line, width):
    if len(line) <= width or line.lstrip().startswith("#") or line.rstrip().endswith("\\"):
        return [line]      # a preprocessor line, or a macro's that continues on the next, ends at its newline
    pad = line[:len(line) - len(line.lstrip())]
    comment = _trailing_comment(line)
    if comment is not None:       # the comment above the statement it is about
        return _break(pad + line[comment:].strip(), width) + _break(line[:comment].rstrip(), width)
    if line.lstrip().startswith("//"):
        words = wrap_words(line.strip()[2:].strip(), "", "", width - len(pad) - 3)
        return [pad + "// " + text.strip() for text in words]
    header = _for_header_end(line)
    if header is not None:        # the statement under its loop header
        return [line[:header]] + _break(pad + "  " + line[header:].strip(), width)
    pieces = _pieces(line)
    if pieces is None:
        return [line]
    cont = pad + CONTINUATION
    if pieces[0][1] is None:     # arguments of a call opened above: each line at this one's indentation
        pieces, cont = [(pad + pieces[1][0].strip(), False)] + pieces[2:], pad
    texts = [text.strip() for text, _ in pieces]
    if pieces[0][1]:      # `f(` then its arguments: on its line while the first fits, else all below it
        first = pieces[0][0] + texts[1]
        lines, current, rest = ([], first, texts[2:]) if len(first) <= width else ([pieces[0][0]], None, texts[1:])
    else:
        lines, current, rest = [], pieces[0][0].rstrip(), texts[1:]
    for text in rest:
        if current is not None and len(current) + 1 + len(text) <= width:
            current += " " + text
            continue
        if current is not None:
            lines.append(current)
        current = cont + text
    lines.append(current)
    if len(lines) == 1:
        return lines
    return [out for piece in lines for out in _break(piece, width)]


def break_long_lines(lines: list, width: int = WIDTH) -> list:
    """Each line of at most `width` columns where it can be broken (see the module's docstring)."""
    return [out for line in lines for out in _break(line, width)]


__all__ = ["indent_pragmas", "layout_in_words", "wrap", "wrap_words", "break_long_lines"]
