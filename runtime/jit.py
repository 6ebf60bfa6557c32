"""`triton.runtime.jit`'s names, where Triton kernels' wrappers import them: the kernel object (`JITFunction`),
the decorator, `TensorWrapper` and `reinterpret`."""
from .args import TensorWrapper, reinterpret
from .kernel import Kernel as JITFunction
from .kernel import transpile as jit

__all__ = ["JITFunction", "jit", "TensorWrapper", "reinterpret"]
