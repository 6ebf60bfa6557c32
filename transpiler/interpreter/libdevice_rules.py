"""Interpreter rules for the `libdevice.*` math functions.

The catalogue row is chosen as the compiler chooses it (`language/extra/libdevice.py`, `dispatch`, with the
same promotion of operands), then evaluated by `libdevice_numeric.py`: float functions in float64 rounded once
to the result type, the rest exactly. `round` rounds halves away from zero (C's `round`), `rint`/`nearbyint`
to even; the `fast_` intrinsics are computed exactly here (the GPU's are approximate).
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, UnsupportedSyntaxError
from ..language.extra.libdevice import ARITY, REFUSED, dispatch
from .arith import cast_tensor
from .libdevice_numeric import EXACT, FLOAT64
from .location import error
from .math_rules import _broadcast_all, round_from_wide
from .registry import rule
from .tensor import Tensor, to_tensor


def _evaluate(name, result: dt.dtype, tensors):
    arrays = [t.data for t in tensors]
    if name == "abs" and result.is_int():
        return EXACT["abs_int"](result, *arrays)
    if name in EXACT:
        return EXACT[name](result, *arrays)
    values = FLOAT64[name](*[a.astype(np.float64) for a in arrays])
    return round_from_wide(values, result)


def _libdevice_rule(name: str, arity: int):
    def apply(*args):
        what = f"libdevice.{name}"
        if name in REFUSED:
            raise error(UnsupportedSyntaxError, f"{what} is not supported yet: {REFUSED[name]}")
        tensors = [to_tensor(a, f"an operand of {what}") for a in args]
        try:
            targets, _call, result = dispatch(name, [t.dtype.name for t in tensors])
        except TypeError as e:
            raise error(DTypeError, str(e), hint="convert the operands first, e.g. x.to(tl.float32)") from None
        tensors = _broadcast_all(*[cast_tensor(t, dt.by_name(k)) for t, k in zip(tensors, targets)])
        result = dt.by_name(result)
        with np.errstate(all="ignore"):
            data = _evaluate(name, result, tensors)
        return Tensor(np.asarray(data).astype(result.numpy, copy=False), result)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"libdevice.{name}, evaluated as libdevice_numeric.py says."
    apply.__signature__ = inspect.Signature(
        [inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(arity)])
    return rule(f"libdevice.{name}")(apply)


for _name, _arity in ARITY.items():
    _libdevice_rule(_name, _arity)
