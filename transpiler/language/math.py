"""`tl.math`: Triton's `triton.language.math` (the core math builtins), and the older Triton spelling in which
`tl.math` held the libdevice functions (`tl.math.tanh`, `tl.math.pow`): any other name is the libdevice
function of that name, so kernels written for either version compile."""
from __future__ import annotations

from . import (abs, ceil, cdiv, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2, rsqrt, sin,  # noqa: F401
               sqrt, sqrt_rn, umulhi)
from .extra import libdevice as _libdevice

_CORE = ["abs", "ceil", "cdiv", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2",
         "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi"]


def __getattr__(name):
    if name in _libdevice.ARITY:
        return getattr(_libdevice, name)
    raise AttributeError(f"module 'transpiler.language.math' has no attribute '{name}'")


def __dir__():
    return sorted(set(_CORE) | set(_libdevice.ARITY))


__all__ = _CORE + [n for n in _libdevice.ARITY if n not in _CORE]
