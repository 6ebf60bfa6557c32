"""Spelling of `tl.inline_asm_elementwise` (typed in `parse/semantic_asm.py`) for one element.

Triton's assembly names its registers `$0` (the output), `$1`, ... and may use `%` for PTX's own names
(`%tid.x`); CUDA's inline assembly names them `%0`, `%1`, ... and writes a literal `%` as `%%`. The element is
an immediately invoked lambda (an expression, so the elementwise machinery places it like any other): each
operand is moved bit for bit into a variable of its register's C type, the assembly runs (`volatile` unless the
kernel said `is_pure=True`), and the output register is moved bit for bit into the result dtype.
"""
from __future__ import annotations

import re

from . import cspell

# Constraint letter -> the C type of its register.
REGISTER_CTYPES = {"h": "unsigned short", "r": "unsigned int", "l": "unsigned long long", "f": "float",
                   "d": "double"}


def cuda_assembly(asm: str) -> str:
    """Triton's assembly text with CUDA's operand names and `%` escaped, as a C string literal."""
    text = re.sub(r"\$(\d+)", r"%\1", asm.replace("%", "%%"))
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def inline_asm_expr(op, args) -> str:
    """The C expression of one element of the `inline_asm` elementwise op `op` from its operands `args`."""
    out_letter, *in_letters = (c.lstrip("=") for c in op.attrs["constraints"])
    result_ct = cspell.ctype(op.result.dtype)
    out_ct = REGISTER_CTYPES[out_letter]
    inputs = ", ".join(f'"{letter}"(tp::bitcast<{REGISTER_CTYPES[letter]}>({arg}))'
                       for letter, arg in zip(in_letters, args))
    volatile = "" if op.attrs["pure"] else " volatile"
    return (f"[&]() {{ {out_ct} out_; asm{volatile}({cuda_assembly(op.attrs['asm'])} : \"={out_letter}\"(out_)"
            f"{' : ' + inputs if inputs else ''}); return tp::bitcast<{result_ct}>(out_); }}()")
