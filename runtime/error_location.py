"""Where a launch error points: the kernel's `def` line and the user's line that made the call (the first
frame outside this package); `at_definition` wraps the entry points users call so that every error of ours
leaves with the user's frames only (`tracebacks.py`)."""
from __future__ import annotations

import functools
import linecache
import os
import sys
from pathlib import Path

from ..errors import LaunchError, SourceLocation, TranspilerError
from ..tracebacks import user_facing


def at_definition(method):
    """An entry point users call: launch errors raised inside `method` point at the kernel's `def` line and at
    the user's call, and every error of ours leaves with the user's frames only (`tracebacks.py`)."""
    @functools.wraps(method)
    def at_definition(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except TranspilerError as e:
            e = located(e, self.definition()) if isinstance(e, LaunchError) else e
            raise user_facing(e)  # (transpiler's own frames are hidden: TRANSPILER_DEBUG=1 shows them)
    return at_definition


# This package's code: the `runtime/` folder and the `transpiler/` package (the same folder in a wheel).
_OWN_FOLDERS = tuple({os.path.realpath(p) + os.sep for p in (Path(__file__).parent,
                                                             Path(__import__("transpiler").__file__).parent)})


def located(error, definition):
    """`error` pointing at the kernel's `def` line and, once, at the user's line that made the call (the first
    frame outside this package). Only errors pay for the stack walk."""
    error.at(definition)
    if not getattr(error, "call_site_added", False):
        error.call_site_added = True
        site = user_call_site()
        if site is not None:
            error.with_context(call_site=site)
    return error


def user_call_site():
    """SourceLocation of the innermost frame that is not this package's code (None if there is none)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        ours = filename.startswith("<launch binder") or (not filename.startswith("<") and
                                                        os.path.realpath(filename).startswith(_OWN_FOLDERS))
        if not ours:
            return SourceLocation(filename, frame.f_lineno, _column(filename, frame.f_lineno), frame.f_code.co_name)
        frame = frame.f_back
    return None


def _column(filename, line):
    text = linecache.getline(filename, line)
    return len(text) - len(text.lstrip())
