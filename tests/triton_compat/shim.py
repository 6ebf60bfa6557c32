"""Makes `import triton` resolve to transpiler inside one test process, so a test file written for Triton runs
against us unchanged. Never installed globally: `install()` fills `sys.modules` of the process that calls it
(bench/triton_test_core.py runs pytest in a subprocess that loads this through tests/triton_compat/plugin.py).

What maps to what:
  triton.jit / JITFunction         -> `ShimKernel`, a transpiler Kernel that unwraps `TensorWrapper` arguments and
                                      drops Triton-only launch options before the launch
  triton.language (+ .extra, ...)  -> transpiler.language, seen through `_LanguageView` (below)
  triton.TritonError, CompilationError -> transpiler.TranspilerError (our errors' base class); a launch's error
                                      gets Triton's chaining: `__cause__` holds its message, and under
                                      TRITON_INTERPRET=1 it is an InterpreterError too (`as_tritons_error`)
  triton.runtime.errors.InterpreterError -> transpiler.InterpreterError
  triton.OutOfResources (also in runtime.errors) -> transpiler.OutOfResources (only the resource refusal, so a
                                      wrapper catching it to drop a config does not swallow other launch errors)
  triton.KernelInterface           -> transpiler.KernelInterface
  triton.reinterpret, runtime.jit.TensorWrapper -> `TensorWrapper` here (an array viewed as another dtype)
  triton.runtime.driver.active     -> a description of the current CUDA device (backend "cuda", its arch)
  triton.testing                   -> transpiler.runtime.bench where it exists
Everything a test reads from Triton's compiler internals (a launch's `.asm`, `triton.compile` of IR text) raises
`TritonInternals`, which the plugin reports as a skip naming what was read: such a check has no meaning here.
"""
from __future__ import annotations

import inspect
import itertools
import linecache
import os
import sys
import textwrap
import types

import transpiler
import transpiler.language as _tl
from transpiler.runtime.kernel import Kernel

# Options Triton's launch accepts that have no counterpart here; dropped before our launch sees them.
TRITON_ONLY_LAUNCH_OPTIONS = ("num_ctas", "launch_cooperative_grid", "maxnreg", "enable_fp_fusion", "debug",
                              "arch", "kpack", "matrix_instr_nonkdim", "waves_per_eu", "num_buffers_warp_spec")
# Decorator options of `triton.jit` that change nothing in our compiler.
TRITON_ONLY_JIT_OPTIONS = ("noinline", "debug", "do_not_specialize", "do_not_specialize_on_alignment", "repr",
                           "launch_metadata")
# Names a test module evaluates while being collected (parametrize lists) that transpiler.language may lack;
# they resolve to a placeholder so the rest of the module still runs, and any use of one fails naming it.
COLLECTION_PLACEHOLDERS = ("float8e4b15", "float8e4nv", "float8e5", "float8e4b8", "float8e5b16")


class TritonInternals(Exception):
    """A test read something only Triton's own compiler has (IR text, PTX, a compiled handle's metadata)."""


class MissingName:
    """Stands for a `triton.language` name transpiler.language does not define."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"tl.{self._name} (not in transpiler.language)"

    def __getattr__(self, attr):
        raise AttributeError(f"tl.{self._name} is not defined by transpiler.language (reading .{attr})")

    def __call__(self, *args, **kwargs):
        raise AttributeError(f"tl.{self._name} is not defined by transpiler.language")


# ---- dtypes by Triton's names -------------------------------------------------------------------------------

def _language_dtypes():
    return {v.name: v for v in vars(_tl).values() if isinstance(v, transpiler.dtypes.dtype)}


# NumPy / torch names of element types -> the short names Triton's `str_to_ty` reads (and our dtypes carry).
TYPE_CANONICALISATION = {
    "bool": "int1", "int1": "int1", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "fp16", "float32": "fp32", "float64": "fp64", "bfloat16": "bf16",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}


def str_to_ty(name, _constexpr_context=None):
    """Triton's `tl.str_to_ty`: a type name ('fp32', 'int8', '*fp16') to the language's dtype."""
    if name.startswith("*"):
        return _tl.pointer_type(str_to_ty(name[1:]))
    found = _language_dtypes().get(name)
    if found is None:
        raise TypeError(f"transpiler.language has no dtype named {name!r}")
    return found


class _DtypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, transpiler.dtypes.dtype)

    def __call__(cls, name):
        return str_to_ty(name)


class dtype(metaclass=_DtypeMeta):  # noqa: N801 - Triton's spelling
    """`tl.dtype` as Triton's tests use it: `isinstance(x, tl.dtype)`, `tl.dtype('fp16')` and its name lists."""
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]


