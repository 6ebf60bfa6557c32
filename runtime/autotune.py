"""`@autotune` and `@heuristics`: a kernel's meta-parameters chosen at launch time, with Triton's semantics.

`Heuristics` computes constexprs from the bound arguments, in order (each rule sees the values of the rules
before it). `Autotuner` chooses among `Config`s: per value of its `key` arguments (and of every argument's
dtype) it prunes the candidates (`prune_configs_by`), compiles them in parallel (the wrapped kernel's
`warmup`), times each (`bench.do_bench`, CUDA events; a `do_bench` may be injected) and keeps the fastest, in
memory and on disk (`autotune_cache`). A config that fails to compile or to launch is skipped with an
`AutotuneWarning`; tuning fails only when every config does.

Both wrap a kernel or each other, take `wrapper[grid](...)` and `wrapper.run(..., grid=...)`, and hand any
other attribute (`cuda_source`, `ir`, ...) to what they wrap.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import os
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..dtypes import from_array_dtype
from ..errors import NOT_YET, AutotuneError, LaunchError, TranspilerError
from ..language.core import constexpr
from ..tracebacks import at_api_boundary
from . import autotune_cache, bench
from .kernel import KernelInterface
from .torch_ops import launches_elided

PROGRESS_AFTER_S = 1.0
COMPILE_THREADS = 8


class AutotuneWarning(UserWarning):
    """A config was skipped because it failed to compile or to launch."""


# Launch options a config or a heuristic may set besides constexprs (what `kernel.run` takes, as in Triton).
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug")


class Config:
    """One candidate: constexpr values (`kwargs`) and launch options, with Triton's fields. `pre_hook(args)` runs
    before each launch with this config, with the arguments as a dict (config values included). `maxnreg` and
    `num_ctas` are treated as a plain launch treats them (see docs/autotune.md)."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None, ir_override=None):
        if ir_override is not None:
            raise AutotuneError("Config(ir_override=...): there is no Triton IR here to replace",
                                hint="drop ir_override; the generated CUDA is kernel.cuda_source(...)", refusal=NOT_YET)
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = None

    def all_kwargs(self):
        """What a launch with this config receives as keyword arguments (Triton's: options that are None are
        left out)."""
        options = {"num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages,
                   "maxnreg": self.maxnreg}
        return {**self.kwargs, **{k: v for k, v in options.items() if v is not None}}

    def __setstate__(self, state):
        self.__init__(state.get("kwargs", {}), state.get("num_warps", 4), state.get("num_stages", 3),
                      state.get("num_ctas", 1), state.get("maxnreg"), state.get("pre_hook"))

    def _identity(self):
        return (*self.all_kwargs().items(), self.pre_hook)

    def __hash__(self):
        return hash(self._identity())

    def __eq__(self, other):
        return isinstance(other, Config) and self._identity() == other._identity()

    def __str__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                  f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    def __repr__(self):
        return f"Config({self})"


class _Wrapper(KernelInterface):
    """What `Autotuner` and `Heuristics` share: the wrapped kernel, its argument names, `[grid]`."""

    def __init__(self, fn, decorator):
        if not hasattr(fn, "arg_names") or not hasattr(fn, "run"):
            raise AutotuneError(f"@{decorator} must be placed above @transpiler.jit (or another @autotune / "
                                f"@heuristics), not directly on {getattr(fn, '__name__', fn)!r}")
        self.fn = fn
        self.arg_names = list(fn.arg_names)
        self.kernel = fn.kernel if isinstance(fn, _Wrapper) else fn
        self.base_fn = getattr(self.kernel, "fn", self.kernel)
        self.__name__ = getattr(self.kernel, "__name__", type(self.kernel).__name__)
        self.__doc__ = getattr(self.kernel, "__doc__", None)

    def __getitem__(self, grid):
        # A partial, not a lambda: no frame of ours between the user's line and the error (tracebacks.py).
        return functools.partial(self.run, grid=grid)

    @at_api_boundary
    def run(self, *args, grid, **kwargs):
        if launches_elided():       # a custom op's fake run (torch_ops.py): no config to choose, nothing launches
            return None
        return self._launch(args, kwargs, grid, _interpreting())

    @at_api_boundary
    def _run_interpreted(self, *args, grid, **kwargs):
        return self._launch(args, kwargs, grid, True)

    @property
    def interpret(self):
        """`wrapper.interpret[grid](*args)`: the same meta-parameters, run by the CPU interpreter."""
        wrapper = self

        class _Interpret:
            def __getitem__(self, grid):
                return functools.partial(wrapper._run_interpreted, grid=grid)
        return _Interpret()

    def _call_fn(self, args, kwargs, grid, interpret):
        if interpret:
            return self.fn.interpret[grid](*args, **kwargs)
        return self.fn.run(*args, grid=grid, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("fn", "kernel"):
            raise AttributeError(name)
        return getattr(self.fn, name)

    def _all_args(self, args, kwargs):
        """The launch's arguments by name (defaults, then positional, then keyword)."""
        return {**getattr(self.kernel, "defaults", {}), **dict(zip(self.arg_names, args)), **kwargs}

    def _check_names(self, what, names):
        unknown = [n for n in names if n not in self.arg_names]
        if unknown:
            raise AutotuneError(f"{what} names {', '.join(map(repr, unknown))}, which "
                                f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} of "
                                f"'{self.__name__}'", kernel=self.__name__,
                                hint=f"parameters are: {', '.join(self.arg_names)}")


