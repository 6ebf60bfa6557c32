"""Single-trip loops written out: `for (int r = 0; r < 1; ++r) x[r] = y[r] + 1;` is `x[0] = y[0] + 1;`.

The rules and templates write one loop over the registers of a value whatever its register count, so a value
of one register per thread (a 1-D block spread over all threads, a reduction's one output row) gets a loop of
one trip, and a layout of one access per thread a `for (v = 0; v < 1; ...)` around it. Here, after the rules
wrote the text, each such loop is replaced by its body with the loop variable read as 0: a one-line body
becomes the statement itself, a braced body a plain block (its declarations keep their scope). The index
arithmetic the 0 leaves (`(0 << 3)`, `0 * 8`, `(0 & 7)`, `x + 0` inside an index) is folded where the result
is exact whatever the other operand is. The loop variables are template identifiers no kernel name may take
(`names.py` reserves them), so every whole-word use in the body is the loop's; string literals are left as
they are. Nothing here changes what the code computes (the C compiler unrolled these loops to the same code).
"""
from __future__ import annotations

import re

_LOOP = re.compile(r"^(?P<pad>\s*)for \(int (?P<var>[a-z]\w*) = 0; (?P=var) < 1; \+\+(?P=var)\) ?(?P<rest>.*)$")
_PRAGMA = re.compile(r"^\s*#pragma unroll\s*$")
_ZERO = "\x00"          # the loop variable's 0 while folding, so that only arithmetic on it is folded
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_TOKEN = r"~?\w+"
_FOLDS = (
    (re.compile(rf"\({_ZERO} (?:<<|>>|&) {_TOKEN}\)"), _ZERO),          # (0 << 3), (0 >> 1), (0 & 7)
    (re.compile(rf"\({_TOKEN} & {_ZERO}\)"), _ZERO),
    (re.compile(rf"\({_ZERO} \| ({_TOKEN})\)"), r"\1"),                   # (0 | x)
    (re.compile(rf"\(({_TOKEN}) \| {_ZERO}\)"), r"\1"),
    (re.compile(rf"\({_ZERO} \| {_ZERO}\)"), _ZERO),
    (re.compile(rf"\({_ZERO}\)"), _ZERO),
    (re.compile(rf"(?<=[\[(=,+-] ){_ZERO} \* \d+(?=[\]);,]| [+-] )"), _ZERO),   # a whole term 0 * 8, 8 * 0
    (re.compile(rf"(?<=[\[(]){_ZERO} \* \d+(?=[\]);,]| [+-] )"), _ZERO),
    (re.compile(rf"(?<=[\[(=,+-] )\d+ \* {_ZERO}(?=[\]);,]| [+-] )"), _ZERO),
    (re.compile(rf"(?<=[\[(])\d+ \* {_ZERO}(?=[\]);,]| [+-] )"), _ZERO),
    (re.compile(rf" \+ {_ZERO}(?=[\]);,])"), ""),                           # x + 0 ending an (argument) expression
    (re.compile(rf"(?<=\[){_ZERO} \+ "), ""),                               # an index starting 0 + x
)


def fold_single_trip_loops(lines: list) -> list:
    """`lines` (the kernel body, one string each) with every single-trip loop written out."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        header = _LOOP.match(line)
        if header is None:
            out.append(line)
            i += 1
            continue
        if out and _PRAGMA.match(out[-1]):
            out.pop()                                     # the loop's `#pragma unroll`
        pad, var, rest = header["pad"], header["var"], header["rest"].rstrip()
        end = _closing_line(lines, i, pad) if rest == "{" else None
        if rest.endswith(";") and _balanced(rest) and not _declares(rest, var):   # a one-line body
            out.append(pad + _substitute(rest, var))
            i += 1
        elif end is not None and not any(_declares(body, var) for body in lines[i + 1:end]):
            out.append(pad + "{")                         # a braced body: a plain block
            out.extend(_substitute(body, var) for body in fold_single_trip_loops(lines[i + 1:end]))
            out.append(lines[end])
            i = end + 1
        else:                                             # not a shape the templates write: left as it is
            if _PRAGMA.match(lines[i - 1] if i else ""):
                out.append(lines[i - 1])
            out.append(line)
            i += 1
    return out


def _balanced(code: str) -> bool:
    code = _STRING.sub('""', code)
    return code.count("(") == code.count(")") and code.count("{") == code.count("}")


def _declares(code: str, var: str) -> bool:
    """Whether `code` declares another variable of the loop variable's name (an inner loop's, shadowing it)."""
    return re.search(rf"\b(?:int|unsigned|auto)\s+{var}\b", code) is not None


def _closing_line(lines, start, pad):
    """Index of the line closing the braced loop that starts at `start` (its `}` at the loop's indentation)."""
    depth = 0
    for j in range(start, len(lines)):
        code = _STRING.sub('""', lines[j])
        depth += code.count("{") - code.count("}")
        if depth == 0 and j > start:
            return j if lines[j].strip() == "}" and lines[j].startswith(pad) else None
    return None


def _substitute(text: str, var: str) -> str:
    """`text` with the loop variable `var` read as 0, outside string literals, its arithmetic folded."""
    parts, last = [], 0
    for literal in _STRING.finditer(text):
        parts.append(_fold(re.sub(rf"\b{var}\b", _ZERO, text[last:literal.start()])))
        parts.append(literal.group())
        last = literal.end()
    parts.append(_fold(re.sub(rf"\b{var}\b", _ZERO, text[last:])))
    return "".join(parts).replace(_ZERO, "0")


def _fold(code: str) -> str:
    while True:
        folded = code
        for pattern, replacement in _FOLDS:
            folded = pattern.sub(replacement, folded)
        if folded == code:
            return code
        code = folded
