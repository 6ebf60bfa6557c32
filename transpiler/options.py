"""Compile options: everything besides the kernel's source and its specialization that changes the generated code,
as one frozen object made by the runtime per variant and handed to the IR builder (`debug` only), every analysis
pass and the emitter, and put whole into every cache key (memory and disk), so no cached variant ignores one.

The launch options: `num_warps` (threads per program / 32), `num_stages` (software-pipelining depth of loops that
feed tl.dot), `maxnreg` (a register cap per thread, compiled in as `TP_MAXNREG`; None: the compiler's choice), and
`arch`, the architecture the source is written for (`targets.source_target`: "sm_90a" where the compiler uses its
own instructions, None for a source any device runs). Warp specialization (producer and consumer warp roles, their
register budgets) will be one more field here.

`debug`: as Triton's debug mode, `tl.device_assert` is compiled in and int32 `+`, `-`, `*` are checked for
overflow (`parse/semantic.py`); each launch also synchronises and reports a fault as its own (`DebugLauncher`).
On from `TRANSPILER_DEBUG=1` or from the kernel's own flag (`@jit(debug=True)`).
`line_directives`: `#line` directives point compute-sanitizer and cuda-gdb at the Python source
(`TRANSPILER_LINE_DIRECTIVES`, any non-empty value).

`codegen_switches`: the values of the tensor-core switches (`TRANSPILER_WGMMA` and the A/B switches of
`transpiler/targets.py`, which reads them where it decides), recorded so the cache keys see them.

The environment is read here (and by `targets.py` for the switches above) when a variant is built (the slow step
of a launch). Launchers are found by a key made at every launch, which must see a change of these variables
too, but re-reading them there would cost each launch 0.43 us (`tuple(map(dict.get, ...))` over the 11 names, this
project's CPU machine: a tenth of the launch-time goal). So `environment_token()` is a small int naming the
variables' current values, computed again only after one of them changed through `os.environ`, so a launch pays
one list read (`ENVIRONMENT[0]`; the compiled launch path reads the same list). The change is seen by
`os.environ`'s own class, given a subclass (`_Watched`, made from `type(os.environ)`, set with a `__class__`
assignment, public Python) whose `__setitem__` and `__delitem__` forget the token after the write (`update`,
`pop`, `setdefault`, `clear` all go through them). Rejected: a `sys.addaudithook` hook on os.putenv/os.unsetenv
(public, but it runs for every audited event of the process: `id()` went from 44 to 361 ns and `copy.deepcopy`
of a 2000-entry dict from 13.9 to 24.0 ms on this project's CPU machine, and it fires before the write lands);
the private `os.environ._data` replaced by a watching dict (what this did before); re-reading at each launch
(0.43 us). Where the class cannot be replaced (os.environ swapped for another object), the token is computed
again at every launch. Writes that bypass `os.environ` (`os.putenv`, C code) are not seen, as `os.environ`
itself does not see them.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace

from . import targets


@dataclass(frozen=True)
class CompileOptions:
    debug: bool = False
    line_directives: bool = False
    codegen_switches: tuple = ()
    num_warps: int = 4
    num_stages: int = 3
    arch: str | None = None
    maxnreg: int | None = None

    def for_launch(self, num_warps, num_stages=3, arch=None, maxnreg=None) -> "CompileOptions":
        """These options with a launch's options (`arch`: the source target, see `targets.source_target`)."""
        return replace(self, num_warps=num_warps, num_stages=num_stages, arch=arch, maxnreg=maxnreg)


def debug_from_env() -> bool:
    return os.environ.get("TRANSPILER_DEBUG", "") not in ("", "0")


def from_env(debug: bool = False) -> CompileOptions:
    """The options in force now: the kernel's own `debug` flag or the environment's."""
    return CompileOptions(debug=bool(debug) or debug_from_env(),
                          line_directives=bool(os.environ.get("TRANSPILER_LINE_DIRECTIVES")),
                          codegen_switches=targets.switches_key())


DEFAULT = CompileOptions()


# ---- which code-changing environment is in force, for the launch key -------------------------------------

# Every variable that changes the generated code or the compile options (tests/test_environment_keys.py holds
# the classification of every variable the package reads and checks this list against it).
CODE_VARIABLES = ("TRANSPILER_DEBUG", "TRANSPILER_LINE_DIRECTIVES", "TRANSPILER_WGMMA", *targets.SWITCHES)

ENVIRONMENT = [None]     # [the current token], None after a watched variable changed; the launch binders read it
_changes = [0]           # watched writes and deletes so far (a token read across one is not kept)
_tokens = {}             # the variables' values -> their token
_tokens_lock = threading.Lock()
_WATCHED_NAMES = frozenset(CODE_VARIABLES)


def environment_token() -> int:
    """The token of the code-changing variables' values now (see the module's docstring)."""
    token = ENVIRONMENT[0]
    if token is None:
        seen = _changes[0]
        values = tuple(map(os.environ.get, CODE_VARIABLES))
        with _tokens_lock:
            token = _tokens.setdefault(values, len(_tokens))
            # Kept for later launches only if no write happened since the values were read (another thread's
            # write would otherwise leave the old values' token in place); writes count under this lock.
            if _watching and _changes[0] == seen:
                ENVIRONMENT[0] = token
    return token


def _forget(key):
    if key in _WATCHED_NAMES or (isinstance(key, str) and key.upper() in _WATCHED_NAMES):   # Windows: any case
        with _tokens_lock:
            _changes[0] += 1
            ENVIRONMENT[0] = None


def _watch_environment() -> bool:
    """Give `os.environ` the watching subclass of its own class; False where that is not possible (then the token
    is computed again at every launch)."""
    cls = type(os.environ)
    if getattr(cls, "_transpiler_watched", False):
        return True

    class _Watched(cls):
        """`os.environ`'s class, forgetting the environment token after a code-changing variable's write or
        delete."""
        _transpiler_watched = True

        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            _forget(key)

        def __delitem__(self, key):
            super().__delitem__(key)
            _forget(key)

    try:
        os.environ.__class__ = _Watched
    except TypeError:           # not a plain Python class (os.environ replaced by something else)
        return False
    return True


_watching = _watch_environment()