class Heuristics(_Wrapper):
    """`@heuristics({'NAME': lambda args: ...})`: each rule computes a constexpr from the arguments."""

    def __init__(self, fn, values):
        super().__init__(fn, "heuristics")
        self.values = dict(values)
        # As in Triton, a rule may also give a launch option (`num_warps`), not only a constexpr.
        self._check_names("heuristics", [n for n in self.values if n not in LAUNCH_OPTIONS])

    def _launch(self, args, kwargs, grid, interpret):
        return self._call_fn(args, self._with_values(args, kwargs), grid, interpret)

    @at_api_boundary
    def warmup(self, *args, grid=None, **kwargs):
        return self.fn.warmup(*args, grid=grid, **self._with_values(args, kwargs))

    # The looks at one specialization see the constexprs the rules give, as a launch would.
    @at_api_boundary
    def cuda_source(self, *args, **kwargs):
        return self.fn.cuda_source(*args, **self._with_values(args, kwargs))

    @at_api_boundary
    def compiled_variant(self, *args, **kwargs):
        return self.fn.compiled_variant(*args, **self._with_values(args, kwargs))

    @at_api_boundary
    def explain(self, *args, **kwargs):
        return self.fn.explain(*args, **self._with_values(args, kwargs))

    @at_api_boundary
    def ir(self, *args, **kwargs):
        return self.fn.ir(*args, **self._with_values(args, kwargs))

    @at_api_boundary
    def analysis(self, *args, **kwargs):
        return self.fn.analysis(*args, **self._with_values(args, kwargs))

    def check_launch_arguments(self, args, kwargs):
        check = getattr(self.fn, "check_launch_arguments", None)
        if check is not None:
            check(args, self._with_values(args, kwargs))

    def _with_values(self, args, kwargs):
        kwargs = dict(kwargs)
        for name, rule in self.values.items():
            kwargs[name] = rule(self._all_args(args, kwargs))
        return kwargs


