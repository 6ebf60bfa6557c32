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

The environment is read here (and by `targets.py` for the switches above), when a variant is built (the slow step
of a launch): set the variables before a kernel's first launch.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace


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
    from .targets import switches_key
    return CompileOptions(debug=bool(debug) or debug_from_env(),
                          line_directives=bool(os.environ.get("TRANSPILER_LINE_DIRECTIVES")),
                          codegen_switches=switches_key())


DEFAULT = CompileOptions()
