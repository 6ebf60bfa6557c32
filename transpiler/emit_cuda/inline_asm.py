"""Spelling `tl.inline_asm_elementwise` (parse/semantic_inline_asm.py) as CUDA inline PTX.

Triton's asm text uses LLVM's escapes (`$0` for an operand, `$$` for a dollar sign); CUDA's uses GCC's (`%0`, and
`%%` for PTX's own `%` registers), so the text is translated once, and wrapped in a PTX scope `{ }` (registers an asm declares may then repeat, as
each group runs its own copy). Each group of `pack` registers of a thread
runs the asm once: every operand is packed into its registers as Triton's lowering packs it (element j of a
register in bits `j * width` and up, the group's first element lowest), the outputs are read back the same way.
Bits move through `tp::bitcast`, so a float passes an `r` register as its bit pattern, as in Triton. An asm with
`is_pure=False` is `asm volatile`.
"""
from __future__ import annotations

import re

from ..errors import NOT_YET, UnsupportedSyntaxError
from ..parse.semantic_inline_asm import elements_per_register
from . import cspell
from .emitter import Read

_WORD_CTYPE = {"h": "unsigned short", "r": "unsigned int", "l": "unsigned long long", "f": "float", "d": "double"}
_BITS_CTYPE = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}


def ptx_text(asm: str) -> str:
    """Triton's asm text as the body of a C string literal for CUDA's `asm(...)`."""
    text = "{\n" + asm.replace("%", "%%") + "\n}"       # a scope of its own: `.reg` names may repeat per group
    text = re.sub(r"\$(\$|\d+)", lambda m: "$" if m.group(1) == "$" else "%" + m.group(1), text)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _bits_of(dt, x: str) -> str:
    """The bit pattern of element `x` of type `dt`, as an unsigned integer of its width."""
    if dt.bits == 1:
        return f"(unsigned char)({x})"
    return f"tp::bitcast<{_BITS_CTYPE[dt.bits]}>({x})"


def _from_bits(dt, bits: str) -> str:
    if dt.bits == 1:
        return f"(({bits}) & 1u) != 0"
    return f"tp::bitcast<{cspell.ctype(dt)}>(({_BITS_CTYPE[dt.bits]})({bits}))"


def _pack_word(letter: str, dt, elements: list) -> str:
    """The C expression of one input register holding `elements` (of type `dt`)."""
    if letter in "fd":
        return elements[0]
    word = _WORD_CTYPE[letter]
    width = 8 if dt.bits == 1 else dt.bits
    parts = [f"(({word}){_bits_of(dt, x)} << {j * width})" if j else f"({word}){_bits_of(dt, x)}"
             for j, x in enumerate(elements)]
    return " | ".join(parts) if len(parts) > 1 else parts[0]


def _unpack_word(letter: str, dt, word: str, j: int) -> str:
    if letter in "fd":
        return word
    width = 8 if dt.bits == 1 else dt.bits
    return _from_bits(dt, f"{word} >> {j * width}" if j else word)


def asm_statements(op, element_of, store):
    """C statements running the asm once over one group: `element_of(i, j)` is the C expression of element j
    of the group in operand i, `store(j, expr)` the statement giving element j of this op's result."""
    a = op.attrs
    pack, letters = a["pack"], list(a["constraints"])
    outs, lines, out_words = [], [], []
    i = 0
    for k, dt in enumerate(a["result_dtypes"]):
        per = elements_per_register(dt, pack)
        words = []
        for w in range(pack // per):
            name = f"asm_out{i}"
            # another result's op reads the other results' registers: unused here by design
            unused = "" if k == a["result_index"] else "__attribute__((unused)) "
            lines.append(f"{unused}{_WORD_CTYPE[letters[i][1:]]} {name};")
            outs.append(f'"{letters[i]}"({name})')
            words.append((letters[i][1:], name))
            i += 1
        out_words.append((dt, per, words))
    ins = []
    for n, v in enumerate(op.operands):
        per = elements_per_register(v.dtype, pack)
        for w in range(pack // per):
            group = [element_of(n, w * per + j) for j in range(per)]
            ins.append(f'"{letters[i]}"({_pack_word(letters[i], v.dtype, group)})')
            i += 1
    qualifier = "asm" if a["is_pure"] else "asm volatile"
    lines.append(f'{qualifier}("{ptx_text(a["asm"])}" : {", ".join(outs)} : {", ".join(ins)});')
    dt, per, words = out_words[a["result_index"]]
    for e in range(pack):
        letter, name = words[e // per]
        lines.append(store(e, _unpack_word(letter, dt, name, e % per)))
    return lines


def emit(em, op, layout):
    """Declare the op's result and run the asm over every group of `pack` registers."""
    v, pack = op.result, op.attrs["pack"]
    if not v.shape:
        if pack != 1:
            raise UnsupportedSyntaxError(f"tl.inline_asm_elementwise on scalars with pack={pack} (pack=1 works)",
                                         loc=op.loc, kernel=em.kernel.name, refusal=NOT_YET)
        name = em.name_of(v, "asm")
        args = [em.scalar(o) for o in op.operands]
        body = asm_statements(op, lambda n, j: args[n], lambda j, expr: f"{name} = {expr};")
        em.write(f"{em.ctype(v)} {name};")
        em.write("{\n" + "\n".join("  " + line for line in body) + "\n}")
        em.bind(v, Read(scalar=name, ctype=em.ctype(v)), None)
        return
    regs = layout.num_regs
    if regs % pack:
        raise UnsupportedSyntaxError(
            f"tl.inline_asm_elementwise with pack={pack}: each thread holds {regs} element(s) of this block here, "
            f"not a multiple of {pack}", loc=op.loc, kernel=em.kernel.name,
            hint="use a block with more elements per thread, or fewer warps", refusal=NOT_YET)
    reads = [em.operand(o, layout) for o in op.operands]
    name = em.array_name(v, layout)
    body = asm_statements(op, lambda n, j: reads[n].at(f"r + {j}" if j else "r"),
                          lambda j, expr: f"{name}[r + {j}] = {expr};" if j else f"{name}[r] = {expr};")
    em.write(f"{em.ctype(v)} {name}[{regs}];")
    em.write(f"#pragma unroll\nfor (int r = 0; r < {regs}; r += {pack}) {{\n" +
             "\n".join("  " + line for line in body) + "\n}")
    em.bind(v, Read(array=name, ctype=em.ctype(v)), layout)
