"""Spelling of `tl.inline_asm_elementwise` (typed in `parse/semantic_asm.py`) for one element.

Triton's assembly names its registers `$0` (the output), `$1`, ... and may use `%` for PTX's own names
(`%tid.x`); CUDA's inline assembly names them `%0`, `%1`, ... and writes a literal `%` as `%%`. The element is
an immediately invoked lambda (an expression, so the elementwise machinery places it like any other): each
operand is moved bit for bit into the low bits of a variable of its register's C type (the other lanes of a
packed register zero), the assembly runs (`volatile` unless the kernel said `is_pure=True`), and the low bits of
this op's output register are moved bit for bit into the result dtype. An asm with several outputs is one op
per output, each naming every output register and returning its own.
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


# Element width in bits -> the unsigned C type of that width.
_UNSIGNED = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}


def _operand(letter, dt, arg):
    register = REGISTER_CTYPES[letter]
    if letter in "fd":
        return f'"{letter}"({arg})'
    bits = f"tp::bitcast<{_UNSIGNED[dt.bits]}>({arg})"
    return f'"{letter}"(({register}){bits})'


def inline_asm_expr(op, args) -> str:
    """The C expression of one element of the `inline_asm` elementwise op `op` from its operands `args`."""
    letters = [c.lstrip("=") for c in op.attrs["constraints"]]
    out_dtypes = op.attrs["outputs"]
    out_letters, in_letters = letters[:len(out_dtypes)], letters[len(out_dtypes):]
    mine = op.attrs["output"]
    if len(set(out_letters)) > 1:
        declare = " ".join(f"{REGISTER_CTYPES[letter]} out{i}_;" for i, letter in enumerate(out_letters))
        names = [f"out{i}_" for i in range(len(out_letters))]
        keep = "".join(f" asm volatile(\"\" :: \"{letter}\"({name}));" for i, (letter, name)
                       in enumerate(zip(out_letters, names)) if i != mine)   # the other ops return these
    else:       # outputs of one register kind: one array, whose other elements are the other ops' results
        declare = f"{REGISTER_CTYPES[out_letters[0]]} out_[{len(out_letters)}];"
        names, keep = [f"out_[{i}]" for i in range(len(out_letters))], ""
    outputs = ", ".join(f'"={letter}"({name})' for letter, name in zip(out_letters, names))
    inputs = ", ".join(_operand(letter, v.dtype, arg) for letter, v, arg in zip(in_letters, op.operands, args))
    volatile = "" if op.attrs["pure"] else " volatile"
    result = op.result.dtype
    low = names[mine] if out_letters[mine] in "fd" else f"({_UNSIGNED[result.bits]}){names[mine]}"
    return (f"[&]() {{ {declare} asm{volatile}({cuda_assembly(op.attrs['asm'])} : {outputs}"
            f"{' : ' + inputs if inputs else ''});{keep} return tp::bitcast<{cspell.ctype(result)}>({low}); }}()")
