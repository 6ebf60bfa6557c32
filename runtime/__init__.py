"""Runtime (imported as `transpiler.runtime`): kernel objects, specialization keys, compile cache, launches.

Also holds the names Triton keeps in `triton.runtime` for kernels' host wrappers: `driver.active`, `Autotuner`,
`Heuristics`, `Config`, `JITFunction`, `KernelInterface`, `OutOfResources`, `reinterpret`."""
from . import driver  # noqa: F401  (`transpiler.runtime.driver.active`, as Triton's)
from .args import TensorWrapper, reinterpret
from .autotune import Autotuner, Config, Heuristics   # (not the decorators: `runtime.autotune` is the module)
from .errors import InterpreterError, OutOfResources
from .kernel import Kernel, KernelInterface, gpu_available, transpile

JITFunction = Kernel

__all__ = ["Kernel", "transpile", "gpu_available", "driver", "Autotuner", "Heuristics", "Config",
           "JITFunction", "KernelInterface", "OutOfResources", "InterpreterError", "TensorWrapper",
           "reinterpret"]
