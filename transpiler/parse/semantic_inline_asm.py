"""`tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack)`, typed as Triton 3.6 types it.

The arguments are broadcast to one shape and keep their types (no promotion); the result has `dtype` (or one
result per entry of a tuple of dtypes) in that shape. The asm runs once per `pack` elements a thread holds:
narrow operands are packed `32 // bits` to a 32-bit register (at most `pack`), as Triton's lowering packs
them, and the constraint string lists the registers, outputs first (`=r`, `=h`, `=l`, `=f`, `=d`), then the
inputs in argument order. The number of constraints and their widths are checked here against that packing,
so a mismatch is a located error instead of C++ that does not compile.

Each result is one `elementwise` op with `fn="inline_asm"` (its attributes carry the asm, the constraints, the
packing and which output it is); a kernel using two results of one asm runs it twice (pure asm only: an asm
with effects and several results is refused). `emit_cuda/inline_asm.py` spells it as CUDA inline PTX.
"""
from __future__ import annotations

from .. import dtypes
from ..errors import NOT_YET, CompileTimeError, DTypeError, UnsupportedSyntaxError
from .ir import OpKind, Type
from .semantic import broadcast_pair, const_value, rule, to_value

# constraint letter -> register width in bits (CUDA's inline-asm letters, which are LLVM's for NVPTX)
REGISTER_BITS = {"h": 16, "r": 32, "l": 64, "f": 32, "d": 64}


def elements_per_register(dt, pack: int) -> int:
    """How many elements of `dt` share one register (Triton packs narrow types into 32 bits)."""
    return min(max(32 // dt.bits, 1), pack)


def _check_constraints(b, constraints, result_dts, arg_dts, pack):
    letters = [c.strip() for c in constraints.split(",")] if constraints.strip() else []
    wanted = [(dt, "=") for dt in result_dts] + [(dt, "") for dt in arg_dts]
    expected = sum(pack // elements_per_register(dt, pack) for dt, _ in wanted)
    if len(letters) != expected:
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: the constraints {constraints!r} name "
                      f"{len(letters)} registers, but {len(result_dts)} result(s) and {len(arg_dts)} argument(s) "
                      f"with pack={pack} use {expected}", hint="outputs first (=r, =h, =l, =f, =d), then one per "
                      "input register; narrow types share 32-bit registers")
    i = 0
    for dt, prefix in wanted:
        k = elements_per_register(dt, pack)
        for _ in range(pack // k):
            letter = letters[i]
            i += 1
            body = letter[1:] if prefix else letter
            if prefix and not letter.startswith("="):
                raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: output constraint {letter!r} must "
                              "start with '='")
            if not prefix and letter.startswith("="):
                raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: input constraint {letter!r} comes "
                              "after the outputs, without '='")
            if body not in REGISTER_BITS:
                raise b.error(UnsupportedSyntaxError, f"tl.inline_asm_elementwise: constraint {letter!r} (supported: "
                              f"{', '.join(REGISTER_BITS)})", refusal=NOT_YET)
            if k * dt.bits > REGISTER_BITS[body] or (body in "fd" and (k != 1 or dt.bits != REGISTER_BITS[body]
                                                                     or not dt.is_floating())):
                raise b.error(DTypeError, f"tl.inline_asm_elementwise: a {REGISTER_BITS[body]}-bit register "
                              f"{letter!r} cannot hold {k} x {dt!r}")


@rule("inline_asm_elementwise")
def _inline_asm_elementwise(b, asm, constraints, args, dtype, is_pure, pack):
    asm = const_value(b, asm, "asm")
    constraints = const_value(b, constraints, "constraints")
    pack = const_value(b, pack, "pack")
    is_pure = bool(const_value(b, is_pure, "is_pure"))
    dtype = const_value(b, dtype, "dtype")
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise b.error(CompileTimeError, "tl.inline_asm_elementwise needs the asm and the constraints as strings")
    if not isinstance(pack, int) or pack < 1 or pack & (pack - 1):
        raise b.error(CompileTimeError, f"tl.inline_asm_elementwise: pack must be a power of two, got {pack!r}")
    multiple = isinstance(dtype, (tuple, list))
    result_dts = tuple(dtype) if multiple else (dtype,)
    if not result_dts or not all(isinstance(d, dtypes.dtype) and not d.is_ptr() for d in result_dts):
        raise b.error(DTypeError, f"tl.inline_asm_elementwise: dtype must be a type or a tuple of types, not {dtype!r}")
    values = [to_value(b, a) for a in (args if isinstance(args, (tuple, list)) else [args])]
    for v in values:
        if v.dtype.is_ptr():
            raise b.error(UnsupportedSyntaxError, "tl.inline_asm_elementwise of pointers", refusal=NOT_YET)
    for i in range(len(values)):
        for j in range(len(values)):
            values[i], values[j] = broadcast_pair(b, values[i], values[j])
    shape = values[0].shape if values else ()
    if multiple and len(result_dts) > 1 and not is_pure:
        raise b.error(UnsupportedSyntaxError, "tl.inline_asm_elementwise with several results and is_pure=False "
                      "(each result runs the asm once)", refusal=NOT_YET)
    if pack > 1 and any(dt is dtypes.int1 for dt in result_dts + tuple(v.dtype for v in values)):
        raise b.error(UnsupportedSyntaxError, "tl.inline_asm_elementwise with boolean operands or results and "
                      "pack > 1", hint="convert them to int8 first", refusal=NOT_YET)
    _check_constraints(b, constraints, result_dts, [v.dtype for v in values], pack)
    results = [b.emit(OpKind.ELEMENTWISE, list(values), Type(dt, shape), fn="inline_asm", asm=asm,
                      constraints=tuple(c.strip() for c in constraints.split(",")), pack=pack,
                      result_dtypes=result_dts, result_index=k, is_pure=is_pure)
               for k, dt in enumerate(result_dts)]
    return tuple(results) if multiple else results[0]

