"""`@transpile`: the kernel object, its launches, its specializations and its generated source.

`kernel[grid](*args, num_warps=4, num_stages=3, stream=None, **constexprs)` launches. The launch path is
short on purpose (launch overhead is a product feature):
  1. one pass over the arguments (the kernel's generated binder, `launch_key.make_binder`) gives the
     specialization key, the parameter slot values, the device holding the arrays and their frameworks;
  2. the key, with num_warps, num_stages, the code-changing environment's token and the device, finds a
     `Launcher` in a dict;
  3. the launcher packs the slots into a buffer and calls cuLaunchKernel on the current stream of the
     arrays' framework, in their device's context, with the variant's dynamic shared memory.
For a tuple grid, `kernel[grid]` returns a function generated per kernel that does 1-3 in one frame
(`grid_launch.py`) for the usual calls (arguments by position, constexprs after them by keyword) -- behind the
compiled launch path (`native_launch.py`: the same in C, per-signature plans) where a C compiler built it --
and hands everything else to the general path, `_launch`: arguments given by keyword in other ways, defaults, a callable
grid, a key without a launcher yet, and everything unusual (`_bind_args`, `_grid`) before step 1. A missing
launcher is built once per key, whatever the number of threads asking (`once.OnceMap`), after the checks a
launch makes before any CUDA call (num_warps, the grid): the variant (memory, then the disk cache of generated
CUDA, then parse → analysis → emission), its cubin for the device's architecture (memory, disk, then NVRTC)
and the cubin loaded in the device's context.

Errors: every LaunchError a launch (or `cuda_source`, `warmup`, ...) raises points at the kernel's `def` line
(`definition`); a crash in analysis or emission after the kernel type-checked is an InternalCompilerError.
`TRANSPILER_INTERPRET=1` turns launches into CPU runs; it is read only at the slow steps of a launch (host
arrays, a specialization without a launcher yet), so set it before the first launch.

This module holds the kernel object and its launch path; the specializations and the entry points that compile
without launching are in `kernel_variants.py`, a compiled variant's cubins and loading in `variant.py`, and where
errors point in `error_location.py`.
"""
from __future__ import annotations

import functools
import inspect
import os

from ..errors import LaunchError, LaunchOptionError, SourceLocation, TranspilerError
from ..language.core import constexpr, current_interpreter
from . import compiler, grid_launch, launch_key, native_launch, tuple_args
from .args import FakeTensorArgument
from .error_location import at_definition, located
from .kernel_variants import KernelVariants, _unwrap
from .launch_key import HOST, TORCH, binder_source, make_binder
from .launcher import DebugLauncher, Launcher, RowLoopLauncher, cupy_stream, fault_error, stream_handle, torch_stream
from ..tracebacks import user_facing
from .once import OnceMap
from .tensor_maps import TensorMaps
from .torch_ops import launches_elided
from .triton_options import check_launch_options, jit_options

MAX_GRID = grid_launch.MAX_GRID


def _is_constexpr_param(param):
    ann = param.annotation
    return ann is constexpr or (isinstance(ann, str) and ann.split(".")[-1] == "constexpr")


def _interpreting():
    return os.environ.get("TRANSPILER_INTERPRET") == "1"


UNKNOWN_RESIDENT_PROGRAMS = 1 << 16   # a row loop on an SM of unknown limits: launch this many, still correct


class KernelInterface:
    """Triton's `KernelInterface`: what `kernel[grid](...)` objects are (kernels, autotuners, heuristics), for
    `isinstance` checks in user code."""


