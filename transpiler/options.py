"""Compile options: the switches besides the specialization and the launch options (num_warps, num_stages) that
change the generated code, as one small frozen object handed from the runtime to the IR builder and the
emitter, and put whole into every cache key (memory and disk), so no cached variant ignores one.

`debug`: as Triton's debug mode, `tl.device_assert` is compiled in and int32 `+`, `-`, `*` are checked for
overflow (`parse/semantic.py`); each launch also synchronises and reports a fault as its own (`DebugLauncher`).
On from `TRANSPILER_DEBUG=1` or from the kernel's own flag (`@jit(debug=True)`).
`line_directives`: `#line` directives point compute-sanitizer and cuda-gdb at the Python source
(`TRANSPILER_LINE_DIRECTIVES`, any non-empty value).

`codegen_switches`: the values of the tensor-core switches (`TRANSPILER_WGMMA` and the A/B switches of
`transpiler/targets.py`, which reads them where it decides), recorded so the cache keys see them.

The environment is read here (and by `targets.py` for the switches above), when a variant is built (the slow step
of a launch): set the variables before a kernel's first launch.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class CompileOptions:
    debug: bool = False
    line_directives: bool = False
    codegen_switches: tuple = ()


def debug_from_env() -> bool:
    return os.environ.get("TRANSPILER_DEBUG", "") not in ("", "0")


def from_env(debug: bool = False) -> CompileOptions:
    """The options in force now: the kernel's own `debug` flag or the environment's."""
    from .targets import switches_key
    return CompileOptions(debug=bool(debug) or debug_from_env(),
                          line_directives=bool(os.environ.get("TRANSPILER_LINE_DIRECTIVES")),
                          codegen_switches=switches_key())


DEFAULT = CompileOptions()
