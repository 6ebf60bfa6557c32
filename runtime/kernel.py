"""`@transpile`: the kernel object, its launches, its specializations and its generated source.

`kernel[grid](*args, num_warps=4, num_stages=3, **constexprs)` binds the arguments, computes the
specialization key (cheap: a few checks per argument), finds or builds the compiled variant (memory cache,
then the disk cache of generated CUDA, then parse → analysis → emission), and launches on the device holding
the arrays, on the current stream of the framework they come from.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import threading

import numpy as np

from .. import dtypes
from ..analysis.specialization import arg_spec, scalar_key
from ..errors import InternalCompilerError, LaunchError, SourceLocation, TranspilerError
from ..language.core import constexpr, current_interpreter
from . import cache
from .args import array_info, check_devices, pointer_key

MAX_GRID = (2**31 - 1, 65535, 65535)
_NUMPY_OF = {d.name: d.numpy.type for d in dtypes.ALL if d.numpy is not None}


def _is_constexpr_param(param):
    ann = param.annotation
    return ann is constexpr or (isinstance(ann, str) and ann.split(".")[-1] == "constexpr")


class CompiledVariant:
    """One specialization: its source, and (on a GPU) the loaded function per device."""

    def __init__(self, name, source, param_kinds, shared_bytes=0):
        self.name = name
        self.source = source
        self.param_kinds = param_kinds       # per kernel parameter: "ptr", a dtype name, or None (constexpr)
        self.shared_bytes = shared_bytes     # dynamic shared memory per program
        self.functions = {}
        self.lock = threading.Lock()

    def function(self, device):
        fn = self.functions.get(device)
        if fn is None:
            with self.lock:
                fn = self.functions.get(device)
                if fn is None:
                    from .compiler import load_module
                    fn = load_module(self.source, self.name, device, self.shared_bytes)
                    self.functions[device] = fn
        return fn


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
        self._runtime_names = [n for n in self.arg_names if n not in self.constexpr_names]
        self.defaults = {p.name: p.default for p in self.params if p.default is not inspect.Parameter.empty}
        self.variants = {}
        self.lock = threading.Lock()
        self._source_hash = None

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
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def __call__(self, *args, **kwargs):
        if current_interpreter() is not None:
            from ..interpreter.loops import interpreted_function
            return interpreted_function(self.fn)(*args, **kwargs)
        raise self._launch_error(f"a kernel is launched with {self.__name__}[grid](...), not called directly",
                                 hint="call it directly only from inside another kernel, where it is inlined")

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
        bound, options = self._bind(args, kwargs)
        grid = self._grid(grid, bound, options)
        positional = [bound[n] for n in self.arg_names if n not in self.constexpr_names]
        constexprs = {n: bound[n] for n in self.arg_names if n in self.constexpr_names}
        return interpret(self.fn, grid, positional, constexprs, num_warps=options["num_warps"])

    # -- binding -----------------------------------------------------------------------------------------
    def _bind(self, args, kwargs):
        options = {"num_warps": kwargs.pop("num_warps", 4), "num_stages": kwargs.pop("num_stages", 3),
                   "stream": kwargs.pop("stream", None)}
        for k in ("num_ctas", "enable_fp_fusion", "maxnreg", "debug"):
            kwargs.pop(k, None)
        nw = options["num_warps"]
        if not isinstance(nw, int) or nw <= 0 or nw & (nw - 1) or nw > 32:
            raise self._launch_error(f"num_warps must be a power of two between 1 and 32, not {nw!r}",
                                     hint="use 1, 2, 4, 8, 16 or 32")
        if len(args) > len(self.arg_names):
            raise self._launch_error(f"{self.__name__} takes {len(self.arg_names)} arguments but {len(args)} were "
                                     "given", hint=f"parameters are: {', '.join(self.arg_names)}")
        bound = dict(zip(self.arg_names, args))
        for k, v in kwargs.items():
            if k not in self.signature.parameters:
                raise self._launch_error(f"unknown keyword argument '{k}'",
                                         hint=f"parameters are: {', '.join(self.arg_names)}")
            if k in bound:
                raise self._launch_error(f"argument '{k}' given twice",
                                         hint="pass it either by position or by keyword")
            bound[k] = v
        for name in self.arg_names:
            if name not in bound:
                if name in self.defaults:
                    bound[name] = self.defaults[name]
                else:
                    what = "constexpr" if name in self.constexpr_names else "argument"
                    hint = (f"pass it as a keyword: {self.__name__}[grid](..., {name}=...)"
                            if name in self.constexpr_names else f"parameters are: {', '.join(self.arg_names)}")
                    raise self._launch_error(f"missing {what} '{name}'", hint=hint)
        for name in self.constexpr_names:
            if isinstance(bound[name], constexpr):
                bound[name] = bound[name].value
        return bound, options

    def _grid(self, grid, bound, options):
        if callable(grid):
            grid = grid(dict(bound, **{k: v for k, v in options.items() if k != "stream"}))
        if isinstance(grid, int):
            grid = (grid,)
        grid = tuple(int(g) for g in grid)
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
    def _key_and_infos(self, bound):
        key, infos = [], []
        for name in self.arg_names:
            v = bound[name]
            if name in self.constexpr_names:
                key.append(("c", _hashable(v)))
                continue
            try:
                info = array_info(v) if not isinstance(v, (int, float, bool, np.generic)) else None
            except TypeError as e:
                raise self._launch_error(f"argument '{name}': {e}",
                                         hint="convert it, e.g. to float32, float16, bfloat16 or an integer type"
                                         ) from None
            if info is not None:
                infos.append(info)
                key.append(pointer_key(info))
            else:
                try:
                    key.append(scalar_key(v))
                except TypeError:
                    raise self._launch_error(f"argument '{name}' has unsupported type {type(v).__name__}",
                                             hint="pass an array (CuPy, torch, anything with "
                                                  "__cuda_array_interface__) or a number") from None
                infos.append(None)
        return tuple(key), infos

    def source_hash(self):
        if self._source_hash is None:
            self._source_hash = _dependencies_hash(self.fn)
        return self._source_hash

    def variant(self, key, bound, num_warps, num_stages=3):
        full_key = (key, num_warps, num_stages)
        var = self.variants.get(full_key)
        if var is not None:
            return var
        with self.lock:
            var = self.variants.get(full_key)
            if var is None:
                var = self._build_variant(key, bound, num_warps, num_stages)
                self.variants[full_key] = var
        return var

    def _build_variant(self, key, bound, num_warps, num_stages):
        disk_key = cache.entry_key((self.source_hash(), key, num_warps, num_stages, cache.toolchain_fingerprint()))
        entry = cache.load(disk_key)
        if entry is None:
            emitted = self._generate(key, bound, num_warps, num_stages)
            param_kinds = []
            for name, part in zip(self.arg_names, key):
                param_kinds.append(None if part[0] == "c" else ("ptr" if part[0] == "ptr" else part[0]))
            entry = {"name": self.fn.__name__, "source": emitted.source, "param_kinds": param_kinds,
                     "shared_bytes": emitted.shared_bytes}
            cache.store(disk_key, entry)
        dump = os.environ.get("TRANSPILER_DUMP_DIR")
        if dump:
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, f"{self.fn.__name__}_{disk_key[:8]}.cu"), "w") as f:
                f.write(entry["source"])
        return CompiledVariant(entry["name"], entry["source"], entry["param_kinds"], entry.get("shared_bytes", 0))

    def _generate(self, key, bound, num_warps, num_stages):
        from ..analysis import analyze
        from ..emit_cuda import emit_kernel
        from ..parse import build_kernel_ir
        specs = []
        for name, part in zip(self.arg_names, key):
            if part[0] == "c":
                specs.append(arg_spec(name, part, bound[name], True))
            else:
                specs.append(arg_spec(name, part))
        ir = build_kernel_ir(self.fn, specs, num_warps, num_stages)
        try:
            return emit_kernel(ir, analyze(ir))
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
    def cuda_source(self, *args, num_warps=4, num_stages=3, **kwargs):
        """The `.cu` of the specialization these arguments select (NumPy arrays may stand in for device ones)."""
        return self.compiled_variant(*args, num_warps=num_warps, num_stages=num_stages, **kwargs).source

    def compiled_variant(self, *args, num_warps=4, num_stages=3, **kwargs):
        """The specialization these arguments select: its source and launch needs (no GPU needed)."""
        bound, options = self._bind(args, dict(kwargs, num_warps=num_warps, num_stages=num_stages))
        key, _ = self._key_and_infos(bound)
        return self.variant(key, bound, options["num_warps"], options["num_stages"])

    def warmup(self, *args, grid=None, **kwargs):
        """Build the variant a launch with these arguments would use, and load it on their device, without
        launching (the autotuner compiles its configs in parallel through this). Returns the CUDA source."""
        bound, options = self._bind(args, kwargs)
        key, infos = self._key_and_infos(bound)
        var = self.variant(key, bound, options["num_warps"], options["num_stages"])
        devices = {i.device for i in infos if i is not None}
        if None not in devices and len(devices) <= 1 and gpu_available():
            import cupy
            var.function(devices.pop() if devices else cupy.cuda.runtime.getDevice())
        return var.source

    def ir(self, *args, num_warps=4, num_stages=3, **kwargs):
        """The typed IR of a specialization (for tests and for reading)."""
        from ..parse import build_kernel_ir
        bound, options = self._bind(args, dict(kwargs, num_warps=num_warps, num_stages=num_stages))
        key, _ = self._key_and_infos(bound)
        specs = [arg_spec(n, p, bound[n], p[0] == "c") for n, p in zip(self.arg_names, key)]
        return build_kernel_ir(self.fn, specs, options["num_warps"], options["num_stages"])

    def explain(self, *args, num_warps=4, **kwargs):
        """A readable report of this specialization's decisions: layouts, vector widths, reductions, shared
        memory, per Python line (see `transpiler/explain.py`)."""
        from ..explain import explain_kernel
        return explain_kernel(self, *args, num_warps=num_warps, **kwargs)

    # -- launch ------------------------------------------------------------------------------------------
    def run(self, *args, grid, **kwargs):
        if os.environ.get("TRANSPILER_INTERPRET") == "1":
            return self._interpret(grid, args, kwargs)
        bound, options = self._bind(args, kwargs)
        key, infos = self._key_and_infos(bound)
        arrays = [i for i in infos if i is not None]
        try:
            device = check_devices(self.__name__, self._runtime_names, infos)
        except LaunchError as e:
            raise e.at(self.definition()) from None
        grid = self._grid(grid, bound, options)
        if 0 in grid:
            return None
        var = self.variant(key, bound, options["num_warps"], options["num_stages"])
        import cupy
        if device is None:
            device = cupy.cuda.runtime.getDevice()
        fn = var.function(device)
        values = []
        for name, kind, info in zip(self.arg_names, var.param_kinds, infos):
            if kind is None:
                continue
            if kind == "ptr":
                values.append(np.uint64(info.ptr))
            else:
                values.append(_NUMPY_OF[kind](bound[name]))
        stream = options["stream"]
        if stream is None and any(i.framework == "torch" for i in arrays):
            stream = _torch_stream(device)
        elif isinstance(stream, int):
            stream = _external_stream(stream)
        # Entering a device context costs two driver calls; do it only when the arrays live elsewhere.
        if device != cupy.cuda.runtime.getDevice():
            with cupy.cuda.Device(device):
                fn(grid, (32 * options["num_warps"], 1, 1), tuple(values), stream=stream,
                   shared_mem=var.shared_bytes)
        else:
            fn(grid, (32 * options["num_warps"], 1, 1), tuple(values), stream=stream, shared_mem=var.shared_bytes)
        return None


_streams: dict = {}


def _external_stream(ptr):
    """A CuPy stream object for a raw handle, made once per handle (making one per launch is slow)."""
    stream = _streams.get(ptr)
    if stream is None:
        import cupy
        stream = cupy.cuda.ExternalStream(ptr)
        _streams[ptr] = stream
    return stream


def _torch_stream(device):
    import torch
    return _external_stream(torch.cuda.current_stream(device).cuda_stream)


def _hashable(v):
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dtypes.dtype):
        return ("dtype", v.name)
    if isinstance(v, (int, float, bool, str, type(None))):
        return v
    return (type(v).__name__, repr(v))


def _dependencies_hash(fn, seen=None):
    """Hash of fn's source and the sources of the @transpile helpers it names (recursively)."""
    seen = seen if seen is not None else set()
    if fn in seen:
        return ""
    seen.add(fn)
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = fn.__name__
    h = hashlib.sha256(src.encode())
    for name in fn.__code__.co_names:
        obj = fn.__globals__.get(name)
        if getattr(obj, "__transpiler_kernel__", False):
            h.update(_dependencies_hash(obj.fn, seen).encode())
    return h.hexdigest()


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