class Kernel(KernelVariants, KernelInterface):
    __transpiler_kernel__ = True

    def __init__(self, fn, **options):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self.constexpr_names = {p.name for p in self.params if _is_constexpr_param(p)}
        self.defaults = {p.name: p.default for p in self.params if p.default is not inspect.Parameter.empty}
        self._names = tuple(self.arg_names)
        self._constexpr_mask = tuple(n in self.constexpr_names for n in self.arg_names)
        self._variant_map = OnceMap()        # (spec key, CompileOptions) -> variant
        self.variants = self._variant_map.values
        self._launcher_map = OnceMap()       # (*spec key, num_warps, num_stages, environment, device) -> Launcher
        self._launchers = self._launcher_map.values
        self._binder = None                  # generated on first use: launch_key.make_binder
        self._grid_factory = None            # generated on first use: grid_launch.make_factory
        self._grid_launches = {}             # tuple grid -> its `kernel[grid]` function
        self._native_table = None            # the compiled path's plans (native_launch.py), False: Python only
        self._source_hash = None
        self._arity = len(self._names)       # launches with exactly this many positional arguments bind fast
        self._warned_options = set()         # launch options warned about once (triton_options.py)
        # The location is looked up only for an error: finding the `def` line tokenizes the file (milliseconds).
        self.options = jit_options(self.__name__, self.arg_names, self.constexpr_names, self.definition, options)
        self.debug = self.options.debug      # compile option: `@jit(debug=True)` (TRANSPILER_DEBUG=1 for all)
        self._generic_mask = tuple(n in self.options.do_not_specialize for n in self._names)
        self._tuple_views = {}               # tuple-argument structure -> flattened view (tuple_args.py)

    # -- errors --------------------------------------------------------------------------------------------
    def definition(self) -> SourceLocation:
        """Where the kernel's `def` line is: launch errors point there (the caller's line is in the traceback)."""
        try:
            lines, start = inspect.getsourcelines(self.fn)
        except (OSError, TypeError):
            return None
        for i, text in enumerate(lines):
            stripped = text.lstrip()
            if stripped.startswith(("def ", "async def ")):
                return SourceLocation(inspect.getsourcefile(self.fn), start + i, len(text) - len(stripped),
                                      self.__name__)
        return None

    def _launch_error(self, message, hint=None, refusal=None, cls=LaunchError):
        return cls(message, self.definition(), kernel=self.__name__, hint=hint, refusal=refusal)

    # -- Triton-compatible entry points ----------------------------------------------------------------------
    def __getitem__(self, grid):
        # The launch function of a tuple grid is kept (a few hundred at most): making one costs more than finding it.
        if type(grid) is tuple:
            try:
                found = self._grid_launches.get(grid)
            except TypeError:               # not hashable: the general path words it
                found = None
            if found is not None:
                return found
        elif callable(grid) and self._native():     # Triton's `lambda meta: ...`, often a new one per call
            return self._native_table.grid(grid)
        launch = self._launch

        def general(args, num_warps, num_stages, stream, kwargs):   # its caller makes the error user-facing
            return launch(grid, args, num_warps, num_stages, stream, kwargs)

        checked = grid_launch.fast_grid(grid)
        if checked is None:             # a callable grid, or one the general path checks and words
            def launch_on_grid(*args, num_warps=4, num_stages=3, stream=None, **kwargs):
                try:
                    return launch(grid, args, num_warps, num_stages, stream, kwargs)
                except TranspilerError as e:    # a try costs nothing until it catches
                    raise user_facing(e)  # (transpiler's own frames are hidden: TRANSPILER_DEBUG=1 shows them)
            return launch_on_grid
        launch_on_grid = (self._grid_factory or self._make_grid_factory())(
            *checked, self._launchers, general, self._launch_failed, cupy_stream, torch_stream)
        if self._native():              # the compiled path, the Python function for what it does not take
            launch_on_grid = native_launch.grid_launch(self._native_table, checked, launch_on_grid)
        if len(self._grid_launches) < 256:
            self._grid_launches[grid] = launch_on_grid
        return launch_on_grid

    def _native(self):
        """The kernel's compiled-path table (`native_launch.py`), made on first use; falsy where there is none."""
        if self._native_table is None:
            # Threads meeting a new kernel at once make one table: a second would take the grids made with it
            # and learn the plans again, its launches counted where `counts()` does not look (the load test).
            with native_launch.table_lock:
                if self._native_table is None:
                    self._native_table = native_launch.table_for(self) or False
        return self._native_table

    def _launch_on_callable_grid(self, grid, *args, num_warps=4, num_stages=3, stream=None, **kwargs):
        """The Python launch of `kernel[grid](...)` for a callable grid: the compiled path's fallback."""
        try:
            return self._launch(grid, args, num_warps, num_stages, stream, kwargs)
        except TranspilerError as e:
            raise user_facing(e)  # (transpiler's own frames are hidden: TRANSPILER_DEBUG=1 shows them)

    def _make_grid_factory(self):
        self._grid_factory = grid_launch.make_factory(self._names, self._constexpr_mask, self.__name__,
                                                      self._generic_mask)
        return self._grid_factory

    def grid_launch_source(self) -> str:
        """The Python function generated for `kernel[grid](...)` with a tuple grid (`runtime/grid_launch.py`)."""
        return grid_launch.launch_source(self._names, self._constexpr_mask, self.__name__, self._generic_mask)

    def _launch_failed(self, error):
        """The user-facing error for an exception raised by a launcher's launch call (a LaunchError, located;
        a driver error, worded by `_driver_error`)."""
        if not isinstance(error, LaunchError):
            cause, error = error, self._driver_error(error)
            error.__cause__ = cause
        return user_facing(located(error, self.definition()))

    @at_definition
    def run(self, *args, grid, num_warps=4, num_stages=3, stream=None, **kwargs):
        return self._launch(grid, args, num_warps, num_stages, stream, kwargs)

    def __call__(self, *args, **kwargs):
        if current_interpreter() is not None:
            from ..interpreter.loops import interpreted_function
            return interpreted_function(self.fn)(*args, **kwargs)
        raise self._launch_error(f"a kernel is launched with {self.__name__}[grid](...), not called directly",
                                 hint="call it directly only from inside another kernel, where it is inlined")

    @property
    def backward(self):
        """The derived backward kernel (`transpiler/autodiff`): `kernel.backward[grid](*args, grads={...})`."""
        try:
            return self._backward_kernel     # made once (an import statement per call cost ~0.7 us)
        except AttributeError:
            from ..autodiff import backward_of
            return backward_of(self)

    @property
    def interpret(self):
        """`kernel.interpret[grid](*args)`: run on the CPU with NumPy."""
        kernel = self

        class _Interpret:
            def __getitem__(self, grid):
                return functools.partial(kernel._interpret_call, grid)   # no frame of ours above the boundary
        return _Interpret()

    @at_definition
    def _interpret_call(self, grid, *args, **kwargs):
        return self._interpret(grid, args, kwargs)

    @at_definition
    def _interpret(self, grid, args, kwargs):
        from ..interpreter import interpret
        kwargs = dict(kwargs)
        num_warps, num_stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
        kwargs.pop("stream", None)
        self._check_num_warps(num_warps)
        values = self._bind_args(args, kwargs)
        grid = self._grid(grid, values, num_warps, num_stages)
        positional = [v for v, c in zip(values, self._constexpr_mask) if not c]
        constexprs = {n: _unwrap(v) for n, v, c in zip(self._names, values, self._constexpr_mask) if c}
        return interpret(self.fn, grid, positional, constexprs, num_warps=num_warps)

    # -- launch ------------------------------------------------------------------------------------------
    def _launch(self, grid, args, num_warps, num_stages, stream, kwargs):
        try:
            maxnreg, maxnreg_part = None, ()
            if kwargs or len(args) != self._arity:
                # Options are checked before arguments.
                maxnreg = kwargs.pop("maxnreg", None) if kwargs else None
                maxnreg_part = self._maxnreg_part(maxnreg)
                try:
                    args = self._bind_args(args, kwargs)
                except LaunchError:
                    self._check_num_warps(num_warps)        # options are checked before arguments
                    raise
            try:
                key, values, device, frameworks = (self._binder or self._make_binder())(args, num_warps, num_stages)
                if maxnreg_part:
                    key = launch_key.with_option_parts(key, maxnreg_part)
                launcher = self._launchers.get(key)
            except Exception as e:          # host arrays, two devices, an unsupported argument, no CUDA at all
                if type(e) is FakeTensorArgument:   # no memory: never launched, nor interpreted
                    if launches_elided():
                        return None     # a custom op's fake run (torch_ops.py): the wrapper makes the outputs
                    raise
                flat = tuple_args.flattened(self, args) if isinstance(e, LaunchError) else None
                if flat is not None:                        # tuple arguments: one parameter per leaf
                    view, leaves = flat
                    grid = grid if _interpreting() else self._grid(grid, args, num_warps, num_stages)
                    if _interpreting():
                        return self._interpret(grid, args, {"num_warps": num_warps, "num_stages": num_stages})
                    options = {} if maxnreg is None else {"maxnreg": maxnreg}
                    return view._launch(grid, leaves, num_warps, num_stages, stream, options)
                if not _interpreting():
                    if isinstance(e, LaunchError):
                        self._check_num_warps(num_warps)    # options are checked before arguments
                    raise
                launcher = None
            if launcher is None:
                if _interpreting():
                    return self._interpret(grid, args, {"num_warps": num_warps, "num_stages": num_stages})
                # Everything a launch checks before its first CUDA call, then the build (once per key).
                self._check_num_warps(num_warps)
                grid = self._grid(grid, args, num_warps, num_stages)
                if 0 in grid:
                    return None
                launcher = self._launcher_map.get(key, lambda: self._make_launcher(key, args, num_warps,
                                                                                    num_stages, device))
            if type(grid) is not tuple or not 0 < len(grid) <= 3:
                grid = self._grid(grid, args, num_warps, num_stages)
            n = len(grid)
            if n == 1:
                gx, gy, gz = grid[0], 1, 1
            elif n == 3:
                gx, gy, gz = grid
            else:
                (gx, gy), gz = grid, 1
            if stream is None:
                stream = torch_stream(device) if frameworks & TORCH else cupy_stream(device)
            elif type(stream) is not int:
                stream = stream_handle(stream, self.__name__)
            try:
                if gx > 0 and gy > 0 and gz > 0:
                    # Past MAX_GRID the driver refuses the launch (nothing runs) and `_grid` below says why:
                    # checking here would cost each launch ~70 ns (chained comparisons, measured).
                    launcher.launch(gx, gy, gz, values, stream)
                    return None
            except LaunchError:
                raise
            except (TypeError, OverflowError):
                pass                 # not plain positive ints (floats, NumPy ints, too large): the general path
            except Exception as e:
                self._grid(grid, args, num_warps, num_stages)     # a grid past the hardware limits says so
                raise self._driver_error(e) from e
            grid = self._grid(grid, args, num_warps, num_stages)
            if 0 in grid:
                return None
            try:
                launcher.launch(*grid, values, stream)
            except LaunchError:
                raise
            except Exception as e:
                raise self._driver_error(e) from e
            return None
        except LaunchError as e:
            raise located(e, self.definition())

    def _driver_error(self, error):
        """The LaunchError for a driver error met by a launch: a fault of an earlier kernel says which ran."""
        return fault_error(error, self.__name__) or LaunchError(f"the launch failed: {error}", kernel=self.__name__)

    def _make_binder(self):
        self._binder = make_binder(self._names, self._constexpr_mask, self.__name__, self._generic_mask)
        return self._binder

    def launch_binder_source(self) -> str:
        """The Python function generated for this kernel's launches (the per-launch specialization pass)."""
        return binder_source(self._names, self._constexpr_mask, self.__name__, self._generic_mask)

    def _make_launcher(self, key, values, num_warps, num_stages, device):
        var = self.variant(launch_key.specialization_of(key), values, num_warps, num_stages,
                           compiler.device_arch(device))
        try:
            module, function, context = var.function(device)
        except Exception as e:
            fault = fault_error(e, self.__name__)       # the context died in an earlier kernel: say which
            if fault is None:
                raise
            raise fault from e
        cls = DebugLauncher if var.options.debug else Launcher
        slot_names = [n for n, c in zip(self._names, self._constexpr_mask) if not c]
        launcher = cls(module, function, context, var.slot_kinds, var.num_warps, name=self.__name__,
                       shared_bytes=var.shared_bytes, slot_names=slot_names + ["grid x"] * var.row_loop,
                       tensor_maps=TensorMaps(var.tensor_maps) if var.tensor_maps else None)
        if not var.row_loop:
            return launcher
        blocks = (var.resident_programs(device) or UNKNOWN_RESIDENT_PROGRAMS) if var.persistent else None
        return RowLoopLauncher(launcher, blocks, var.programs_per_block, var.row_loop_waves)

    # -- binding -----------------------------------------------------------------------------------------
    def _bind_args(self, args, kwargs):
        """The general path: keyword arguments and defaults to one value per parameter, in order."""
        check_launch_options(self, kwargs)
        if len(args) > len(self._names):
            raise self._launch_error(f"{self.__name__} takes {len(self._names)} arguments but {len(args)} were "
                                     "given", hint=f"parameters are: {', '.join(self.arg_names)}")
        bound = dict(zip(self._names, args))
        for k, v in kwargs.items():
            if k not in self.signature.parameters:
                raise self._launch_error(f"unknown keyword argument '{k}'",
                                         hint=f"parameters are: {', '.join(self.arg_names)}")
            if k in bound:
                raise self._launch_error(f"argument '{k}' given twice",
                                         hint="pass it either by position or by keyword")
            bound[k] = v
        for name in self._names:
            if name not in bound:
                if name in self.defaults:
                    bound[name] = self.defaults[name]
                else:
                    what = "constexpr" if name in self.constexpr_names else "argument"
                    hint = (f"pass it as a keyword: {self.__name__}[grid](..., {name}=...)"
                            if name in self.constexpr_names else f"parameters are: {', '.join(self.arg_names)}")
                    raise self._launch_error(f"missing {what} '{name}'", hint=hint)
        return tuple(bound[n] for n in self._names)

    def _bind_for_compile(self, args, kwargs, num_warps):
        """`_bind_args` for the entry points that compile without launching (options other than num_warps and
        num_stages are dropped)."""
        kwargs.pop("stream", None)
        self._check_num_warps(num_warps)
        return self._bind_args(args, kwargs)

    def _check_num_warps(self, nw):
        if not isinstance(nw, int) or nw <= 0 or nw & (nw - 1) or nw > 32:
            raise self._launch_error(f"num_warps must be a power of 2 from 1 to 32, not {nw!r}",
                                     hint="use 1, 2, 4, 8, 16 or 32", cls=LaunchOptionError)

    def _grid(self, grid, values, num_warps, num_stages):
        """The general path for the grid: a callable of the arguments, an int, or a 1-3 tuple; checked."""
        if callable(grid):
            meta = {n: _unwrap(v) for n, v in zip(self._names, values)}
            meta["num_warps"], meta["num_stages"] = num_warps, num_stages
            grid = grid(meta)
        if isinstance(grid, int):
            grid = (grid,)
        try:
            grid = tuple(int(g) for g in grid)
        except (TypeError, ValueError):
            raise self._launch_error(f"grid must be an int, a tuple of 1 to 3 ints or a callable returning one, "
                                     f"not {grid!r}", hint="for example kernel[(triton.cdiv(n, BLOCK),)](...)"
                                     ) from None
        if not 1 <= len(grid) <= 3:
            raise self._launch_error(f"grid must have 1 to 3 dimensions, not {len(grid)}",
                                     hint="fold extra dimensions into one and split it with // and %")
        for i, (g, limit) in enumerate(zip(grid, MAX_GRID)):
            if g < 0 or g > limit:
                raise self._launch_error(f"grid dimension {i} is {g}, outside the hardware limit 0..{limit}",
                                         hint="put the largest count on axis 0 (up to 2**31 - 1), or loop "
                                              "inside each program over several blocks")
        return grid + (1,) * (3 - len(grid))

    @at_definition
    def warmup(self, *args, grid=None, num_warps=4, num_stages=3, maxnreg=None, **kwargs):
        """Build the variant a launch with these arguments would use and, when they are on a GPU, its launcher
        (cubin loaded on their device, shared memory opted in), without launching; the autotuner compiles its
        configs in parallel through this. Returns the CUDA source."""
        values = self._bind_for_compile(args, kwargs, num_warps)
        flat = tuple_args.flattened(self, values)
        if flat is not None:
            return flat[0].warmup(*flat[1], grid=grid, num_warps=num_warps, num_stages=num_stages)
        key, _, device, frameworks = (self._binder or self._make_binder())(values, num_warps, num_stages, False)
        key = launch_key.with_option_parts(key, self._maxnreg_part(maxnreg))
        on_gpu = not frameworks & HOST and gpu_available()
        device = (device if device >= 0 else launch_key.current_device()) if on_gpu else None
        var = self.variant(launch_key.specialization_of(key), values, num_warps, num_stages,
                           compiler.device_arch(device) if on_gpu else None)
        if on_gpu:
            key = launch_key.on_device(key, device)
            self._launcher_map.get(key, lambda: self._make_launcher(key, values, num_warps, num_stages, device))
        return var.source

    @at_definition
    def check_launch_arguments(self, args, kwargs):
        """Raise the LaunchError a launch with these arguments would raise before any compile: arrays in host
        memory or on two devices, unknown or missing arguments (the autotuner asks before timing configs)."""
        kwargs = dict(kwargs)
        num_warps, num_stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
        kwargs.pop("stream", None)
        values = self._bind_args(args, kwargs)
        (self._binder or self._make_binder())(values, num_warps, num_stages, True)


def transpile(fn=None, **options):
    """Decorator: turn a Triton-style Python kernel into a transpiler kernel (`transpiler.jit` is the same)."""
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
