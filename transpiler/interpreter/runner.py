"""Running a kernel on the CPU: the `Interpreter` object that answers builtin calls, and `interpret`.

`interpret` binds the arguments, installs an `Interpreter` with `core.set_interpreter` (restoring the
previous one afterwards, also on errors), calls the kernel's Python function once per program id of the
grid, and writes results back into the arguments. While it runs, every `tl.*` call arrives at
`Interpreter.call_builtin`, which checks the arguments against the builtin's signature and applies the rule
of the same name from the registry. Because the kernel is ordinary Python, `print` and `pdb` work in it.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import NOT_YET, CompileTimeError, InterpreterError, LaunchError, TranspilerError
from ..language import core
from .arguments import Launch
from .location import attach_location, error
from .loops import interpreted_function
from .registry import all_rules
from .tensor import unwrap


class Interpreter:
    """The implementation of the `tl.*` builtins during one interpreted launch."""

    def __init__(self, grid: tuple[int, int, int], num_warps: int = 4):
        self.grid = grid
        self.num_warps = num_warps
        self.program_id = (0, 0, 0)
        self.rules = all_rules()

    def call_builtin(self, name, builtin_fn, args, kwargs):
        rule = self.rules.get(name)
        if rule is None:
            raise error(InterpreterError, f"tl.{name} in the interpreter", refusal=NOT_YET)
        args = [unwrap(a) for a in args]
        kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        try:
            return rule(*args, **kwargs)
        except TranspilerError as err:
            raise attach_location(err)
        except TypeError:
            # Rules have their builtin's signature, so a bad call fails here; binding is checked only
            # now because it is slow. A TypeError that binding does not explain is a bug: re-raise it.
            _check_call(name, builtin_fn, args, kwargs)
            raise


def _check_call(name, builtin_fn, args, kwargs):
    signature = getattr(builtin_fn, "__signature__", None)
    if signature is None:
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise error(CompileTimeError, f"bad arguments to tl.{name}: {exc}") from None


def _normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise LaunchError(f"the grid must be a tuple of 1 to 3 integers, got {grid!r}")
    sizes = []
    for size in grid:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise LaunchError(f"grid sizes must be non-negative integers, got {grid!r}")
        sizes.append(int(size))
    return tuple(sizes + [1] * (3 - len(sizes)))


def interpret(fn, grid, args=(), kwargs=None, num_warps=4):
    """Run kernel `fn` (a plain function, or an object whose `.fn` is one) over `grid` on the CPU.

    `args` are bound in order to the kernel's parameters, `kwargs` by name (constexpr parameters receive
    plain Python values). Arrays the kernel stores to hold the results afterwards.
    """
    kernel = interpreted_function(getattr(fn, "fn", fn))
    grid = _normalize_grid(grid)
    launch = Launch(kernel, tuple(args), dict(kwargs or {}))
    interpreter = Interpreter(grid, num_warps)
    previous = core.set_interpreter(interpreter)
    try:
        # Integer overflow wraps and float exceptions give inf/NaN, as on the GPU: no NumPy warnings.
        with np.errstate(all="ignore"):
            for x, y, z in itertools.product(*(range(n) for n in grid)):
                interpreter.program_id = (x, y, z)
                kernel(*launch.args, **launch.kwargs)
    except TranspilerError as err:
        raise err.with_context(kernel=getattr(kernel, "__name__", None))
    finally:
        core.set_interpreter(previous)
        launch.write_back()
