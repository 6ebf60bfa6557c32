"""Triton's kernel options: which ones we honour, which we accept as meaningless here, which we refuse.

Decides, from the keyword arguments of `@jit(...)` and of a launch, what each Triton option does here, so no
option is silently dropped:
  @jit  do_not_specialize     honoured: those parameters are never specialized on ==1, divisibility or alignment
        debug                 honoured: tl.device_assert is compiled (a failed assertion prints and traps)
        noinline              accepted: helpers are always inlined; in Triton it changes code size, not results
        others Triton knows   warned about (IgnoredOptionWarning: not supported yet, ignored)
  launch num_ctas             1 accepted; anything else refused (thread-block clusters are not supported yet)
         maxnreg              honoured by the kernel's launch and compile entry points (a variant compiled with
                              TP_MAXNREG, i.e. __maxnreg__); dropped here for the IR and the interpreter
         enable_fp_fusion=False, debug
                              warned about once per kernel (not supported yet, ignored)
Anything else is not a Triton option: an error.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

from ..errors import NOT_YET, IgnoredOptionWarning, LaunchError

# Options of Triton's @jit that change nothing we could honour.
_JIT_WARNED = {
    "do_not_specialize_on_alignment": "pointers are still specialized on 16-byte alignment",
    "launch_metadata": "no launch hooks here",
    "repr": "no launch hooks here",
    "version": "",
}
# Launch options a launch accepts and ignores, with a warning, when set to something other than the default.
LAUNCH_WARNED = {
    "enable_fp_fusion": (True, "multiply-adds are always fused, as NVRTC does by default"),
    "debug": (False, "use @jit(debug=True) to compile tl.device_assert"),
}


@dataclass(frozen=True)
class JitOptions:
    do_not_specialize: tuple = ()   # parameter names
    debug: bool = False


def jit_options(fn_name, param_names, constexpr_names, location, options) -> JitOptions:
    """The options of `@jit(...)`; `location()` gives the kernel's `def` line for an error."""
    options = dict(options)
    dns = options.pop("do_not_specialize", None) or ()
    debug = bool(options.pop("debug", False))
    options.pop("noinline", None)
    for name, why in _JIT_WARNED.items():
        if name in options:
            options.pop(name)
            warnings.warn(f"kernel '{fn_name}': @jit({name}=...) is not supported yet and is ignored"
                          + (f" ({why})" if why else ""), IgnoredOptionWarning, stacklevel=4)
    if options:
        raise LaunchError(f"@jit got an unknown option '{next(iter(options))}'", location(), kernel=fn_name,
                          hint="Triton's options: do_not_specialize, debug, noinline")
    names = []
    for item in ([dns] if isinstance(dns, (int, str)) else dns):
        name = param_names[item] if isinstance(item, int) and 0 <= item < len(param_names) else item
        if name not in param_names or name in constexpr_names:
            raise LaunchError(f"do_not_specialize names {item!r}, which is not a runtime parameter of '{fn_name}'",
                              location(), kernel=fn_name, hint=f"parameters are: {', '.join(param_names)}")
        names.append(name)
    return JitOptions(tuple(names), debug)


def check_launch_options(kernel, kwargs):
    """Remove Triton's launch options from `kwargs`: refuse what we cannot do, warn once about what we ignore."""
    kwargs.pop("maxnreg", None)   # registers do not change the IR, nor what the interpreter computes
    num_ctas = kwargs.pop("num_ctas", 1)
    if num_ctas != 1:
        raise kernel._launch_error(f"num_ctas={num_ctas!r}: thread-block clusters",
                                   hint="launch with num_ctas=1 (the default)", refusal=NOT_YET)
    for name, (default, why) in LAUNCH_WARNED.items():
        if name in kwargs:
            value = kwargs.pop(name)
            if value != default and name not in kernel._warned_options:
                kernel._warned_options.add(name)
                warnings.warn(f"kernel '{kernel.__name__}': {name}={value!r} is not supported yet and is ignored "
                              f"({why})", IgnoredOptionWarning, stacklevel=5)
