"""Typing of `tl.inline_asm_elementwise`: PTX run once per element of the broadcast operands.

Decides, from the constraint string and the dtypes, what each `$N` of the assembly is: the outputs first, then
one register per operand, each of a width the constraint letter fixes (`h` 16, `r` 32, `l` 64 bits, `f` fp32,
`d` fp64); an element's dtype times `pack` must fit in it (integers in its low bits, pointers in `l`). Each output is one `elementwise` op of function
`inline_asm` whose attributes hold the assembly, the letters and which output it is (`emit_cuda/inline_asm.py`
spells it). With `pack` > 1 Triton puts `pack` neighbouring elements in one register and relies on the
assembly treating them independently; we put one element in the lowest lanes and zeros in the others, which
gives the same results under that contract (more instructions, not different values).
"""
from __future__ import annotations

from .. import dtypes
from ..errors import CompileTimeError, DTypeError
from .ir import Type
from .semantic import broadcast_pair, const_value, rule, to_value

# Constraint letter -> (register width in bits, whether it is a float register).
REGISTERS = {"h": (16, False), "r": (32, False), "l": (64, False), "f": (32, True), "d": (64, True)}


def _check_register(b, letter, dt, pack, what):
    if letter not in REGISTERS:
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: constraint '{letter}' for {what} is not "
                      f"supported yet (use one of {', '.join(REGISTERS)})")
    bits, is_float = REGISTERS[letter]
    if dt is dtypes.int1:
        raise b.error(DTypeError, f"tl.inline_asm_elementwise: {what} is a boolean block; convert it first")
    # Integers narrower than the register sit in its low bits (Triton: an int8 result of an "=r" at pack=1).
    wide = dt.bits * pack > bits if not is_float else dt.bits != bits
    if wide or (is_float and (pack != 1 or not dt.is_floating())):
        raise b.error(DTypeError, f"tl.inline_asm_elementwise: {what} is {dt!r} with pack={pack}, but its "
                      f"constraint '{letter}' is a {bits}-bit {'float' if is_float else 'integer'} register")


@rule("inline_asm_elementwise")
def _inline_asm_elementwise(b, asm, constraints, args, dtype, is_pure, pack):
    asm = const_value(b, asm, "the assembly")
    constraints = const_value(b, constraints, "the constraints")
    dtype = const_value(b, dtype, "dtype")
    pack = const_value(b, pack, "pack")
    pure = bool(const_value(b, is_pure, "is_pure"))
    if pack not in (1, 2, 4):
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: pack must be 1, 2 or 4, not {pack}")
    several = isinstance(dtype, (tuple, list))
    out_dtypes = list(dtype) if several else [dtype]
    for dt in out_dtypes:
        if not isinstance(dt, dtypes.dtype) or dt.is_ptr():
            raise b.error(DTypeError, f"tl.inline_asm_elementwise: dtype must be an element type, not {dt!r}")
    values = [to_value(b, a) for a in (args if isinstance(args, (tuple, list)) else [args])]
    letters = [c.strip() for c in str(constraints).split(",")]
    outs = len(out_dtypes)
    if len(letters) != outs + len(values) or not all(c.startswith("=") for c in letters[:outs]):
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: constraints {constraints!r} must name "
                      f"{outs} output(s) ('=...') and {len(values)} operand(s)")
    for i, dt in enumerate(out_dtypes):
        _check_register(b, letters[i][1:], dt, pack, f"output {i}")
    for i, (letter, v) in enumerate(zip(letters[outs:], values)):
        _check_register(b, letter, v.dtype, pack, f"operand {i}")
    for i in range(1, len(values)):          # every operand broadcast to one shape, as Triton's does
        values[0], values[i] = broadcast_pair(b, values[0], values[i])
    for i in range(1, len(values)):
        values[0], values[i] = broadcast_pair(b, values[0], values[i])
    shape = values[0].shape if values else ()
    results = [b.emit("elementwise", values, Type(dt, shape), fn="inline_asm", asm=str(asm),
                      constraints=tuple(letters), pure=pure, output=i, outputs=tuple(out_dtypes))
               for i, dt in enumerate(out_dtypes)]
    return tuple(results) if several else results[0]

