"""`@transpile`: the kernel object, its launches, its specializations and its generated source.

`kernel[grid](*args, num_warps=4, num_stages=3, stream=None, **constexprs)` launches. The launch path is
short on purpose (launch overhead is a product feature):
  1. one pass over the arguments (a function generated per kernel by `launch_key.make_binder`) gives the
     specialization key, the parameter slot values, the device holding the arrays and their frameworks;
  2. the key, with num_warps, num_stages and the device, finds a `Launcher` in a dict;
  3. the launcher packs the slots into its buffer and calls cuLaunchKernel on the current stream of the
     arrays' framework, in their device's context, with the variant's dynamic shared memory.
Arguments given by keyword, defaults, a callable grid and everything unusual take a slower, general path
(`_bind_args`, `_grid`) before step 1. A missing launcher is built once per key, whatever the number of
threads asking (`once.OnceMap`), after the checks a launch makes before any CUDA call (num_warps, the grid):
the variant (memory, then the disk cache of generated CUDA, then parse → analysis → emission), its cubin for
the device's architecture (memory, disk, then NVRTC) and the cubin loaded in the device's context.

Errors: every LaunchError a launch (or `cuda_source`, `warmup`, ...) raises points at the kernel's `def` line
(`definition`); a crash in analysis or emission after the kernel type-checked is an InternalCompilerError.
`TRANSPILER_INTERPRET=1` turns launches into CPU runs; it is read only at the slow steps of a launch (host
arrays, a specialization without a launcher yet), so set it before the first launch.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import linecache
import os
import sys
from pathlib import Path

from ..errors import InternalCompilerError, LaunchError, SourceLocation, TranspilerError
from .. import options as options_mod
from ..language.core import constexpr, current_interpreter
from ..targets import source_target
from . import cache, compiler, launch_key, tuple_args
from .args import FakeTensorArgument
from .launch_key import HOST, TORCH, binder_source, make_binder
from .launcher import (STICKY_ERRORS, DebugLauncher, Launcher, RowLoopLauncher, cupy_stream, fault_error,
                       stream_handle, torch_stream)
from ..tracebacks import user_facing
from .once import OnceMap
from .tensor_maps import TensorMaps
from .torch_ops import launches_elided
from .triton_options import check_launch_options, jit_options

MAX_GRID = (2**31 - 1, 65535, 65535)    # every CUDA device since compute capability 3.0 (cudaDevAttrMaxGridDimX..Z)


def _is_constexpr_param(param):
    ann = param.annotation
    return ann is constexpr or (isinstance(ann, str) and ann.split(".")[-1] == "constexpr")


def _interpreting():
    return os.environ.get("TRANSPILER_INTERPRET") == "1"


MULTIPROCESSOR_COUNT = 16     # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
UNKNOWN_RESIDENT_PROGRAMS = 1 << 16   # a row loop on an SM of unknown limits: launch this many, still correct


class CompiledVariant:
    """One specialization: its source, the dynamic shared memory a launch gives each program, its cubin per
    architecture and its loaded function per device."""

    def __init__(self, name, source, param_kinds, shared_bytes=0, disk_key=None, options=options_mod.DEFAULT,
                 required_arch=None, maxnreg=None, tensor_maps=(), row_loop=False, persistent=None,
                 programs_per_block=1):
        self.name = name
        self.source = source
        self.param_kinds = param_kinds       # per kernel parameter: "ptr", a dtype name, or None (constexpr)
        self.row_loop = row_loop             # folded into a row loop: the grid's x is a last int32 parameter
        self.persistent = row_loop if persistent is None else persistent   # ... one wave of blocks launched
        self.programs_per_block = programs_per_block   # programs of the grid's x per block (program_packing.py)
        self.slot_kinds = [k for k in param_kinds if k is not None] + (["int32"] if row_loop else [])
        self.shared_bytes = shared_bytes     # dynamic shared memory per program
        self.disk_key = disk_key
        self.options = options               # transpiler.options.CompileOptions it was made under
        self.required_arch = required_arch   # ArchRequirement: the oldest GPU the source runs on, or None
        self.maxnreg = maxnreg               # registers per thread a launch asked for (maxnreg=), or None
        self.tensor_maps = tuple(tensor_maps)   # TMA parameters after the arguments (runtime/tensor_maps.py)
        self._cubins = OnceMap()             # arch -> cubin bytes
        self._functions = OnceMap()          # device -> (module, function, context)
        self._from_disk = set()              # architectures whose cubin came from the disk cache
        self.occupancy = {}                  # arch -> occupancy.Occupancy, for cubins this process compiled

    def cubin(self, arch):
        return self._cubins.get(arch, lambda: self._build_cubin(arch))

    def check_arch(self, arch):
        """LaunchError at the op that needs a newer GPU than `arch` (before NVRTC would fail on it)."""
        need = self.required_arch
        if need is None:
            return
        from ..analysis.arch_requirements import capability_of   # here: a warm start imports no analysis
        if capability_of(arch) < need.capability:
            raise LaunchError(f"{need.what} needs a GPU of compute capability {need.capability // 10}."
                              f"{need.capability % 10} ({need.arch}) or newer; this one is {arch}", need.loc,
                              kernel=self.name, hint="run it on an Ampere (sm_80) or newer GPU, or on the CPU "
                                                     "with kernel.interpret[grid](...)")

    def _build_cubin(self, arch):
        self.check_arch(arch)
        cubin = cache.load_cubin(self.disk_key, arch) if self.disk_key else None
        if cubin is not None:
            self._from_disk.add(arch)
            return cubin
        return self._compile(arch)

    def _compile(self, arch):
        if self.maxnreg is not None:         # the user's register budget replaces the occupancy tuning
            from ..emit_cuda import MAXNREG_MACRO
            cubin, occupancy = compiler.compile_cubin(self.source, self.name, arch,
                                                      (f"-D{MAXNREG_MACRO}={self.maxnreg}",)), None
        else:
            cubin, occupancy = compiler.compile_tuned(self.source, self.name, arch, self.shared_bytes)
        if occupancy is not None:
            self.occupancy[arch] = occupancy
        if self.disk_key:
            cache.store_cubin(self.disk_key, arch, cubin)
        return cubin

    def resident_programs(self, device, num_warps):
        """Programs of this variant all SMs of `device` hold at once (one wave), from the cubin's registers;
        None when the architecture's limits or the register count are unknown."""
        from .occupancy import blocks_per_sm, cubin_resources, limits_for
        arch = compiler.device_arch(device)
        limits, report = limits_for(arch), cubin_resources(self.cubin(arch))
        if limits is None or report is None:
            return None
        per_sm = blocks_per_sm(report.registers, 32 * num_warps, self.shared_bytes, limits)
        return max(1, per_sm) * compiler.device_attribute(MULTIPROCESSOR_COUNT, device)

    def function(self, device):
        """`(module, function, context)` of this variant loaded on `device` (loaded once per device). Its
        launcher opts the function in to `shared_bytes` above 48 KiB."""
        return self._functions.get(device, lambda: self._load(device))

    def _load(self, device):
        compiler.check_shared_memory(self.name, device, self.shared_bytes)   # before any NVRTC run
        arch = compiler.device_arch(device)
        try:
            return compiler.load_function(self.cubin(arch), self.name, device)
        except Exception as e:
            if arch not in self._from_disk or getattr(e, "status", None) in STICKY_ERRORS:
                raise
            # A cubin from disk that the driver refuses (made by another NVRTC, or damaged): make it again.
            self._from_disk.discard(arch)
            self._cubins.values[arch] = cubin = self._compile(arch)
            return compiler.load_function(cubin, self.name, device)


