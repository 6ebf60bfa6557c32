"""The function `kernel[grid]` returns for a tuple grid: a launch's whole host work in one generated frame.

Where the compiled launch path loads (`native_launch.py`), `kernel[grid]` is its C object instead, and this
function is that object's fallback: it receives, unchanged, every call the C path does not take.

Decides nothing new: it is the kernel's launch binder (`launch_key.parameter_pass`, the same generated code, so
the key cannot drift from the binder's), followed by the launcher lookup, the stream and the launch, in one
function generated per kernel from its parameter list and made once per grid (the grid, checked once when the
function is made, is a closure constant). Anything it does not handle in straight-line code goes to the
general path (`Kernel._launch`) with the launch's arguments untouched: keyword arguments or another number of
positional ones, a key without a launcher yet (the first launch, a new specialization, a changed
code-changing environment variable), host arrays, arrays on two devices, an argument type the pass does not
know, a stream object. The general path redoes the binder's pass and raises the located error, so every
refusal reads the same whichever path met it; a launch that fails in the driver is worded by the kernel
(`failed`).

Why one frame (bench/launch_cpu.py: the GPU's edges replaced by C-level no-ops, so only our Python is timed;
this project's shared CPU machine, candidates interleaved, minimum of 500 samples; the whole
`kernel[(1,)](x, y, n, scale)` of a 4-parameter kernel): through `Kernel._launch` and the binder 2.10-2.26 us,
this function 1.81-1.99 us, and 1.64-1.81 us with the launchers' buffer pool instead of a lock; with a constexpr
given by keyword (`BLOCK=128`, Triton's style) 2.04 us here against 3.92-4.06 on the general path.
"""
from __future__ import annotations

import functools
import hashlib
import linecache

from . import launch_key

MAX_GRID = (2**31 - 1, 65535, 65535)    # every CUDA device since compute capability 3.0 (cudaDevAttrMaxGridDimX..Z)


class Unusual(Exception):
    """Raised inside the generated function for what only the general path handles (never leaves it)."""


# The line a user-facing error is raised from: the one frame of ours its traceback keeps (tracebacks.py).
BOUNDARY = "# (transpiler's own frames are hidden: TRANSPILER_DEBUG=1 shows them)"


def launch_source(names, constexpr_mask, kernel_name, generic_mask=None) -> str:
    """The source of `make_launch(gx, gy, gz, launchers, general, failed, cupy_stream, torch_stream, ...)`, which
    returns the kernel's launch function for grid (gx, gy, gz) (`kernel.grid_launch_source()` prints it)."""
    n = len(names)
    args = [f"a{i}" for i in range(n)]
    keys = [f"k{i}" for i in range(n)] + ["num_warps", "num_stages", "environment", "device"]
    values = [f"v{i}" for i, c in enumerate(constexpr_mask) if not c]
    unpack = f"{launch_key.tuple_of(args)} = " if names else ""

    def general(indent):
        pad = " " * indent
        return [pad + "try:", pad + "    return general(args, num_warps, num_stages, stream, kwargs)",
                pad + "except TranspilerError as e:", pad + f"    raise user_facing(e)  {BOUNDARY}"]

    # The usual calls bind here: every argument by position; the runtime parameters by position and the
    # constexprs after them by keyword (Triton's style: `kernel[grid](x, y, n, BLOCK=1024)`), by dict lookups;
    # the first ones by position and the rest by keyword, in any other split. Anything else (defaults left out,
    # launch options such as maxnreg, unknown or repeated names) has a count or a name that does not match.
    runtime = max((i + 1 for i, c in enumerate(constexpr_mask) if not c), default=0)
    tails = tuple(tuple(names[i:]) for i in range(n + 1))
    lines = ["def make_launch(gx, gy, gz, launchers, general, failed, cupy_stream, torch_stream, Unusual,",
             "                TranspilerError, user_facing):",
             "    def launch_on_grid(*args, num_warps=4, num_stages=3, stream=None, **kwargs):",
             "        if not kwargs:", f"            if len(args) != {n}:", *general(16),
             f"            {unpack}args" if names else "            pass"]
    if runtime < n:
        lines += [f"        elif len(args) == {runtime} and len(kwargs) == {n - runtime}:",
                  f"            {launch_key.tuple_of(args[:runtime])} = args" if runtime else "            pass",
                  "            try:"]
        lines += [f"                a{i} = kwargs[{names[i]!r}]" for i in range(runtime, n)]
        lines += ["            except KeyError:", *general(16)]
    lines += ["        else:", f"            if len(args) + len(kwargs) != {n}:", *general(16),
              "            try:",
              f"                {unpack}args + tuple(map(kwargs.__getitem__, {tails!r}[len(args)]))",
              "            except KeyError:", *general(16)]
    # The binder's pass; what it cannot take raises (Unusual, or its own error) and goes to the general path.
    body = ["device = -1", "frameworks = 0"]
    body += [line[4:] for line in "\n".join(launch_key.parameter_pass(names, constexpr_mask, kernel_name,
                                                                     generic_mask, refuse="raise Unusual")
                                            ).split("\n")]
    body += ["if frameworks & HOST:", "    raise Unusual", "if device < 0:", "    device = current_device()",
             "environment = ENVIRONMENT[0]", "if environment is None:", "    environment = environment_token()",
             f"launcher = launchers.get({launch_key.tuple_of(keys)})"]
    lines += ["        try:", *("            " + line for line in body),
              "        except Exception:", "            launcher = None",
              "        if launcher is None:", *general(12),
              "        if stream is None:",
              "            stream = torch_stream(device) if frameworks & TORCH else cupy_stream(device)",
              "        elif type(stream) is not int:", *general(12),
              "        try:",
              f"            launcher.launch(gx, gy, gz, {launch_key.tuple_of(values)}, stream)",
              "        except Exception as e:",
              f"            raise failed(e)  {BOUNDARY}",
              "    return launch_on_grid"]
    return "\n".join(lines) + "\n"


def make_factory(names, constexpr_mask, kernel_name, generic_mask=None):
    """The generated `make_launch` of a kernel with these parameters (its code object kept in the disk cache,
    as the binder's is). Its globals are `launch_key`'s module namespace itself, where the binder's names live
    (and where `_learn_type` records CuPy's and torch's array types once seen). Its source is put in `linecache`
    under a name of its own, so tracebacks through it show its lines (the boundary line among them)."""
    from ..errors import TranspilerError
    from ..tracebacks import user_facing
    source = launch_source(names, constexpr_mask, kernel_name, generic_mask)
    filename = f"<launch binder of {kernel_name}: kernel[grid] {hashlib.sha256(source.encode()).hexdigest()[:12]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {}
    exec(launch_key._code_of(source, kernel_name, filename), vars(launch_key), namespace)
    return functools.partial(namespace["make_launch"], Unusual=Unusual, TranspilerError=TranspilerError,
                             user_facing=user_facing)


def fast_grid(grid):
    """`(gx, gy, gz)` of a grid the generated function takes as it is (a tuple of 1 to 3 positive ints within
    the hardware limits), else None (the general path checks and words it)."""
    if type(grid) is not tuple or not 1 <= len(grid) <= 3:
        return None
    for g, limit in zip(grid, MAX_GRID):
        if type(g) is not int or not 0 < g <= limit:
            return None
    return grid + (1,) * (3 - len(grid))
