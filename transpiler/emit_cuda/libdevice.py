"""CUDA spellings of the `libdevice.*` math functions: the CUDA math-library call each one becomes.

The call is the catalogue row (`language/extra/libdevice.py`, `SIGNATURES`) of the operands' types, which the
typing rule has already converted to a row's types; `{0}`, `{1}` ... are the operand expressions.
"""
from __future__ import annotations

from ..language.extra.libdevice import SIGNATURES


def libdevice_call(fn: str, operand_dtypes, args) -> str:
    """The C expression of libdevice function `fn` (`"libdevice.tanh"`) on operand expressions `args`."""
    call, _result = SIGNATURES[fn[len("libdevice."):]][tuple(d.name for d in operand_dtypes)]
    return call.format(*args)
