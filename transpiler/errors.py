"""One exception family for everything a user can get wrong, each message pointing at the kernel's source.

`TranspilerError` is the base. Errors found while reading a kernel carry a `SourceLocation` and print
`file:line:col`, the line, and a caret under the column, then the call chain through inlined helpers.
Launch errors name the kernel and the argument. `InternalCompilerError` is the one error that is our fault:
it names the dumped `.cu` and the first compiler message and asks for a report. A refusal (a construct or
feature we do not compile) carries its `Refusal` kind, and its message opens with the kind's words.
"""
from __future__ import annotations

import enum
import linecache
from dataclasses import dataclass


class Refusal(enum.Enum):
    """Why a kernel is refused although the user may have written it right: the two kinds a refusal can be.

    NOT_YET: Triton accepts this; we do not yet (our gap, worth an issue). NOT_TRITON: this is not Triton's
    language (Triton's compiler rejects it too, or it has no meaning in Triton), so no kernel that runs under
    Triton uses it. The kind is part of the error, and the error composes the words, so no refusal can leave
    them out; errors that are not refusals (a wrong shape, a dtype Triton rejects too) have no kind and are
    worded like Triton's.
    """

    NOT_YET = "not supported yet"
    NOT_TRITON = "not Triton's language"

    def __str__(self):
        return self.value


NOT_YET = Refusal.NOT_YET
NOT_TRITON = Refusal.NOT_TRITON


def refusal_text(message: str, refusal: Refusal | None) -> str:
    """A message as a refusal of that kind reads ("not supported yet: ..."), or unchanged for a plain error."""
    return f"{refusal.value}: {message}" if refusal is not None else message


@dataclass(frozen=True)
class SourceLocation:
    """A position in a kernel's Python source (1-based line, 0-based column), and the function it is in."""

    file: str
    line: int
    col: int
    function: str = ""

    def source_line(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col}"


class TypeRefusal(TypeError):
    """A refusal raised as a TypeError by code that also serves plain Python callers (the interpreter's fp8
    tables); its text has the kind's words, and the located DTypeError made from it keeps the kind
    (`type_error_parts`)."""

    def __init__(self, message: str, refusal: Refusal):
        self.message, self.refusal = message, refusal
        super().__init__(refusal_text(message, refusal))


def type_error_parts(exc: TypeError) -> dict:
    """The message and kind of a TypeError (a `TypeRefusal` or a plain one) for the located error made from it:
    `b.error(DTypeError, **type_error_parts(e))`."""
    return {"message": getattr(exc, "message", str(exc)), "refusal": getattr(exc, "refusal", None)}


def render_location(loc: SourceLocation) -> str:
    text = loc.source_line()
    if not text:
        return f"  at {loc}"
    return f"  {loc} (in {loc.function})\n    {text}\n    {' ' * loc.col}^"


