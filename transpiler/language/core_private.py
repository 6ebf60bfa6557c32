"""Names of Triton's `triton.language.core` that library code outside Triton calls with a leading underscore
(FlagGems' cummin / cummax / argmax write `core._promote_reduction_input(x)` and decorate their scan helpers
with `@core._add_scan_docstr("cummin")`). `core.py` resolves them here on first use, as it resolves
`core.associative_scan` and the other public names to `transpiler.language`.
"""
from __future__ import annotations

import transpiler.language as tl

from .core import helper


def _docstring_decorator(name):
    """Triton's docstring decorators (`_add_reduction_docstr`, `_add_scan_docstr`, ...) only fill in
    documentation; the function itself is unchanged."""

    def decorate(fn):
        return fn
    return decorate


_add_reduction_docstr = _add_scan_docstr = _add_math_1arg_docstr = _add_math_2arg_docstr = \
    _add_math_3arg_docstr = lambda name, *args, **kwargs: _docstring_decorator(name)


@helper
def _promote_reduction_input(t):
    """bfloat16 computed as float32 (Triton: the hardware has no bf16 max, min or compare); others unchanged."""
    if t.dtype == tl.bfloat16:
        return t.to(tl.float32)
    return t


PRIVATE_NAMES = ("_add_reduction_docstr", "_add_scan_docstr", "_add_math_1arg_docstr", "_add_math_2arg_docstr",
                 "_add_math_3arg_docstr", "_promote_reduction_input")
