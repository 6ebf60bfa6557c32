"""transpiler: Triton-style block kernels in Python, compiled to readable CUDA C++ and run through CuPy.

    import transpiler
    import transpiler.language as tl

    @transpiler.transpile          # or @transpiler.jit
    def add(X, Y, Z, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(Z + offs, tl.load(X + offs, mask=offs < N) + tl.load(Y + offs, mask=offs < N), mask=offs < N)

    add[(transpiler.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)
    print(add.cuda_source(x, y, z, n, BLOCK=1024))
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__version__ = "0.1.0"


def _map_runtime_folder():
    """In a source checkout the top-level `runtime/` folder is this package's `transpiler.runtime` (an
    installed wheel maps it with setuptools' package-dir instead)."""
    if "transpiler.runtime" in sys.modules:
        return
    here = Path(__file__).resolve().parent
    if (here / "runtime" / "__init__.py").exists():
        return
    folder = here.parent / "runtime"
    spec = importlib.util.spec_from_file_location("transpiler.runtime", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["transpiler.runtime"] = module
    spec.loader.exec_module(module)


_map_runtime_folder()

from . import language  # noqa: E402
from .errors import (AutotuneError, CompileTimeError, DTypeError, IgnoredOptionWarning,  # noqa: E402
                     InternalCompilerError, InterpreterError, LaunchError, NameResolutionError, OutOfResources,
                     ShapeError, TranspilerError, UnsupportedSyntaxError)
from .runtime import JITFunction, Kernel, KernelInterface, gpu_available, transpile  # noqa: E402
from .runtime.args import StandIn, TensorWrapper, reinterpret  # noqa: E402
from .runtime.host_api import set_allocator  # noqa: E402
from . import testing  # noqa: E402,F401  (`transpiler.testing.do_bench`, as `triton.testing` after `import triton`)
from .runtime.autotune import AutotuneWarning, Autotuner, Config, Heuristics, autotune, heuristics  # noqa: E402
from .runtime.torch_ops import custom_op  # noqa: E402  (torch is imported only when an op is registered)

jit = transpile


def autograd(kernel, grid, outputs, **options):
    """A kernel and its derived backward as a torch function (`transpiler/autodiff/torch_function.py`)."""
    from .autodiff import autograd as make
    return make(kernel, grid, outputs, **options)


from .language.core import constexpr_function  # noqa: E402


@constexpr_function
def cdiv(x, y):
    """Ceiling division of integers."""
    return -(-x // y)


@constexpr_function
def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


__all__ = ["transpile", "jit", "Kernel", "JITFunction", "KernelInterface", "StandIn", "TensorWrapper", "reinterpret",
           "set_allocator",
           "OutOfResources", "cdiv", "next_power_of_2", "constexpr_function", "gpu_available", "language", "custom_op", "autograd",
           "autotune", "heuristics", "Config", "Autotuner", "Heuristics", "AutotuneError", "AutotuneWarning",
           "TranspilerError", "UnsupportedSyntaxError", "NameResolutionError", "CompileTimeError", "ShapeError",
           "DTypeError", "LaunchError", "IgnoredOptionWarning", "InterpreterError", "InternalCompilerError"]
