"""The catalogue of elementwise math functions (`tl.exp`, `tl.sqrt`, ...): one row per function, read by every
room that needs to know something about it.

A row carries what each stage needs, so adding a function is adding a row (and a test):
- `typing`: its typing class, read by the typing rule (`parse/semantic_elementwise.py`): FLOAT (the operand must be a
  floating-point block or scalar; the result has its type) or FLOAT_OR_INT (integers too, e.g. `tl.abs`);
- `fp32`, `fp64`, `integer`: the C spelling over the operand `{a}` per element-type family, read by the emitter
  (`emit_cuda/cspell.py`); fp16 and bf16 compute in fp32 and round back once, as Triton does;
- `evaluate`: the NumPy evaluation in float64 (the interpreter rounds the result to the operand's type once);
- `derivative`: d f(x) / dx as `derivative(x, y, m)` for the autodiff transform, `y` the function's value at `x`
  and `m` a namespace of functions (`exp`, `sin`, `cos`, `where`, ...: NumPy's for a numeric check, an IR
  builder's in the transform); None where the function has no useful derivative.
- `flushes_subnormal_results`: the fp32 computation flushes results under 2**-126 to 0 (the interpreter too);
- `doc`: the docstring of the `tl` builtin (`language/__init__.py` declares one per row).
The libdevice functions have their own catalogue (`language/extra/libdevice.py`), shared the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

FLOAT = "float"                  # floating-point operands only
FLOAT_OR_INT = "float or int"    # integers too (the integer spelling applies)

_LN2 = math.log(2.0)


@dataclass(frozen=True)
class MathFunction:
    name: str
    doc: str
    typing: str
    fp32: str
    fp64: str
    evaluate: Callable
    derivative: Callable | None
    integer: str | None = None
    # the fp32 computation flushes a result below the smallest normal float to 0 (Triton's tl.exp2 is
    # ex2.approx.ftz.f32): the interpreter flushes it too, for fp32 and the 16-bit types computed in fp32
    flushes_subnormal_results: bool = False


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sign(x, y, m):
    return m.where(x < 0, -1.0, 1.0)


def _zero(x, y, m):
    return x * 0.0


FUNCTIONS = [
    MathFunction("exp", "e ** x", FLOAT, "__expf({a})", "exp({a})", np.exp, lambda x, y, m: y),
    MathFunction("exp2", "2 ** x", FLOAT, "tp::exp2_ftz({a})", "exp2({a})", np.exp2, lambda x, y, m: y * _LN2,
                 flushes_subnormal_results=True),
    MathFunction("log", "Natural logarithm.", FLOAT, "logf({a})", "log({a})", np.log, lambda x, y, m: 1.0 / x),
    MathFunction("log2", "Base-2 logarithm.", FLOAT, "log2f({a})", "log2({a})", np.log2,
                 lambda x, y, m: 1.0 / (x * _LN2)),
    MathFunction("sqrt", "Square root (correctly rounded).", FLOAT, "sqrtf({a})", "sqrt({a})", np.sqrt,
                 lambda x, y, m: 0.5 / y),
    MathFunction("sqrt_rn", "Square root, round to nearest.", FLOAT, "__fsqrt_rn({a})", "__dsqrt_rn({a})", np.sqrt,
                 lambda x, y, m: 0.5 / y),
    MathFunction("rsqrt", "1 / sqrt(x).", FLOAT, "rsqrtf({a})", "rsqrt({a})", lambda v: 1.0 / np.sqrt(v),
                 lambda x, y, m: -0.5 * y / x),
    MathFunction("abs", "Absolute value.", FLOAT_OR_INT, "fabsf({a})", "fabs({a})", np.abs, _sign,
                 integer="tp::iabs({a})"),
    MathFunction("sin", "Sine.", FLOAT, "sinf({a})", "sin({a})", np.sin, lambda x, y, m: m.cos(x)),
    MathFunction("cos", "Cosine.", FLOAT, "cosf({a})", "cos({a})", np.cos, lambda x, y, m: 0.0 - m.sin(x)),
    MathFunction("erf", "Error function.", FLOAT, "erff({a})", "erf({a})", _erf,
                 lambda x, y, m: (2.0 / math.sqrt(math.pi)) * m.exp(0.0 - x * x)),
    MathFunction("floor", "Round down.", FLOAT, "floorf({a})", "floor({a})", np.floor, _zero),
    MathFunction("ceil", "Round up.", FLOAT, "ceilf({a})", "ceil({a})", np.ceil, _zero),
    MathFunction("sigmoid", "1 / (1 + exp(-x)).", FLOAT, "tp::div_full(1.0f, 1.0f + __expf(-({a})))",
                 "1.0 / (1.0 + exp(-({a})))", lambda v: 1.0 / (1.0 + np.exp(-v)), lambda x, y, m: y * (1.0 - y)),
]

BY_NAME = {f.name: f for f in FUNCTIONS}

__all__ = ["MathFunction", "FUNCTIONS", "BY_NAME", "FLOAT", "FLOAT_OR_INT"]
