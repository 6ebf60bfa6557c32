"""`@transpile`: the kernel object, its launches, its specializations and its generated source.

`kernel[grid](*args, num_warps=4, num_stages=3, stream=None, **constexprs)` launches. The launch path is
short on purpose (launch overhead is a product feature):
  1. one pass over the arguments (a function generated per kernel by `launch_key.make_binder`) gives the
     specialization key, the parameter slot values, the device holding the arrays and their frameworks;
  2. the key, with num_warps, num_stages and the device, finds a `Launcher` in a dict;
  3. the launcher packs the slots into its buffer and calls cuLaunchKernel on the current stream of the
     arrays' framework, in their device's context.
Arguments given by keyword, defaults, a callable grid and everything unusual take a slower, general path
(`_bind_args`, `_grid`) before step 1. A missing launcher is built once per key, whatever the number of
threads asking (`once.OnceMap`): the variant (memory, then the disk cache of generated CUDA, then parse →
analysis → emission), its cubin for the device's architecture (memory, disk, then NVRTC) and the cubin loaded
in the device's context.
"""
from __future__ import annotations

import hashlib
import inspect
import linecache
import os

from ..errors import LaunchError, TranspilerError
from ..language.core import constexpr, current_interpreter
from . import cache, compiler
from .launch_key import TORCH, binder_source, make_binder
from .launcher import Launcher, cupy_stream, stream_handle, torch_stream
from .once import OnceMap

MAX_GRID = (2**31 - 1, 65535, 65535)
_IGNORED_OPTIONS = ("num_ctas", "enable_fp_fusion", "maxnreg", "debug")


def _is_constexpr_param(param):
    ann = param.annotation
    return ann is constexpr or (isinstance(ann, str) and ann.split(".")[-1] == "constexpr")


class CompiledVariant:
    """One specialization: its source, its cubin per architecture and its loaded function per device."""

    def __init__(self, name, source, param_kinds, disk_key=None):
        self.name = name
        self.source = source
        self.param_kinds = param_kinds       # per kernel parameter: "ptr", a dtype name, or None (constexpr)
        self.slot_kinds = [k for k in param_kinds if k is not None]
        self.disk_key = disk_key
        self._cubins = OnceMap()             # arch -> cubin bytes
        self._functions = OnceMap()          # device -> (module, function, context)
        self._from_disk = set()              # architectures whose cubin came from the disk cache

    def cubin(self, arch):
        return self._cubins.get(arch, lambda: self._build_cubin(arch))

    def _build_cubin(self, arch):
        cubin = cache.load_cubin(self.disk_key, arch) if self.disk_key else None
        if cubin is not None:
            self._from_disk.add(arch)
            return cubin
        return self._compile(arch)

    def _compile(self, arch):
        cubin = compiler.compile_cubin(self.source, self.name, arch)
        if self.disk_key:
            cache.store_cubin(self.disk_key, arch, cubin)
        return cubin

    def function(self, device):
        """`(module, function, context)` of this variant loaded on `device` (loaded once per device)."""
        return self._functions.get(device, lambda: self._load(device))

    def _load(self, device):
        arch = compiler.device_arch(device)
        try:
            return compiler.load_function(self.cubin(arch), self.name, device)
        except Exception:
            if arch not in self._from_disk:
                raise
            # A cubin from disk that the driver refuses (made by another NVRTC, or damaged): make it again.
            self._from_disk.discard(arch)
            self._cubins.values[arch] = cubin = self._compile(arch)
            return compiler.load_function(cubin, self.name, device)


