"""`libdevice` math functions, as Triton users import them (`from triton.language.extra import libdevice`).

Each function is a builtin named `libdevice.<name>` taking fp32 or fp64 blocks (as Triton's, which dispatch
only on those: convert fp16/bf16 first). The compiler spells them with the CUDA math library
(`emit_cuda/libdevice.py`), the interpreter with NumPy in float64 (`interpreter/libdevice_rules.py`); the
typing rule is `parse/semantic_libdevice.py`. `ARITY` lists every function this module declares.
"""
from __future__ import annotations

import inspect

from ..core import builtin

# name -> number of operands. Functions with a `fast_` prefix are CUDA's fast intrinsics (fp32 only).
ARITY = {
    **dict.fromkeys(["exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt",
                     "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                     "atanh", "erf", "erfc", "erfinv", "floor", "ceil", "trunc", "round", "rint", "nearbyint",
                     "fabs", "isnan", "isinf", "signbit", "fast_expf", "fast_logf", "fast_log2f", "fast_exp10f",
                     "fast_sinf", "fast_cosf", "fast_tanf"], 1),
    **dict.fromkeys(["pow", "atan2", "hypot", "fmod", "fmax", "fmin", "copysign", "fdim", "div_rn",
                     "fast_dividef", "fast_powf"], 2),
    "fma": 3,
}


def _declare(name: str, arity: int):
    def fn(*args):
        pass

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(arity)])
    fn.__doc__ = f"CUDA libdevice `{name}` ({arity} operand{'s' if arity > 1 else ''}), elementwise."
    return builtin(fn, name=f"libdevice.{name}")


for _name, _arity in ARITY.items():
    globals()[_name] = _declare(_name, _arity)

__all__ = list(ARITY)