def _at_definition(method):
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


class KernelInterface:
    """Triton's `KernelInterface`: what `kernel[grid](...)` objects are (kernels, autotuners, heuristics), for
    `isinstance` checks in user code."""


class Kernel(KernelInterface):
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
        self._launcher_map = OnceMap()       # (*spec key, num_warps, num_stages, device) -> Launcher
        self._launchers = self._launcher_map.values
        self._binder = None                  # generated on first use: launch_key.make_binder
        self._grid_launches = {}             # tuple grid -> its `kernel[grid]` function
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

    def _launch_error(self, message, hint=None):
        return LaunchError(message, self.definition(), kernel=self.__name__, hint=hint)

    # -- Triton-compatible entry points ----------------------------------------------------------------------
    def __getitem__(self, grid):
        # The launch function of a tuple grid is kept (a few hundred at most): making one costs more than finding it.
        try:
            return self._grid_launches[grid]
        except (KeyError, TypeError):       # not seen yet, or not hashable (a callable grid is hashable)
            pass
        launch = self._launch

        def launch_on_grid(*args, num_warps=4, num_stages=3, stream=None, **kwargs):
            try:
                return launch(grid, args, num_warps, num_stages, stream, kwargs)
            except TranspilerError as e:    # a try costs nothing until it catches
                raise user_facing(e)  # (transpiler's own frames are hidden: TRANSPILER_DEBUG=1 shows them)
        if type(grid) is tuple and len(self._grid_launches) < 256:
            try:
                self._grid_launches[grid] = launch_on_grid
            except TypeError:
                pass
        return launch_on_grid

    @_at_definition
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

    @_at_definition
    def _interpret_call(self, grid, *args, **kwargs):
        return self._interpret(grid, args, kwargs)

    @_at_definition
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
        launcher = cls(module, function, context, var.slot_kinds, num_warps, name=self.__name__,
                       shared_bytes=var.shared_bytes, slot_names=slot_names + ["grid x"] * var.row_loop,
                       tensor_maps=TensorMaps(var.tensor_maps) if var.tensor_maps else None)
        if not var.row_loop:
            return launcher
        blocks = (var.resident_programs(device, num_warps) or UNKNOWN_RESIDENT_PROGRAMS) if var.persistent else None
        return RowLoopLauncher(launcher, blocks, var.programs_per_block)

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
            raise self._launch_error(f"num_warps must be a power of two between 1 and 32, not {nw!r}",
                                     hint="use 1, 2, 4, 8, 16 or 32")

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

    # -- specialization ----------------------------------------------------------------------------------
    @_at_definition
    def spec_key(self, values):
        """The specialization key of argument values given in parameter order (host arrays and `StandIn`s
        allowed)."""
        key, _, _, _ = (self._binder or self._make_binder())(tuple(values), None, None, False)
        return launch_key.specialization_of(key)

    def source_hash(self):
        if self._source_hash is None:
            self._source_hash = _dependencies_hash(self.fn)
        return self._source_hash

    def compile_options(self):
        """The compile options in force for this kernel now (its own `debug` flag, the environment)."""
        return options_mod.from_env(self.debug)

    def variant(self, key, values, num_warps, num_stages=3, arch=None):
        """The compiled variant of specialization `key` (built once per compile options; `values` are the
        arguments in order) for a device of architecture `arch` (None: any; the source differs only where the
        architecture has instructions the others lack, see `targets.source_target`)."""
        opts = self.variant_options(key, num_warps, num_stages, arch)
        return self._variant_map.get((key, opts), lambda: self._build_variant(key, values, opts))

    def variant_options(self, key, num_warps, num_stages=3, arch=None):
        """The frozen `CompileOptions` a variant of specialization `key` is made under: this kernel's compile
        options now, with the launch options (`maxnreg` read from the key's option parts)."""
        maxnreg = launch_key.option_parts(key, len(self._names)).get("maxnreg")
        return self.compile_options().for_launch(num_warps, num_stages, source_target(arch), maxnreg)

    def _maxnreg_part(self, maxnreg):
        """The key part a launch's `maxnreg` adds after the parameters' parts (none for the default)."""
        if maxnreg is None:
            return ()
        if type(maxnreg) is not int or not 1 <= maxnreg <= 255:
            raise self._launch_error(f"maxnreg must be an int between 1 and 255 registers per thread, not "
                                     f"{maxnreg!r}", hint="ptxas raises values below its lower bound (24 on sm_90)")
        return (("maxnreg", maxnreg),)

    def _build_variant(self, key, values, opts):
        disk_key = cache.entry_key((self.source_hash(), key, opts, cache.toolchain_fingerprint()))
        entry = cache.load(disk_key)
        if entry is None:
            emitted = self._generate(key, values, opts)
            param_kinds = [None if c else ("ptr" if part[0] in ("ptr", "none") else part[0])
                           for part, c in zip(key, self._constexpr_mask)]
            entry = {"name": self.fn.__name__, "source": emitted.source, "param_kinds": param_kinds,
                     "shared_bytes": emitted.shared_bytes, "row_loop": emitted.row_loop,
                     "persistent": emitted.persistent, "programs_per_block": emitted.programs_per_block,
                     "required_arch": requirement_to_json(emitted.required_arch, self.fn),
                     "tensor_maps": list(emitted.tensor_maps)}
            cache.store(disk_key, entry)
        dump = os.environ.get("TRANSPILER_DUMP_DIR")
        if dump:
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, f"{self.fn.__name__}_{disk_key[:8]}.cu"), "w") as f:
                f.write(entry["source"])
        return CompiledVariant(entry["name"], entry["source"], entry["param_kinds"], entry.get("shared_bytes", 0),
                               disk_key, opts, requirement_from_json(entry.get("required_arch"), self.fn),
                               opts.maxnreg, entry.get("tensor_maps", ()), entry.get("row_loop", False),
                               entry.get("persistent"), entry.get("programs_per_block", 1))

    def _arg_specs(self, key, values):
        from ..analysis.specialization import arg_spec
        return [arg_spec(n, part, _unwrap(v), c)
                for n, part, v, c in zip(self._names, key, values, self._constexpr_mask)]

    def _generate(self, key, values, opts):
        """Parse → analysis → emission: the `EmittedKernel` (source and dynamic shared memory) of a variant made
        under the frozen compile options `opts` (the IR from the source and the specialization alone)."""
        from ..analysis import analyze
        from ..emit_cuda import emit_kernel
        from ..parse import build_kernel_ir
        ir = build_kernel_ir(self.fn, self._arg_specs(key, values), opts)
        try:
            return emit_kernel(ir, analyze(ir, opts))
        except TranspilerError as e:
            raise e.with_context(kernel=self.fn.__name__)
        except Exception as e:   # a typed IR the later passes cannot handle is our bug, not the user's
            raise InternalCompilerError(
                f"generating CUDA for '{self.fn.__name__}' failed after the kernel type-checked "
                f"({type(e).__name__}: {e}); this is a bug in transpiler, not in your kernel",
                self.definition(), kernel=self.fn.__name__,
                hint="please report it with the kernel's source; kernel.interpret[grid](...) runs it on the CPU "
                     "meanwhile") from e

    # -- public helpers ----------------------------------------------------------------------------------
    @_at_definition
    def cuda_source(self, *args, num_warps=4, num_stages=3, arch=None, **kwargs):
        """The `.cu` of the specialization these arguments select (NumPy arrays and `StandIn`s may stand in
        for device ones), for a device of architecture `arch` ('sm_90a': with warpgroup MMA)."""
        return self.compiled_variant(*args, num_warps=num_warps, num_stages=num_stages, arch=arch, **kwargs).source

    @_at_definition
    def compiled_variant(self, *args, num_warps=4, num_stages=3, arch=None, maxnreg=None, **kwargs):
        """The specialization these arguments select: its source and launch needs (no GPU needed)."""
        values = self._bind_for_compile(args, kwargs, num_warps)
        flat = tuple_args.flattened(self, values)
        if flat is not None:
            return flat[0].compiled_variant(*flat[1], num_warps=num_warps, num_stages=num_stages, arch=arch,
                                            maxnreg=maxnreg)
        return self.variant(self.spec_key(values) + self._maxnreg_part(maxnreg), values, num_warps, num_stages,
                            arch)

    @_at_definition
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

    @_at_definition
    def check_launch_arguments(self, args, kwargs):
        """Raise the LaunchError a launch with these arguments would raise before any compile: arrays in host
        memory or on two devices, unknown or missing arguments (the autotuner asks before timing configs)."""
        kwargs = dict(kwargs)
        num_warps, num_stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
        kwargs.pop("stream", None)
        values = self._bind_args(args, kwargs)
        (self._binder or self._make_binder())(values, num_warps, num_stages, True)

    @_at_definition
    def ir(self, *args, **kwargs):
        """The typed IR of a specialization (for tests and for reading): made from the source and the
        specialization alone, so it takes no launch options (`analysis` does)."""
        for option in ("num_warps", "num_stages", "maxnreg", "arch"):
            if option in kwargs:
                raise TypeError(f"{self.__name__}.ir() takes no launch options ({option}): the IR does not depend "
                                f"on them; {self.__name__}.analysis(..., {option}=...) applies them")
        return self._ir_of(self._bind_for_compile(args, kwargs, 4))[0]

    @_at_definition
    def analysis(self, *args, num_warps=4, num_stages=3, arch=None, maxnreg=None, **kwargs):
        """(IR, analysis) of the specialization these arguments select under these launch options, for a device
        of architecture `arch` (see `cuda_source`): every decision, before any CUDA is written."""
        from ..analysis import analyze
        ir, kernel, key = self._ir_of(self._bind_for_compile(args, kwargs, num_warps))
        key = key + kernel._maxnreg_part(maxnreg)
        return ir, analyze(ir, kernel.variant_options(key, num_warps, num_stages, arch))

    def _ir_of(self, values):
        """(IR, the kernel that built it, its specialization key): tuple arguments flattened first."""
        from ..parse import build_kernel_ir
        flat = tuple_args.flattened(self, values)
        if flat is not None:
            kernel, leaves = flat
            return kernel._ir_of(kernel._bind_for_compile(leaves, {}, 4))
        key = self.spec_key(values)
        return build_kernel_ir(self.fn, self._arg_specs(key, values), self.compile_options()), self, key

    @_at_definition
    def explain(self, *args, num_warps=4, num_stages=3, arch=None, **kwargs):
        """A readable report of this specialization's decisions: layouts, vector widths, reductions, shared
        memory, per Python line (see `transpiler/explain.py`); with `arch`, also registers and occupancy."""
        from ..explain import explain_kernel
        return explain_kernel(self, *args, num_warps=num_warps, num_stages=num_stages, arch=arch, **kwargs)