class Autotuner(_Wrapper):
    """`@autotune(configs, key, ...)`: launches with the fastest config for the launch's key."""

    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
                 warmup=25, rep=100, do_bench=None, cache_results=True):
        super().__init__(fn, "autotune")
        self.configs = list(configs) or [Config({})]
        self.keys = [key] if isinstance(key, str) else list(key)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self._check_names("autotune key", self.keys)
        self._check_names("reset_to_zero", self.reset_to_zero)
        self._check_names("restore_value", self.restore_value)
        prune = dict(prune_configs_by or {})
        unknown = set(prune) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise AutotuneError(f"prune_configs_by takes 'perf_model', 'top_k' and 'early_config_prune', not "
                                f"{', '.join(map(repr, sorted(unknown)))}", kernel=self.__name__)
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 10)
        self.early_config_prune = prune.get("early_config_prune")
        self.num_warmups = warmup
        self.num_reps = rep
        self.do_bench = do_bench
        self.cache_results = cache_results
        self.cache = {}                 # key value → chosen Config
        self.best_config = None
        self.configs_timings = None     # Config → ms, of the last tuning
        self.bench_time = 0.0           # seconds the last tuning took
        self._chosen_by_configs = frozenset().union(*(c.all_kwargs() for c in self.configs))
        self._position = {name: i for i, name in enumerate(self.arg_names)}
        self._defaults = dict(getattr(self.kernel, "defaults", {}))
        self._lock = threading.Lock()

    # -- launch ------------------------------------------------------------------------------------------
    def _launch(self, args, kwargs, grid, interpret):
        if kwargs and not self._chosen_by_configs.isdisjoint(kwargs):
            clash = sorted(self._chosen_by_configs.intersection(kwargs))
            raise LaunchError(f"{', '.join(clash)} {'is' if len(clash) == 1 else 'are'} chosen by the autotuner "
                              "and cannot also be passed to the launch", kernel=self.__name__,
                              hint="remove them from the call, or from the configs")
        config = self.configs[0] if len(self.configs) == 1 else self._config_for(args, grid, kwargs, interpret)
        self.best_config = config
        options = config.all_kwargs()
        if config.pre_hook is not None:
            config.pre_hook({**self._all_args(args, kwargs), **options})
        return self._call_fn(args, {**kwargs, **options}, grid, interpret)

    def _config_for(self, args, grid, kwargs, interpret):
        key = self._key(args, kwargs)
        if interpret:
            key += ("interpreter",)     # an interpreter's choice is not a GPU's
        config = self.cache.get(key)
        if config is None:
            with self._lock:
                config = self.cache.get(key) or self._choose(key, args, grid, kwargs, interpret)
        return config

    @at_api_boundary
    def warmup(self, *args, grid=None, **kwargs):
        """Compile every candidate config for these arguments (in parallel), launching nothing."""
        candidates = self.prune_configs(kwargs, dict(zip(self.arg_names, args)))
        failures = self._compile(candidates, args, grid, kwargs)
        if len(failures) == len(candidates):
            raise self._all_failed(failures)
        return [c for c in candidates if c not in failures]

    def key_of(self, all_args):
        """The tuning key: the values of the `key` arguments, then the dtype of every argument that has one."""
        return self._key((), all_args)

    def _key(self, args, kwargs):
        # On every launch: keep it cheap (no dict of all arguments, dtype names memoised).
        n = len(args)
        parts = []
        for name in self.keys:
            i = self._position[name]
            parts.append(_key_value(args[i] if i < n else kwargs[name] if name in kwargs
                                    else self._defaults.get(name)))
        for v in args:
            dt = getattr(v, "dtype", None)
            if dt is not None:
                parts.append(_dtype_name(dt))
        for name in self.arg_names[n:]:
            dt = getattr(kwargs[name] if name in kwargs else self._defaults.get(name), "dtype", None)
            if dt is not None:
                parts.append(_dtype_name(dt))
        return tuple(parts)

    def prune_configs(self, kwargs, nargs=None):
        nargs = nargs or {}
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(self.configs, nargs, **kwargs))
            if not configs:
                raise AutotuneError("early_config_prune removed every config", kernel=self.__name__)
        if self.perf_model is not None:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int):
                raise AutotuneError(f"top_k must be an int or a fraction <= 1.0, not {top_k!r}", kernel=self.__name__)
            if len(configs) > top_k:
                estimate = {c: self.perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in configs}
                configs = sorted(configs, key=estimate.get)[:top_k]
        return configs

    # -- choosing ----------------------------------------------------------------------------------------
    def _choose(self, key, args, grid, kwargs, interpret):
        start = time.perf_counter()
        all_args = self._all_args(args, kwargs)
        candidates = self.prune_configs(kwargs, dict(zip(self.arg_names, args)))
        if len(candidates) == 1 or (interpret and self.do_bench is None):
            # Nothing to time: one candidate left, or the CPU interpreter (whose speed says nothing).
            chosen = candidates[0]
            self._remember(key, chosen, None, start, "not timed (one candidate)" if len(candidates) == 1
                           else "not timed (interpreter)")
            return chosen
        names = [str(c) for c in candidates]
        path = None
        if self.cache_results:
            device = "interpreter" if interpret else _device_tag(all_args.values())
            path = autotune_cache.entry_path(self._source_hash(), device, key, names)
            best = autotune_cache.load(path, names)
            if best is not None:
                self._remember(key, candidates[best], None, start, "from the disk cache")
                return candidates[best]
        check = None if interpret else getattr(self.fn, "check_launch_arguments", None)
        if check is not None:
            # Arguments no config can launch with (arrays in host memory, on two devices) get the plain launch's
            # error, not "every config failed" with each config's symptom of it.
            check(args, {**kwargs, **candidates[0].all_kwargs()})
        progress = _Progress(self.__name__, start)
        failures = {} if interpret else self._compile(candidates, args, grid, kwargs)
        progress.show(f"compiled {len(candidates) - len(failures)} of {len(candidates)} configs")
        timings = {}
        for i, config in enumerate(candidates):
            if config not in failures:
                try:
                    timings[config] = self._bench(config, args, grid, kwargs, interpret)
                except _failure_types() as e:
                    failures[config] = e
            progress.show(f"timed {i + 1}/{len(candidates)} configs", last=i + 1 == len(candidates))
        progress.finish()
        for config, error in failures.items():
            warnings.warn(f"autotune '{self.__name__}': skipped config ({config}): {_first_line(error)}",
                          AutotuneWarning, stacklevel=4)
        if not timings:
            raise self._all_failed(failures)
        chosen = min(timings, key=timings.get)
        for name in self.reset_to_zero:      # the real launch starts from zeros, as if never tuned
            with _on_stream(kwargs.get("stream"), all_args[name]):
                _zero(all_args[name])
        self.configs_timings = timings
        if path is not None:
            autotune_cache.store(path, names, candidates.index(chosen), [timings.get(c) for c in candidates],
                                 key, self.__name__)
        skipped = f", {len(failures)} skipped" if failures else ""
        self._remember(key, chosen, timings, start,
                       f"timed {len(timings)} configs{skipped}, best {timings[chosen]:.4f} ms")
        return chosen

    def _remember(self, key, config, timings, start, how):
        self.cache[key] = config
        self.bench_time = time.perf_counter() - start
        if timings is None:
            self.configs_timings = None
        if os.environ.get("TRANSPILER_PRINT_AUTOTUNING") == "1":
            print(f"transpiler autotune '{self.__name__}', key {key}: {how}, in {self.bench_time:.2f} s; "
                  f"best config: {config}", flush=True)

    def _compile(self, candidates, args, grid, kwargs):
        """Build every candidate through the kernel's compile-only `warmup`, in a thread pool. Returns the
        failures. (The kernel builds different configs at the same time, `once.OnceMap`, but code generation is
        Python and CuPy 14's NVRTC binding holds the GIL, so the threads overlap little today; NVRTC will overlap
        when the binding releases it.)"""
        if not hasattr(self.kernel, "warmup"):
            return {}

        def compile_one(config):
            self.fn.warmup(*args, grid=grid, **kwargs, **config.all_kwargs())

        failures = {}
        workers = max(1, min(len(candidates), os.cpu_count() or 1, COMPILE_THREADS))
        with ThreadPoolExecutor(workers, thread_name_prefix="transpiler-autotune") as pool:
            futures = [(c, pool.submit(compile_one, c)) for c in candidates]
            for config, future in futures:
                try:
                    future.result()
                except _failure_types() as e:
                    failures[config] = e
        return failures

    def _bench(self, config, args, grid, kwargs, interpret):
        """Median time of one config in ms; arguments in `reset_to_zero` are zeroed before each launch and
        those in `restore_value` put back after it."""
        full = {**self._all_args(args, kwargs), **config.all_kwargs()}
        stream = kwargs.get("stream")
        saved = {name: _clone(full[name]) for name in self.restore_value}
        options = config.all_kwargs()

        def launch():
            if config.pre_hook is not None:
                config.pre_hook(full)
            for name in self.reset_to_zero:
                with _on_stream(stream, full[name]):
                    _zero(full[name])
            try:
                self._call_fn(args, {**kwargs, **options}, grid, interpret)
            finally:
                for name, copy in saved.items():
                    with _on_stream(stream, full[name]):
                        _copy_into(full[name], copy)

        if self.do_bench is not None:
            t = self.do_bench(launch, quantiles=(0.5, 0.2, 0.8))
        else:
            clock = bench.clock_for(full.values(), kwargs.get("stream"))
            t = bench.do_bench(launch, self.num_warmups, self.num_reps, quantiles=(0.5, 0.2, 0.8), clock=clock)
        return float(t[0] if isinstance(t, (list, tuple)) else t)

    def _all_failed(self, failures):
        lines = "\n".join(f"    {config}: {_first_line(error)}" for config, error in failures.items())
        return AutotuneError(f"every config failed:\n{lines}", kernel=self.__name__,
                             hint="fix the kernel, or add configs that fit the device")

    def _source_hash(self):
        source_hash = getattr(self.kernel, "source_hash", None)
        if callable(source_hash):
            return source_hash()
        try:
            text = inspect.getsource(self.base_fn)
        except (OSError, TypeError):
            text = self.__name__
        return hashlib.sha256(text.encode()).hexdigest()


