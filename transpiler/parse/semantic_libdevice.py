"""Typing of the `libdevice.*` math functions (`transpiler/language/extra/libdevice.py`).

From the operands' dtypes, decides the computation type (Triton's promotion of blocks and Python numbers)
and the result type: the operands' float type, `int1` for `isnan`/`isinf`, `int32` for `signbit`. As in
Triton, only fp32 and fp64 are accepted (and fp32 only for the `fast_` intrinsics). Emits one `elementwise`
op named `libdevice.<name>`, spelled by `emit_cuda/libdevice.py`.
"""
from __future__ import annotations

from .. import dtypes
from ..errors import DTypeError
from ..language.extra.libdevice import ARITY
from .semantic import RULES, binary_operands, broadcast_pair, cast, elementwise, to_value

_RESULT = {"isnan": dtypes.int1, "isinf": dtypes.int1, "signbit": dtypes.int32}


def _operands(b, name, args):
    """Promote all operands to one type (pairwise, as Triton's dispatch does) and broadcast them."""
    if len(args) == 1:
        values = [to_value(b, args[0])]
        dt = values[0].dtype
    else:
        first, _, dt = binary_operands(b, args[0], args[1])
        for extra in args[2:]:
            first, _, dt = binary_operands(b, first, extra)
        values = [cast(b, to_value(b, a, dt), dt) for a in args]
        for i in range(1, len(values)):
            values[0], values[i] = broadcast_pair(b, values[0], values[i])
        values = [broadcast_pair(b, v, values[0])[0] for v in values]
    allowed = (dtypes.float32,) if name.startswith("fast_") else (dtypes.float32, dtypes.float64)
    if dt not in allowed:
        kinds = " or ".join(repr(a) for a in allowed)
        raise b.error(DTypeError, f"libdevice.{name} takes {kinds} operands, not {dt!r}",
                      hint="convert first, e.g. x.to(tl.float32)")
    return values, dt


def _libdevice_rule(name):
    def apply(b, *args):
        values, dt = _operands(b, name, args)
        return elementwise(b, f"libdevice.{name}", values, _RESULT.get(name, dt))
    return apply


for _name in ARITY:
    RULES[f"libdevice.{_name}"] = _libdevice_rule(_name)
