"""Interpreter rules for the `libdevice.*` math functions, in float64 NumPy rounded once to the operand type.

Operands are promoted together as the compiler's typing rule does (`parse/semantic_libdevice.py`) and must be
fp32 or fp64 (fp32 only for the `fast_` intrinsics). `round` rounds halves away from zero (C's `round`),
`rint`/`nearbyint` to even; the `fast_` intrinsics are computed exactly here (the GPU's are approximate).
"""
from __future__ import annotations

import inspect
import math

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError
from ..language.extra.libdevice import ARITY
from .arith import cast_tensor, check_types
from .location import error
from .math_rules import _broadcast_all, round_from_wide
from .registry import rule
from .tensor import Tensor, to_tensor

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _erfinv(y):
    """Inverse error function: a rough start refined by Newton steps on math.erf (float64 accurate)."""
    y = np.asarray(y, np.float64)
    a = 0.147
    ln = np.log1p(-y * y)
    t = 2 / (np.pi * a) + ln / 2
    x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
    for _ in range(4):
        x = x - (_erf(x) - y) / (2 / np.sqrt(np.pi) * np.exp(-x * x))
    return np.where(np.abs(y) == 1, np.sign(y) * np.inf, x)


_NUMPY = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf, "erfc": _erfc, "erfinv": _erfinv, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "rint": np.rint, "nearbyint": np.rint, "fabs": np.abs, "isnan": np.isnan, "isinf": np.isinf,
    "signbit": lambda x: np.signbit(x).astype(np.int32), "fast_expf": np.exp, "fast_logf": np.log,
    "fast_log2f": np.log2, "fast_exp10f": lambda x: np.power(10.0, x), "fast_sinf": np.sin, "fast_cosf": np.cos,
    "fast_tanf": np.tan, "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "fmod": np.fmod,
    "fmax": np.fmax, "fmin": np.fmin, "copysign": np.copysign, "fdim": lambda x, y: np.maximum(x - y, 0.0),
    "div_rn": np.divide, "fast_dividef": np.divide, "fast_powf": np.power, "fma": lambda x, y, z: x * y + z,
}
_RESULT = {"isnan": dt.int1, "isinf": dt.int1, "signbit": dt.int32}


def _operands(name, args):
    what = f"libdevice.{name}"
    tensors = [to_tensor(args[0], f"the operand of {what}")]
    if len(args) > 1:
        first = args[0]
        for other in args[1:]:
            first, _ = check_types(first, other, what)
        dtype = first.dtype
        tensors = _broadcast_all(*[cast_tensor(check_types(a, first, what)[0], dtype) for a in args])
    dtype = tensors[0].dtype
    allowed = (dt.float32,) if name.startswith("fast_") else (dt.float32, dt.float64)
    if dtype not in allowed:
        raise error(DTypeError, f"{what} takes {' or '.join(map(repr, allowed))} operands, not {dtype!r}",
                    hint="convert first, e.g. x.to(tl.float32)")
    return tensors, dtype


def _libdevice_rule(name: str, arity: int):
    fn = _NUMPY[name]

    def apply(*args):
        tensors, dtype = _operands(name, args)
        with np.errstate(all="ignore"):
            result = fn(*[t.data.astype(np.float64) for t in tensors])
        if name in _RESULT:
            return Tensor(np.asarray(result).astype(_RESULT[name].numpy), _RESULT[name])
        return Tensor(round_from_wide(result, dtype), dtype)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"libdevice.{name}: float64 NumPy, rounded once to the operand type."
    apply.__signature__ = inspect.Signature(
        [inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(arity)])
    return rule(f"libdevice.{name}")(apply)


for _name, _arity in ARITY.items():
    _libdevice_rule(_name, _arity)