class _Progress:
    """A line on stderr now and then while a tuning that has taken more than a second goes on."""

    def __init__(self, name, start):
        self.name, self.start = name, start
        self.last = None

    def show(self, what, last=False):
        now = time.perf_counter()
        if now - self.start < PROGRESS_AFTER_S or (self.last is not None and now - self.last < 1.0 and not last):
            return
        self.last = now
        print(f"transpiler autotune '{self.name}': {what}, {now - self.start:.1f} s", file=sys.stderr, flush=True)

    def finish(self):
        if self.last is not None:
            print(f"transpiler autotune '{self.name}': done in {time.perf_counter() - self.start:.1f} s",
                  file=sys.stderr, flush=True)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, warmup=25, rep=100,
             do_bench=None, cache_results=True):
    """Decorator: choose the fastest of `configs` per value of the `key` arguments (see docs/autotune.md)."""
    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                         restore_value=restore_value, warmup=warmup, rep=rep, do_bench=do_bench,
                         cache_results=cache_results)
    return decorator


def heuristics(values):
    """Decorator: `{'NAME': lambda args: ...}` computes constexprs from the launch's arguments, in order."""
    def decorator(fn):
        return Heuristics(fn, values)
    return decorator


# -- helpers -------------------------------------------------------------------------------------------------