def requirement_to_json(need, fn):
    """An ArchRequirement for the disk cache. Entries are shared by every copy of a kernel's source, wherever
    it is: a location in the kernel's own file is kept relative to its first line (None for the file)."""
    if need is None:
        return None
    loc = need.loc
    if loc is None:
        return [need.capability, need.what]
    code = fn.__code__
    if loc.file == code.co_filename:
        return [need.capability, need.what, None, loc.line - code.co_firstlineno, loc.col, loc.function]
    return [need.capability, need.what, loc.file, loc.line, loc.col, loc.function]


def requirement_from_json(data, fn):
    if not data:
        return None
    from ..analysis.arch_requirements import ArchRequirement
    loc = None
    if len(data) >= 6:
        file, line, col, function = data[2:6]
        if file is None:
            file, line = fn.__code__.co_filename, line + fn.__code__.co_firstlineno
        loc = SourceLocation(file, line, col, function)
    return ArchRequirement(data[0], data[1], loc)


def _unwrap(v):
    return v.value if isinstance(v, constexpr) else v


def _dependencies_hash(fn, seen=None):
    """Hash of fn's source and the sources of the @transpile helpers it names (recursively)."""
    seen = seen if seen is not None else set()
    if fn in seen:
        return ""
    seen.add(fn)
    h = hashlib.sha256(_source_text(fn).encode())
    for name in fn.__code__.co_names:
        obj = fn.__globals__.get(name)
        if getattr(obj, "__transpiler_kernel__", False):
            h.update(_dependencies_hash(obj.fn, seen).encode())
    return h.hexdigest()


def _source_text(fn):
    """The lines of fn's definition, from its first decorator to its last line of code. Found from the code
    object's line table rather than `inspect.getsource`, whose tokenizer costs a new process ~10 ms."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return f"{fn.__qualname__}:{code.co_code.hex()}:{code.co_consts!r}"
    last = max((line for _, _, line in code.co_lines() if line), default=code.co_firstlineno)
    return "".join(lines[code.co_firstlineno - 1:last])


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
