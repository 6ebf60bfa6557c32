"""Where in the kernel (source line, program id) an interpreter error happened, and how to raise one saying so.

The interpreter runs the kernel as Python, so the kernel line that caused a fault is simply the innermost
stack frame that is not part of the interpreter or of `transpiler.language` (the builtin trampolines).
Helpers called from a kernel are plain Python functions too, so the line found is the helper's line,
just as the compiled path reports the line inside an inlined helper.
"""
from __future__ import annotations

import inspect

from ..errors import Refusal, SourceLocation, TranspilerError

# Frames from these packages are machinery between the kernel and the fault; skip them (the typing rules of
# `transpiler.parse` run inside builtin calls too, `eager.py`).
_MACHINERY = ("transpiler.interpreter", "transpiler.language", "transpiler.parse")


def _is_machinery(frame) -> bool:
    module = frame.f_globals.get("__name__", "")
    return module == "transpiler.language" or module.startswith(_MACHINERY)


def _column(frame) -> int:
    """0-based column of the expression being executed in `frame` (Python 3.11+), else 0."""
    try:
        positions = list(frame.f_code.co_positions())
        _line, _end_line, col, _end_col = positions[frame.f_lasti // 2]
        return col or 0
    except (AttributeError, IndexError, TypeError):
        return 0


def kernel_location() -> SourceLocation | None:
    """The source location of the innermost kernel (or helper) frame on the current stack."""
    frame = inspect.currentframe()
    try:
        while frame is not None and _is_machinery(frame):
            frame = frame.f_back
        if frame is None:
            return None
        code = frame.f_code
        return SourceLocation(code.co_filename, frame.f_lineno, _column(frame), code.co_name)
    finally:
        del frame  # break the reference cycle frame -> locals -> frame


def program_text() -> str:
    """' in program (x, y, z)' for the program the interpreter is running, or '' outside a run."""
    from ..language import core  # local: keeps this module free of import-order constraints
    pid = getattr(core.current_interpreter(), "program_id", None)
    return f" in program {pid}" if pid is not None else ""


def error(cls: type[TranspilerError], message: str, hint: str | None = None,
          refusal: Refusal | None = None) -> TranspilerError:
    """Build (not raise) an error of class `cls` located at the current kernel line (`refusal`: its kind, for
    a refusal)."""
    return cls(message, loc=kernel_location(), hint=hint, refusal=refusal)


def attach_location(err: TranspilerError) -> TranspilerError:
    """Give `err` the current kernel line if it was raised without one."""
    if err.loc is None:
        err.loc = kernel_location()
        err.args = (err._format(),)
    return err
