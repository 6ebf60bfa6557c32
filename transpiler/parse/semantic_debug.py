"""Typing rules of the hints (multiple_of, max_contiguous, max_constancy, assume) and of the debugging builtins
(static_assert, static_print, device_print, device_assert, debug_barrier)."""
from __future__ import annotations

import builtins

from .. import dtypes
from ..errors import CompileTimeError, ShapeError
from .ir import OpKind, Value
from .semantic import RULES, const_value, is_const, logical, rule, to_value, unary_op


def _hint(kind):
    def apply(b, input, values):
        v = to_value(b, input)
        vals = const_value(b, values, f"tl.{kind}'s values")
        vals = (vals,) * builtins.max(1, len(v.shape)) if isinstance(vals, int) else tuple(vals)
        if len(vals) != builtins.max(1, len(v.shape)):
            raise b.error(ShapeError, f"tl.{kind} needs one value per dimension ({len(v.shape)}), got {list(vals)}")
        return b.emit(OpKind.HINT, [v], v.type, kind=kind, values=vals)
    return apply


RULES["multiple_of"] = _hint("multiple_of")
RULES["max_contiguous"] = _hint("max_contiguous")
RULES["max_constancy"] = _hint("max_constancy")


@rule("assume")
def _assume(b, cond):
    # An optimisation hint in Triton (llvm.assume); nothing here derives facts from it.
    return None


@rule("static_assert")
def _static_assert(b, cond, msg=""):
    cond = const_value(b, cond, "tl.static_assert's condition")
    if not cond:
        raise b.error(CompileTimeError, f"static_assert failed: {msg}" if msg else "static_assert failed")


@rule("static_print")
def _static_print(b, *values, sep=" ", end="\n"):
    print(*[triton_text(v) for v in values], sep=sep, end=end)


def triton_text(v):
    """What Triton's compiler prints of a value in `tl.static_print`: a block as `fp32[constexpr[4], constexpr[8]]`,
    a scalar as `int32[]`, a pointer type as `pointer<fp32>` (`const_pointer<fp32>`); other values as Python
    prints them."""
    if isinstance(v, Value):
        return f"{_triton_type_name(v.dtype)}[{', '.join(f'constexpr[{s}]' for s in v.shape)}]"
    if isinstance(v, dtypes.dtype):
        return _triton_type_name(v)
    return v


def _triton_type_name(dt):
    if dt.is_ptr():
        return f"{'const_' if dt.is_const() else ''}pointer<{_triton_type_name(dt.element_ty)}>"
    return str(dt)


@rule("device_print")
def _device_print(b, prefix, *args, hex=False):
    prefix = const_value(b, prefix, "device_print's prefix")
    values = [to_value(b, a) for a in args]
    b.emit(OpKind.DEVICE_PRINT, values, None, prefix=str(prefix), hex=bool(const_value(b, hex, "hex")))


@rule("device_assert")
def _device_assert(b, cond, msg="", mask=None):
    # Like Triton, assertions are compiled only in debug mode (transpiler/options.py); see docs/language.md.
    # Elements outside `mask` are not checked: the condition becomes `not mask or cond`.
    if not b.options.debug or mask is False or (is_const(cond) and bool(cond)):
        return None
    msg = const_value(b, msg, "device_assert's message")
    if mask is not None and mask is not True:
        cond = logical(b, "or", unary_op(b, "not", to_value(b, mask)), to_value(b, cond))
    b.emit(OpKind.DEVICE_ASSERT, [to_value(b, cond)], None, msg=str(msg))


@rule("debug_barrier")
def _debug_barrier(b):
    b.emit(OpKind.BARRIER, [], None)
