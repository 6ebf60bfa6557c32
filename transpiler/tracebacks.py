"""Tracebacks that end at the user's line: our own frames cut out of an error's traceback at the API boundary.

A `TranspilerError` already names the kernel's file, line and column; the 20-odd frames of parsing, analysis
and launching beneath the user's call only bury it. `user_facing(exc)` relinks the traceback without the frames
of this package (`transpiler/` and the top-level `runtime/` folder it maps), so Python prints the user's frames
and then the message. `TRANSPILER_DEBUG=1` keeps every frame (for us, and for bug reports).
"""
from __future__ import annotations

import functools
import os
import types
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# The package's own folders: transpiler/ and, in a source checkout, the runtime/ and templates/ beside it.
_INTERNAL_FOLDERS = tuple(str(p) + os.sep for p in (_PACKAGE, _PACKAGE.parent / "runtime"))


def debugging() -> bool:
    return os.environ.get("TRANSPILER_DEBUG") == "1"


def is_internal(filename: str) -> bool:
    try:
        path = os.path.realpath(filename)
    except (TypeError, ValueError):
        return False
    # The shipped examples are the user's code as much as any kernel file.
    return path.startswith(_INTERNAL_FOLDERS) and os.sep + "examples" + os.sep not in path[len(str(_PACKAGE)):]


def without_internal_frames(tb):
    """The same traceback with this package's frames left out (None when every frame is ours)."""
    kept = []
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    relinked = None
    for entry in reversed(kept):
        relinked = types.TracebackType(relinked, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return relinked


def user_facing(exc: BaseException) -> BaseException:
    """`exc` with a traceback trimmed to the user's frames (unchanged under TRANSPILER_DEBUG=1). The chained
    cause of one of our errors is an internal detail as well: it is kept only when debugging."""
    if debugging():
        return exc
    trimmed = without_internal_frames(exc.__traceback__)
    if trimmed is not None:
        exc = exc.with_traceback(trimmed)
    exc.__suppress_context__ = True
    return exc


def at_api_boundary(function):
    """Decorator for entry points users call: a TranspilerError leaves with the user's frames only."""
    from .errors import TranspilerError

    @functools.wraps(function)
    def boundary(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TranspilerError as e:
            raise user_facing(e) from None
    return boundary
