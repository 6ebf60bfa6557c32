"""Typing of the `libdevice.*` math functions (`transpiler/language/extra/libdevice.py`).

From the operands' dtypes, chooses the catalogue row as Triton's `extern_elementwise` does (`dispatch`):
Python numbers become scalars typed as Triton types literals, operands whose types no row accepts are
promoted among themselves (Triton's arithmetic promotion), all are broadcast to one shape, and the result has
the row's type. Emits one `elementwise` op named `libdevice.<name>`, spelled by `emit_cuda/libdevice.py`.
"""
from __future__ import annotations

from .. import dtypes
from ..errors import NOT_YET, DTypeError, UnsupportedSyntaxError, type_error_parts
from ..language.extra.libdevice import ARITY, REFUSED, dispatch
from .semantic import RULES, broadcast_pair, cast, elementwise, to_value


def _libdevice_rule(name):
    def apply(b, *args):
        if name in REFUSED:
            raise b.error(UnsupportedSyntaxError, f"libdevice.{name}: {REFUSED[name]}", refusal=NOT_YET)
        values = [to_value(b, a) for a in args]
        try:
            targets, _call, result = dispatch(name, [v.dtype.name for v in values])
        except TypeError as e:
            raise b.error(DTypeError, **type_error_parts(e), hint="convert the operands first, e.g. x.to(tl.float32)") from None
        values = [cast(b, v, dtypes.by_name(t)) for v, t in zip(values, targets)]
        for i in range(1, len(values)):
            values[0], values[i] = broadcast_pair(b, values[0], values[i])
        values = [broadcast_pair(b, v, values[0])[0] for v in values]
        return elementwise(b, f"libdevice.{name}", values, dtypes.by_name(result))
    return apply


for _name in ARITY:
    RULES[f"libdevice.{_name}"] = _libdevice_rule(_name)
