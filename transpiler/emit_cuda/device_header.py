"""Only the device helpers a kernel uses: a helper header (`templates/device*.cuh`) cut into its top-level items
inside `namespace tp` (a template, a function, a struct, an enum, a macro with its invocations, each with the
comment above it), and kept are the items whose names the kernel's code uses, directly or through another kept
item. What an item defines and what it uses are read from its text (a macro's from its expansions), so a new
helper needs nothing here. The lines outside the namespace (the banner, the includes) stay, but `#pragma once`
(for nvcc users, who `#include` the headers whole: `emit_kernel(..., include_headers=True)`).
"""
from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_]\w*")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_COMMENT = re.compile(r"//[^\n]*")
_TEMPLATE_HEAD = re.compile(r"template\s*<[^<>]*(?:<[^<>]*>[^<>]*)*>")
_DEFINE = re.compile(r"#define\s+(\w+)\(([^)]*)\)")


class Item:
    def __init__(self, lines):
        self.lines = lines
        self.name = None          # a macro's name
        self.provides = set()
        self.uses = set()

    @property
    def code(self) -> str:
        return _COMMENT.sub("", "\n".join(self.lines))


def _braces(line) -> int:
    code = _STRING.sub('""', _COMMENT.sub("", line))
    return code.count("{") - code.count("}")


def _split(body_lines) -> list:
    """Top-level items of the namespace's lines, each with the comment lines just above it."""
    items, pending, current, depth, macro = [], [], None, 0, None
    for line in body_lines:
        stripped = line.strip()
        if current is None:
            if not stripped or stripped.startswith("//"):
                pending.append(line)
                continue
            if macro is not None and (stripped.startswith(macro.name + "(") or stripped == f"#undef {macro.name}"):
                macro.lines += pending + [line]       # the macro's invocations and #undef belong to it
                pending = []
                continue
            current, pending, depth = pending + [line], [], 0
        else:
            current.append(line)
        depth += _braces(line)
        if line.rstrip().endswith("\\"):
            continue
        if depth == 0 and (stripped.endswith(("}", ";")) or stripped.startswith("#")):
            item = Item(current)
            define = _DEFINE.search(item.code)
            macro = item if define else None
            if macro is not None:
                macro.name = define.group(1)
            items.append(item)
            current = None
    return items, pending


def _expansions(item) -> str:
    """A macro item's invocations expanded (parameters substituted, `##` pasted), for reading names."""
    define = _DEFINE.search(item.code)
    params = [p.strip() for p in define.group(2).split(",")]
    body = item.code[define.end():].split(f"#undef {item.name}")[0]
    definition, _, invocations = body.partition("\n" + item.name + "(")
    out = []
    for call in re.finditer(rf"^{item.name}\(([^)]*)\)", item.code, re.M):
        args = [a.strip() for a in call.group(1).split(",")]
        text = definition
        for p, a in zip(params, args):
            text = re.sub(rf"\b{p}\b", a, text)
        out.append(text.replace("##", "").replace("\\\n", "\n"))
    return "\n".join(out)


def _defines(code) -> set:
    """Names a C++ item defines: the struct, enum (and enumerators), alias, or function it declares."""
    code = _STRING.sub('""', code)
    head = _TEMPLATE_HEAD.sub("", code.split("{")[0])
    struct = re.search(r"\b(?:struct|class)\s+(\w+)", head)
    if struct:                      # what its body declares (`using type = T;`) is its own
        return {struct.group(1)}
    enum = re.search(r"\benum\s+(\w+)\s*\{([^}]*)\}", code)
    if enum:
        return {enum.group(1)} | set(re.findall(r"(\w+)\s*(?:=[^,]*)?(?:,|$)", enum.group(2).strip()))
    alias = re.search(r"\busing\s+(\w+)\s*=", head)
    if alias:
        return {alias.group(1)}
    call = re.search(r"\b(\w+)\s*(?:<[^()]*>)?\s*\(", head)
    return {call.group(1)} if call else set()


def _read(items):
    for item in items:
        if item.name:
            expanded = _expansions(item)
            for part in expanded.split("__device__")[1:]:
                item.provides |= _defines("__device__" + part)
            item.uses = set(_IDENT.findall(_STRING.sub('""', expanded))) - item.provides
        else:
            item.provides = _defines(item.code)
            item.uses = set(_IDENT.findall(_STRING.sub('""', item.code))) - item.provides


def used_helpers(header: str, kernel_code: str) -> str:
    """`header` with only the items `kernel_code` (everything else in the `.cu`) needs."""
    lines = header.split("\n")
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "namespace tp {")
        end = max(i for i, ln in enumerate(lines) if ln.strip().startswith("}  // namespace tp"))
    except (StopIteration, ValueError):
        return header
    items, trailing = _split(lines[start + 1:end])
    _read(items)
    wanted = set(_IDENT.findall(kernel_code))
    kept = set()
    changed = True
    while changed:
        changed = False
        for i, item in enumerate(items):
            if i not in kept and item.provides & wanted:
                kept.add(i)
                wanted |= item.uses
                changed = True
    body = [ln for i, item in enumerate(items) if i in kept for ln in item.lines]
    head = [ln for ln in lines[:start + 1] if not ln.startswith("#pragma once")]   # the .cu is the main file
    return "\n".join(head + body + trailing + lines[end:])


__all__ = ["used_helpers"]
