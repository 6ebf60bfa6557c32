"""C identifiers of one generated kernel, all handed out by one allocator so that no two can be equal.

Every identifier the emitter declares (a Python variable's register array, a kernel parameter, an accumulator,
a scratch buffer, a layout's thread base, a device helper) is asked of `CNames.fresh`, which returns a name that
no earlier call returned and that no fixed identifier of the output uses: C++ keywords, the locals the Jinja
templates declare (`r`, `o`, `chunk`, `tp_smem`, ...: read off the templates themselves), and the functions the
spelling tables call unqualified (`fminf`, `exp2`, ...). A derived name (`<acc>0`, `<acc>_smem`) is asked of
`fresh` too, never glued onto a handed-out one, so a family such as `red_acc_1` + `0` cannot meet another
reduction's `red_acc_10`: the second one asked gets a suffix instead.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t char8_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq
""".split())

CUDA_NAMES = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize printf memcpy memset half half2 min max abs exp log sqrt tp
nv_bfloat16 assert
""".split())

# Names the emitter's Python code declares itself (shared-memory bases) or its templates use as macro arguments.
EMITTER_NAMES = frozenset("tp_smem tp_smem_stage tp_smem_scratch_in_loop src".split())

# A declaration in a template: `int r`, `const int chunk =`, `unsigned char tp_smem[]`, `for (int k = ...`.
_DECLARATION = re.compile(
    r"\b(?:int|unsigned|float|double|bool|auto|char|short|long|size_t)\s*[*&]?\s+([A-Za-z_]\w*)\s*(?=[=;\[,)])")
_CALLED = re.compile(r"(?<![\w:.])([A-Za-z_]\w*)\s*\(")


@lru_cache(maxsize=1)
def template_identifiers() -> frozenset:
    """The identifiers the kernel templates declare inside a kernel body (and the kernel template's own)."""
    from .emitter import templates_dir
    found = set()
    for path in Path(templates_dir()).glob("*.j2"):
        found.update(_DECLARATION.findall(path.read_text()))
    return frozenset(found)


@lru_cache(maxsize=1)
def called_identifiers() -> frozenset:
    """Functions the spelling tables call without a namespace (`fminf(a, b)`), which a local must not hide."""
    from . import cspell
    spellings = []
    for table in (cspell._FLOAT_MATH, cspell._INT_FUNCS, cspell._RTZ):
        for entry in table.values():
            spellings.extend(entry if isinstance(entry, tuple) else (entry,))
    found = set()
    for text in spellings:
        if text:
            found.update(_CALLED.findall(text))
    return frozenset(found)


def reserved_identifiers() -> frozenset:
    return CPP_KEYWORDS | CUDA_NAMES | EMITTER_NAMES | template_identifiers() | called_identifiers()


class CNames:
    """The one source of declared C names of a kernel."""

    def __init__(self):
        self.reserved = reserved_identifiers()
        self.taken: set = set(self.reserved)

    @staticmethod
    def _base(hint: str) -> str:
        base = re.sub(r"\W", "_", hint or "t")
        if base[0].isdigit():
            base = "_" + base
        if base.startswith("__") or re.match(r"_[A-Z]", base):
            base = "v" + base            # names the C++ implementation reserves for itself
        return base

    def fresh(self, hint: str) -> str:
        """A name no earlier call returned, spelled after `hint` (suffixed `_1`, `_2`, ... when needed)."""
        base = self._base(hint)
        if base in self.reserved:
            base += "_"                  # `r` -> `r_`: still reads as the Python name
        name, i = base, 1
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name

    def __contains__(self, name) -> bool:
        return name in self.taken