def _interpreting():
    return os.environ.get("TRANSPILER_INTERPRET") == "1"


@functools.lru_cache(maxsize=1)
def _failure_types():
    """Errors that disqualify one config rather than the launch: ours, and CUDA's (out of resources...)."""
    from .driver import CudaDriverError
    types = [TranspilerError, CudaDriverError]
    try:
        import cupy
        types += [cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError,
                  cupy.cuda.compiler.CompileException]
    except Exception:
        pass
    return tuple(types)


def _first_line(error):
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _key_value(v):
    if type(v) in (int, float, bool, str) or v is None:
        return v
    if isinstance(v, constexpr):
        v = v.value
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return ("shape", tuple(int(s) for s in v.shape))
    return str(v)


_dtype_names: dict = {}


def _dtype_name(dt):
    name = _dtype_names.get(dt)
    if name is None:
        try:
            name = from_array_dtype(dt).name
        except TypeError:
            name = str(dt)
        _dtype_names[dt] = name
    return name


def _device_tag(values):
    """Which GPU the timings are for (the results of one GPU model say nothing about another)."""
    try:
        import cupy
        device = bench.device_of(values)
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice() if device is None else device)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        return f"{name} sm_{props['major']}{props['minor']}"
    except Exception:
        return "no-gpu"


def _on_stream(stream, array):
    """Where to zero or copy an argument: on the launch's explicit `stream` (a handle or a CuPy stream) when
    there is one, else on the current stream of the array's framework (where the launch goes too)."""
    if stream is None:
        return contextlib.nullcontext()
    handle = stream if isinstance(stream, int) else stream.ptr
    if type(array).__module__.startswith("torch"):
        import torch
        return torch.cuda.stream(torch.cuda.ExternalStream(handle))
    import cupy
    return cupy.cuda.ExternalStream(handle)


def _zero(a):
    a[...] = 0


def _clone(a):
    return a.clone() if hasattr(a, "clone") else a.copy()


def _copy_into(dst, src):
    dst[...] = src