class Kernel:
    __transpiler_kernel__ = True

    def __init__(self, fn):
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
        self._variant_map = OnceMap()        # (spec key, num_warps) -> CompiledVariant
        self.variants = self._variant_map.values
        self._launcher_map = OnceMap()       # (*spec key, num_warps, num_stages, device) -> Launcher
        self._launchers = self._launcher_map.values
        self._binder = None                  # generated on first use: launch_key.make_binder
        self._grid_launches = {}             # tuple grid -> its `kernel[grid]` function
        self._source_hash = None
        self._interpret_all = os.environ.get("TRANSPILER_INTERPRET") == "1"
        self._arity = -1 if self._interpret_all else len(self._names)   # -1: every launch takes the slow path

    # -- Triton-compatible entry points ----------------------------------------------------------------------
    def __getitem__(self, grid):
        # The launch function of a tuple grid is kept (a few hundred at most): making one costs more than finding it.
        try:
            return self._grid_launches[grid]
        except (KeyError, TypeError):       # not seen yet, or not hashable (a callable grid is hashable)
            pass
        launch = self._launch

        def launch_on_grid(*args, num_warps=4, num_stages=3, stream=None, **kwargs):
            return launch(grid, args, num_warps, num_stages, stream, kwargs)
        if type(grid) is tuple and len(self._grid_launches) < 256:
            try:
                self._grid_launches[grid] = launch_on_grid
            except TypeError:
                pass
        return launch_on_grid

    def run(self, *args, grid, num_warps=4, num_stages=3, stream=None, **kwargs):
        return self._launch(grid, args, num_warps, num_stages, stream, kwargs)

    def __call__(self, *args, **kwargs):
        if current_interpreter() is not None:
            return self.fn(*args, **kwargs)
        raise LaunchError(f"launch kernels with {self.__name__}[grid](...); a @transpile function can be called "
                          "directly only from inside another kernel", kernel=self.__name__)

    @property
    def interpret(self):
        """`kernel.interpret[grid](*args)`: run on the CPU with NumPy."""
        kernel = self

        class _Interpret:
            def __getitem__(self, grid):
                return lambda *args, **kwargs: kernel._interpret(grid, args, kwargs)
        return _Interpret()

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
        if kwargs or len(args) != self._arity:
            if self._interpret_all:
                return self._interpret(grid, args, dict(kwargs, num_warps=num_warps, num_stages=num_stages))
            args = self._bind_args(args, kwargs)
        key, values, device, frameworks = (self._binder or self._make_binder())(args, num_warps, num_stages)
        launcher = self._launchers.get(key)
        if launcher is None:
            launcher = self._launcher_map.get(key, lambda: self._make_launcher(key, args, num_warps, device))
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
                launcher.launch(gx, gy, gz, values, stream)
                return None
        except LaunchError:
            raise
        except (TypeError, OverflowError):
            pass                     # not plain positive ints (floats, NumPy ints, too large): the general path
        except Exception as e:
            self._grid(grid, args, num_warps, num_stages)         # a grid past the hardware limits says so
            raise LaunchError(f"the launch failed: {e}", kernel=self.__name__) from e
        grid = self._grid(grid, args, num_warps, num_stages)
        if 0 in grid:
            return None
        try:
            launcher.launch(*grid, values, stream)
        except LaunchError:
            raise
        except Exception as e:
            raise LaunchError(f"the launch failed: {e}", kernel=self.__name__) from e
        return None

    def _make_binder(self):
        self._binder = make_binder(self._names, self._constexpr_mask, self.__name__)
        return self._binder

    def launch_binder_source(self) -> str:
        """The Python function generated for this kernel's launches (the per-launch specialization pass)."""
        return binder_source(self._names, self._constexpr_mask, self.__name__)

    def _make_launcher(self, key, args, num_warps, device):
        self._check_num_warps(num_warps)
        var = self.variant(key[:-3], args, num_warps)
        module, function, context = var.function(device)
        return Launcher(module, function, context, var.slot_kinds, num_warps, name=self.__name__)

    # -- binding -----------------------------------------------------------------------------------------
    def _bind_args(self, args, kwargs):
        """The general path: keyword arguments and defaults to one value per parameter, in order."""
        for k in _IGNORED_OPTIONS:
            kwargs.pop(k, None)
        if len(args) > len(self._names):
            raise LaunchError(f"{self.__name__} takes {len(self._names)} arguments but {len(args)} were given",
                              kernel=self.__name__)
        bound = dict(zip(self._names, args))
        for k, v in kwargs.items():
            if k not in self.signature.parameters:
                raise LaunchError(f"unknown keyword argument '{k}'", kernel=self.__name__,
                                  hint=f"parameters are: {', '.join(self.arg_names)}")
            if k in bound:
                raise LaunchError(f"argument '{k}' given twice", kernel=self.__name__)
            bound[k] = v
        for name in self._names:
            if name not in bound:
                if name in self.defaults:
                    bound[name] = self.defaults[name]
                else:
                    what = "constexpr" if name in self.constexpr_names else "argument"
                    raise LaunchError(f"missing {what} '{name}'", kernel=self.__name__)
        return tuple(bound[n] for n in self._names)

    def _check_num_warps(self, nw):
        if not isinstance(nw, int) or nw <= 0 or nw & (nw - 1) or nw > 32:
            raise LaunchError(f"num_warps must be a power of two between 1 and 32, not {nw!r}", kernel=self.__name__)

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
            raise LaunchError(f"grid must be an int, a tuple of 1 to 3 ints or a callable returning one, not {grid!r}",
                              kernel=self.__name__) from None
        if not 1 <= len(grid) <= 3:
            raise LaunchError(f"grid must have 1 to 3 dimensions, not {len(grid)}", kernel=self.__name__)
        for i, (g, limit) in enumerate(zip(grid, MAX_GRID)):
            if g < 0 or g > limit:
                raise LaunchError(f"grid dimension {i} is {g}, outside the hardware limit 0..{limit}",
                                  kernel=self.__name__)
        return grid + (1,) * (3 - len(grid))

    # -- specialization ----------------------------------------------------------------------------------
    def spec_key(self, values):
        """The specialization key of argument values given in parameter order (host arrays allowed)."""
        key, _, _, _ = (self._binder or self._make_binder())(tuple(values), None, None, False)
        return key[:-3]

    def source_hash(self):
        if self._source_hash is None:
            self._source_hash = _dependencies_hash(self.fn)
        return self._source_hash

    def variant(self, key, values, num_warps):
        """The compiled variant of specialization `key` (built once; `values` are the arguments in order)."""
        return self._variant_map.get((key, num_warps), lambda: self._build_variant(key, values, num_warps))

    def _build_variant(self, key, values, num_warps):
        disk_key = cache.entry_key((self.source_hash(), key, num_warps, cache.toolchain_fingerprint()))
        entry = cache.load(disk_key)
        if entry is None:
            source = self._generate(key, values, num_warps)
            param_kinds = [None if c else ("ptr" if part[0] == "ptr" else part[0])
                           for part, c in zip(key, self._constexpr_mask)]
            entry = {"name": self.fn.__name__, "source": source, "param_kinds": param_kinds}
            cache.store(disk_key, entry)
        dump = os.environ.get("TRANSPILER_DUMP_DIR")
        if dump:
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, f"{self.fn.__name__}_{disk_key[:8]}.cu"), "w") as f:
                f.write(entry["source"])
        return CompiledVariant(entry["name"], entry["source"], entry["param_kinds"], disk_key)

    def _arg_specs(self, key, values):
        from ..analysis.specialization import arg_spec
        return [arg_spec(n, part, _unwrap(v), c)
                for n, part, v, c in zip(self._names, key, values, self._constexpr_mask)]

    def _generate(self, key, values, num_warps):
        from ..analysis import analyze
        from ..emit_cuda import emit_kernel
        from ..parse import build_kernel_ir
        ir = build_kernel_ir(self.fn, self._arg_specs(key, values), num_warps)
        analysis = analyze(ir)
        try:
            return emit_kernel(ir, analysis)
        except TranspilerError as e:
            raise e.with_context(kernel=self.fn.__name__)

    # -- public helpers ----------------------------------------------------------------------------------
    def cuda_source(self, *args, num_warps=4, **kwargs):
        """The `.cu` of the specialization these arguments select (NumPy arrays may stand in for device ones)."""
        kwargs.pop("num_stages", None)
        kwargs.pop("stream", None)
        self._check_num_warps(num_warps)
        values = self._bind_args(args, kwargs)
        return self.variant(self.spec_key(values), values, num_warps).source

    def ir(self, *args, num_warps=4, **kwargs):
        """The typed IR of a specialization (for tests and for reading)."""
        from ..parse import build_kernel_ir
        kwargs.pop("num_stages", None)
        kwargs.pop("stream", None)
        self._check_num_warps(num_warps)
        values = self._bind_args(args, kwargs)
        return build_kernel_ir(self.fn, self._arg_specs(self.spec_key(values), values), num_warps)


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
        return lambda f: Kernel(f)
    return Kernel(fn)


def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