class _LanguageView(types.ModuleType):
    """transpiler.language under the name triton.language: every attribute is ours (builtins are found by
    identity, so kernels compile as if they imported transpiler.language), plus `str_to_ty`, the `dtype` above,
    and placeholders for COLLECTION_PLACEHOLDERS our language lacks."""

    def __init__(self, name, target, extra=None):
        super().__init__(name, target.__doc__)
        self.__dict__["_target"] = target
        self.__dict__.update(extra or {})
        self.__path__ = []

    def __getattr__(self, attr):
        target = self.__dict__["_target"]
        if hasattr(target, attr):
            return getattr(target, attr)
        if attr in COLLECTION_PLACEHOLDERS:
            return MissingName(attr)
        raise AttributeError(f"module 'triton.language' (transpiler.language) has no attribute '{attr}'")


# ---- arrays viewed as another dtype -------------------------------------------------------------------------

class TensorWrapper:
    """`triton.reinterpret(tensor, dtype)`: the same memory read as another element type of the same width."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.shape = base.shape
        self.device = base.device

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def numel(self):
        return self.base.numel()

    def element_size(self):
        return self.base.element_size()

    def __getitem__(self, index):
        return self.base[index]

    def __setitem__(self, index, value):
        self.base[index] = value

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"

    def unwrapped(self):
        """The base tensor viewed with a torch dtype of the wrapped element type, which our launch reads; for
        element types torch has no dtype of (the fp8 formats), and for arrays that are not torch tensors, our own
        `reinterpret` of it."""
        torch = sys.modules.get("torch")
        torch_dtype = None
        if torch is not None and isinstance(self.base, torch.Tensor):
            torch_dtype = getattr(torch, {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
                                          "fp64": "float64"}.get(self.dtype.name, self.dtype.name), None)
        if torch_dtype is None:
            import transpiler
            return transpiler.reinterpret(self.base, self.dtype)
        return self.base.view(torch_dtype)


def reinterpret(tensor, dtype):
    if isinstance(tensor, TensorWrapper):
        tensor = tensor.base
    return TensorWrapper(tensor, dtype)


def _unwrap(value):
    return value.unwrapped() if isinstance(value, TensorWrapper) else value


# ---- kernels --------------------------------------------------------------------------------------------------

class CompiledHandle:
    """What a launch returns to the test: Triton returns its compiled kernel; we have no IR to show."""

    def __init__(self, name):
        self.name = name

    @property
    def asm(self):
        return _AsmView()


class _AsmView:
    def __getitem__(self, key):
        raise TritonInternals(f"the launch's asm[{key!r}] (Triton's own {key})")

    def __contains__(self, key):
        raise TritonInternals(f"the launch's asm ({key!r})")


class ShimKernel(Kernel):
    """A transpiler Kernel that takes arguments the way Triton's tests pass them."""

    def __getitem__(self, grid):
        launch = super().__getitem__(grid)
        name = self.__name__

        def launch_triton_style(*args, **kwargs):
            for option in TRITON_ONLY_LAUNCH_OPTIONS:
                kwargs.pop(option, None)
            try:
                launch(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
            except transpiler.TranspilerError as error:
                raise as_tritons_error(error) from TritonCause(error.error_message)
            return CompiledHandle(name)
        return launch_triton_style

    def warmup(self, *args, **kwargs):
        """Compiles as Triton's `warmup` does (our autotuner builds its configs through it); the handle it
        returns is Triton's compiled-kernel object, whose IR and metadata we do not have."""
        for option in TRITON_ONLY_LAUNCH_OPTIONS:
            kwargs.pop(option, None)
        super().warmup(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
        return CompiledHandle(self.__name__)


class TritonCause(Exception):
    """The unlocated error Triton chains as `__cause__` of its CompilationError (and its interpreter of its
    InterpreterError), which the tests read for Triton's words: here our error's message. Only the shim chains
    it: in the product it would print every message twice."""


_INTERPRETED_CLASSES: dict = {}


def as_tritons_error(error):
    """Our error as the test expects Triton's: under TRITON_INTERPRET=1 Triton's interpreter raises an
    InterpreterError for whatever the kernel raised, so the error becomes one too (keeping its own class)."""
    if os.environ.get("TRITON_INTERPRET") == "1" and not isinstance(error, transpiler.InterpreterError):
        cls = type(error)
        if cls not in _INTERPRETED_CLASSES:
            _INTERPRETED_CLASSES[cls] = type(cls.__name__, (cls, transpiler.InterpreterError), {})
        error.__class__ = _INTERPRETED_CLASSES[cls]
    return error


_sources = itertools.count()


def function_from_source(source, globals_, name):
    """Define `name` from `source` with its text registered in linecache, so the compiler (which reads kernels'
    source) and tracebacks see it like a function of a file."""
    filename = f"<triton_compat-{next(_sources)}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace = {}
    exec(compile(source, filename, "exec"), globals_, namespace)
    return namespace[name]


class JITFunction(ShimKernel):
    """`triton.JITFunction(fn)` with `src` and `_unsafe_update_src`, which Triton's tests use to patch a kernel's
    text before compiling it."""

    def __init__(self, fn):
        fn = getattr(fn, "fn", fn)
        super().__init__(fn)
        self.src = textwrap.dedent(inspect.getsource(fn))

    def _unsafe_update_src(self, new_src):
        fn = function_from_source(new_src, self.fn.__globals__, self.fn.__name__)
        Kernel.__init__(self, getattr(fn, "fn", fn))
        self.src = new_src


def jit(fn=None, **options):
    """`@triton.jit`, `@triton.jit()` and `@triton.jit(noinline=True, ...)`."""
    unknown = set(options) - set(TRITON_ONLY_JIT_OPTIONS)
    if unknown:
        raise TypeError(f"triton.jit options not understood here: {sorted(unknown)}")
    if fn is None:
        return lambda f: ShimKernel(getattr(f, "fn", f))
    return ShimKernel(getattr(fn, "fn", fn))


def _compile_ir(*args, **kwargs):
    raise TritonInternals("triton.compile() of Triton IR text")


# ---- the current device, as Triton's driver describes it ------------------------------------------------------

class _Target:
    def __init__(self, backend, arch, warp_size):
        self.backend, self.arch, self.warp_size = backend, arch, warp_size


class _ActiveDriver:
    def get_current_device(self):
        import cupy
        return cupy.cuda.runtime.getDevice()

    def get_current_target(self):
        import cupy
        cc = cupy.cuda.Device(self.get_current_device()).compute_capability
        return _Target("cuda", int(cc), 32)

    @property
    def utils(self):
        return self

    def get_device_properties(self, device):
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(device)
        return {"max_shared_mem": props["sharedMemPerBlockOptin"], "multiprocessor_count":
                props["multiProcessorCount"], "warpSize": props["warpSize"]}


def _nvrtc_version():
    try:
        import cupy
        major, minor = cupy.cuda.nvrtc.getVersion()
        return f"{major}.{minor}"
    except Exception:
        return "12.0"


class _Knobs(types.ModuleType):
    """`triton.knobs`: read by helpers of tests that need TMA (the CUDA version of ptxas, here NVRTC's) or that
    reset Triton's settings."""
    base_knobs = type("base_knobs", (), {})
    propagate_env = False
    nvidia = types.SimpleNamespace(ptxas=types.SimpleNamespace(version=_nvrtc_version()))


# ---- installing ----------------------------------------------------------------------------------------------

def _module(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    module.__path__ = []
    return module


def install():
    """Put the `triton` names into sys.modules (once per process). Returns the `triton` module."""
    existing = sys.modules.get("triton")
    if existing is not None and getattr(existing, "__transpiler_shim__", False):
        return existing
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]           # a Triton imported before (torch's CUDA start-up does): none of it stays
    language = _LanguageView("triton.language", _tl, {"str_to_ty": str_to_ty, "dtype": dtype})
    runtime_jit = _module("triton.runtime.jit", TensorWrapper=TensorWrapper, reinterpret=reinterpret,
                          type_canonicalisation_dict=TYPE_CANONICALISATION, JITFunction=JITFunction)
    runtime_errors = _module("triton.runtime.errors", InterpreterError=transpiler.InterpreterError,
                             OutOfResources=transpiler.OutOfResources)
    driver = _module("triton.runtime.driver", active=_ActiveDriver())
    runtime = _module("triton.runtime", jit=runtime_jit, errors=runtime_errors, driver=driver,
                      Autotuner=transpiler.Autotuner)
    testing = _module("triton.testing")
    try:
        from transpiler.runtime import bench
        testing.__dict__.update({k: v for k, v in vars(bench).items() if not k.startswith("_")})
    except ImportError:
        pass
    knobs = _Knobs("triton.knobs")
    triton = _module(
        "triton", __transpiler_shim__=True, __version__=f"transpiler-{transpiler.__version__}",
        jit=jit, JITFunction=JITFunction, language=language, runtime=runtime, testing=testing, knobs=knobs,
        TritonError=transpiler.TranspilerError, CompilationError=transpiler.TranspilerError,
        OutOfResources=transpiler.OutOfResources, InterpreterError=transpiler.InterpreterError,
        KernelInterface=transpiler.KernelInterface, TensorWrapper=TensorWrapper, cdiv=transpiler.cdiv, next_power_of_2=transpiler.next_power_of_2,
        constexpr_function=transpiler.constexpr_function,
        reinterpret=reinterpret, set_allocator=transpiler.set_allocator, compile=_compile_ir,
        autotune=transpiler.autotune, heuristics=transpiler.heuristics, Config=transpiler.Config)
    modules = {"triton": triton, "triton.language": language, "triton.runtime": runtime,
               "triton.runtime.jit": runtime_jit, "triton.runtime.errors": runtime_errors,
               "triton.runtime.driver": driver, "triton.testing": testing, "triton.knobs": knobs}
    from transpiler import tools
    from transpiler.tools import tensor_descriptor
    modules["triton.tools"], modules["triton.tools.tensor_descriptor"] = tools, tensor_descriptor
    triton.tools = tools
    modules["triton.language.libdevice"] = _tl.libdevice    # the pre-3.0 path, still in public kernels
    for sub in ("extra", "math", "random", "core", "standard"):
        target = getattr(_tl, sub, None)
        if target is not None:
            modules[f"triton.language.{sub}"] = target
    extra = getattr(_tl, "extra", None)
    for sub in ("libdevice", "cuda"):
        if extra is not None and hasattr(extra, sub):
            modules[f"triton.language.extra.{sub}"] = getattr(extra, sub)
            if sub == "cuda" and hasattr(extra.cuda, "libdevice"):
                modules["triton.language.extra.cuda.libdevice"] = extra.cuda.libdevice
    sys.modules.update(modules)
    return triton


def load_test_helpers(path):
    """Import Triton's own test helpers (`triton/_internal_testing.py`, fetched beside its tests, never part of
    this repository) from `path` as `triton._internal_testing`; they run on top of the names installed above."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("triton._internal_testing", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["triton._internal_testing"] = module
    spec.loader.exec_module(module)
    sys.modules["triton"]._internal_testing = module
    return module
