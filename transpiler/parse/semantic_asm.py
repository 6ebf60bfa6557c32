"""Typing of `tl.inline_asm_elementwise`: PTX run once per element of the broadcast operands.

Decides, from the constraint string and the dtypes, what each `$N` of the assembly is: the output first, then
one register per operand, each of a width the constraint letter fixes (`h` 16, `r` 32, `l` 64 bits, `f` fp32,
`d` fp64) and its dtype must have; the op is an `elementwise` of function `inline_asm` whose attributes hold
the assembly and the letters (`emit_cuda/inline_asm.py` spells it). Not supported yet, and refused here:
`pack` other than 1 (several narrow elements in one register), several outputs, operands of 8 bits or fewer.
"""
from __future__ import annotations

from .. import dtypes
from ..errors import CompileTimeError, DTypeError
from .ir import Type
from .semantic import broadcast_pair, const_value, rule, to_value

# Constraint letter -> (register width in bits, whether it is a float register).
REGISTERS = {"h": (16, False), "r": (32, False), "l": (64, False), "f": (32, True), "d": (64, True)}


def _check_register(b, letter, dt, what):
    if letter not in REGISTERS:
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: constraint '{letter}' for {what} is not "
                      f"supported yet (use one of {', '.join(REGISTERS)})")
    bits, is_float = REGISTERS[letter]
    if dt.bits <= 8 or dt is dtypes.int1:
        raise b.error(DTypeError, f"tl.inline_asm_elementwise: {what} is {dt!r}; operands of 8 bits or fewer "
                      "(packed several to a register) are not supported yet")
    if dt.bits != bits or (is_float and not dt.is_floating()):
        raise b.error(DTypeError, f"tl.inline_asm_elementwise: {what} is {dt!r}, but its constraint '{letter}' "
                      f"is a {bits}-bit {'float' if is_float else 'integer'} register")


@rule("inline_asm_elementwise")
def _inline_asm_elementwise(b, asm, constraints, args, dtype, is_pure, pack):
    asm = const_value(b, asm, "the assembly")
    constraints = const_value(b, constraints, "the constraints")
    dtype = const_value(b, dtype, "dtype")
    pack = const_value(b, pack, "pack")
    pure = bool(const_value(b, is_pure, "is_pure"))
    if pack != 1:
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise with pack={pack} is not supported yet (pack=1 is)")
    if isinstance(dtype, (tuple, list)):
        if len(dtype) != 1:
            raise b.error(CompileTimeError, "tl.inline_asm_elementwise with several outputs is not supported yet")
        dtype = dtype[0]
    if not isinstance(dtype, dtypes.dtype) or dtype.is_ptr():
        raise b.error(DTypeError, f"tl.inline_asm_elementwise: dtype must be an element type, not {dtype!r}")
    values = [to_value(b, a) for a in (args if isinstance(args, (tuple, list)) else [args])]
    letters = [c.strip() for c in str(constraints).split(",")]
    if len(letters) != 1 + len(values) or not letters[0].startswith("="):
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: constraints {constraints!r} must name one "
                      f"output ('=...') and {len(values)} operand(s)")
    _check_register(b, letters[0][1:], dtype, "the output")
    for i, (letter, v) in enumerate(zip(letters[1:], values)):
        _check_register(b, letter, v.dtype, f"operand {i}")
    for i in range(1, len(values)):          # every operand broadcast to one shape, as Triton's does
        values[0], values[i] = broadcast_pair(b, values[0], values[i])
    for i in range(1, len(values)):
        values[0], values[i] = broadcast_pair(b, values[0], values[i])
    shape = values[0].shape if values else ()
    return b.emit("elementwise", values, Type(dtype, shape), fn="inline_asm", asm=str(asm),
                  constraints=tuple(letters), pure=pure)

