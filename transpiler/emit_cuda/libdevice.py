"""CUDA spellings of the `libdevice.*` math functions: the CUDA math library call each one becomes.

Most are the C function of the same name (`tanhf` for fp32, `tanh` for fp64); the table below lists the
rest. `cspell.elementwise_expr` looks these up like its own float functions.
"""
from __future__ import annotations

from ..language.extra.libdevice import ARITY

_OPERANDS = {1: "{a}", 2: "{a}, {b}", 3: "{a}, {b}, {c}"}

_SPECIAL = {
    # name: (fp32 spelling, fp64 spelling)
    "isnan": ("isnan({a})", "isnan({a})"),
    "isinf": ("isinf({a})", "isinf({a})"),
    "signbit": ("(signbit({a}) ? 1 : 0)", "(signbit({a}) ? 1 : 0)"),
    "div_rn": ("__fdiv_rn({a}, {b})", "__ddiv_rn({a}, {b})"),
    "fast_expf": ("__expf({a})", None),
    "fast_logf": ("__logf({a})", None),
    "fast_log2f": ("__log2f({a})", None),
    "fast_exp10f": ("__exp10f({a})", None),
    "fast_sinf": ("__sinf({a})", None),
    "fast_cosf": ("__cosf({a})", None),
    "fast_tanf": ("__tanf({a})", None),
    "fast_dividef": ("__fdividef({a}, {b})", None),
    "fast_powf": ("__powf({a}, {b})", None),
}


def _spelling(name: str, arity: int):
    if name in _SPECIAL:
        return _SPECIAL[name]
    operands = _OPERANDS[arity]
    return f"{name}f({operands})", f"{name}({operands})"


LIBDEVICE_SPELLINGS = {f"libdevice.{name}": _spelling(name, arity) for name, arity in ARITY.items()}
