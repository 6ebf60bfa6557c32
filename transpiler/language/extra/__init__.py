"""`transpiler.language.extra`: Triton's `triton.language.extra` (the CUDA `libdevice` math functions)."""
from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]
