"""The interpreter's own rules: iteration (`tl.range`, `tl.static_range` as Python ranges), `tl.static_print`
(of values, in every program, as Triton's interpreter prints them) and `tl.device_assert` (checked in every run:
compiled kernels check it only in debug mode, whose int32 overflow checks the interpreter does not make).
`tl.device_print` is the typing rule's op, evaluated (`evaluate.py`).

One function per builtin, registered by builtin name, with the builtin's exact signature (a test checks
this). Every other builtin is the compiler's typing rule, evaluated (`registry.py`).
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as dt
from ..errors import CompileTimeError, DTypeError, InterpreterError
from ..language import core
from ..parse.semantic_debug import triton_text
from .location import error, program_text
from .registry import rule
from .tensor import Tensor, unwrap

def _interpreter():
    return core.current_interpreter()


# ---- iteration --------------------------------------------------------------------------------------------


def _loop_bound(value, what: str, runtime_ok: bool) -> int:
    value = unwrap(value)
    if isinstance(value, Tensor):
        if not runtime_ok:
            raise error(CompileTimeError, f"{what} bounds must be constexpr, got a runtime {value.dtype!r} value",
                        hint="use tl.range for runtime bounds")
        return value.__index__()
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise error(DTypeError, f"{what} bounds must be integers, got {value!r}")


def _python_range(what: str, arg1, arg2, step, runtime_ok: bool) -> range:
    start, end = (0, arg1) if unwrap(arg2) is None else (arg1, arg2)
    step = 1 if unwrap(step) is None else step
    start, end, step = (_loop_bound(v, what, runtime_ok) for v in (start, end, step))
    if step == 0:
        raise error(CompileTimeError, f"{what}: step must not be zero")
    return builtins.range(start, end, step)


@rule("range")
def range_(arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, disallow_acc_multi_buffer=False,
           flatten=False, warp_specialize=False):
    return _python_range("tl.range", arg1, arg2, step, runtime_ok=True)


@rule("static_range")
def static_range(arg1, arg2=None, step=None):
    return _python_range("tl.static_range", arg1, arg2, step, runtime_ok=False)


# ---- debugging --------------------------------------------------------------------------------------------


@rule("static_print")
def static_print(*values, sep=" ", end="\n"):
    # The values, in every program, as Triton's interpreter prints them (the compiler prints types, once);
    # dtypes in Triton's spelling, as the compiler prints them.
    print(*(triton_text(v) if isinstance(v, dt.dtype) else v for v in map(unwrap, values)), sep=sep, end=end)


@rule("device_assert")
def device_assert(cond, msg="", mask=None):
    cond, mask = unwrap(cond), unwrap(mask)
    ok = cond.data != 0 if isinstance(cond, Tensor) else np.asarray(bool(cond))
    if mask is not None:             # elements outside the mask are not checked
        checked = mask.data != 0 if isinstance(mask, Tensor) else np.asarray(bool(mask))
        ok = ok | ~checked
    if ok.all():
        return
    lanes = [tuple(int(i) for i in lane) for lane in np.argwhere(~ok)[:5]] if ok.shape else []
    where = f" at lanes {lanes}" if lanes else ""
    raise error(InterpreterError, f"device_assert failed{program_text()}{where}: {unwrap(msg)}")