class TranspilerError(Exception):
    """Base of every error this package raises for a user mistake, or for a refusal (`refusal` given: its
    message then starts with "not supported yet: " or "not Triton's language: ")."""

    REFUSAL_REQUIRED = False    # a class whose every error is a refusal says so: a missing kind is our bug

    def __init__(self, message: str, loc: SourceLocation | None = None, kernel: str | None = None,
                 hint: str | None = None, call_chain: tuple = (), refusal: Refusal | None = None):
        if refusal is None and self.REFUSAL_REQUIRED:
            raise TypeError(f"{type(self).__name__} is a refusal: say whether it is NOT_YET or NOT_TRITON "
                            f"({message!r})")
        if refusal is not None and not isinstance(refusal, Refusal):
            raise TypeError(f"refusal must be NOT_YET or NOT_TRITON, not {refusal!r}")
        self.refusal = refusal
        self.message = refusal_text(message, refusal)
        self.loc = loc
        self.kernel = kernel
        self.hint = hint
        self.call_chain = tuple(call_chain)
        super().__init__(self._format())

    @property
    def line(self):
        return self.loc.line if self.loc else None

    @property
    def error_message(self):
        """The message without location or hint: Triton's `CompilationError.error_message`, which code catching
        Triton's errors (its own tests) reads."""
        return self.message

    def with_context(self, kernel=None, call_site=None):
        """Attach the kernel name, and a helper's call site when the error came from an inlined helper."""
        if kernel and not self.kernel:
            self.kernel = kernel
        if call_site is not None:
            self.call_chain = self.call_chain + (call_site,)
        self.args = (self._format(),)
        return self

    def at(self, loc):
        """Attach a location when the error has none yet (launch errors point at the kernel's `def`)."""
        if self.loc is None:
            self.loc = loc
            self.args = (self._format(),)
        return self

    def _format(self) -> str:
        head = f"in kernel '{self.kernel}': " if self.kernel else ""
        parts = [f"{head}{self.message}"]
        if self.loc is not None:
            parts.append(render_location(self.loc))
        for site in self.call_chain:
            parts.append("  called from\n" + render_location(site))
        if self.hint:
            parts.append(f"  hint: {self.hint}")
        return "\n".join(parts)

    def __str__(self):
        return self._format()


class UnsupportedSyntaxError(TranspilerError):
    """A construct kernels cannot use here: always a refusal, so it needs its kind."""

    REFUSAL_REQUIRED = True


class NameResolutionError(TranspilerError):
    """A name that is not defined, or a call to something that is neither a builtin nor a kernel."""


class CompileTimeError(TranspilerError):
    """A constexpr requirement failed: non-constant bounds, `static_assert`, bad block size."""


class ShapeError(TranspilerError):
    """Shapes that do not broadcast or do not match."""


class DTypeError(TranspilerError):
    """An operation applied to element types it does not accept."""


class LaunchError(TranspilerError):
    """A problem with the arguments, grid or options of a launch."""


# Launch errors for which Triton raises a plain Python exception: each is that exception too, so code catching
# Triton's class (its own tests: `pytest.raises(OverflowError)`) catches ours.
class ArgumentOverflowError(LaunchError, OverflowError):
    """An integer argument that no 64-bit parameter type holds (Triton: OverflowError)."""

    @classmethod
    def of(cls, name, value, kernel=None) -> "ArgumentOverflowError":
        """The error for argument `name` = `value`, worded alike on both paths."""
        return cls(f"argument '{name}' = {value} does not fit any integer parameter type (int32, int64, uint64)",
                   kernel=kernel, hint="pass a value between -2**63 and 2**64 - 1")


class HostMemoryError(LaunchError, ValueError):
    """Arrays in host memory given to a GPU launch (Triton's launcher: ValueError)."""


class LaunchOptionError(LaunchError, AssertionError):
    """A launch option out of its range, such as num_warps that is not a power of 2 (Triton asserts it)."""


class OutOfResources(LaunchError):
    """A specialization needs more of a per-program resource (shared memory) than the device has: Triton's
    `triton.runtime.errors.OutOfResources`, with its fields, so wrappers that catch it to try a smaller config
    keep working."""

    def __init__(self, required, limit, name, kernel=None, hint=None, detail=None):
        self.required, self.limit, self.name = required, limit, name
        triton_words = f"out of resource: {name}, Required: {required}, Hardware limit: {limit}"
        super().__init__(f"{detail} ({triton_words})" if detail else triton_words, kernel=kernel, hint=hint)


class InterpreterError(TranspilerError):
    """A fault found by the CPU interpreter (out-of-bounds access)."""


class AutotuneError(TranspilerError):
    """An autotuner that cannot choose: every config failed, or it was declared with unknown names."""


class InternalCompilerError(TranspilerError):
    """Our generated C++ did not compile: a bug in this project, not in the kernel."""


class IgnoredOptionWarning(UserWarning):
    """A Triton option this package accepts but does not honour yet (the message says which and why)."""
