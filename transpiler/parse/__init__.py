"""Python kernel source in, typed IR out (libcst + the typing rules)."""
from .builder import build_kernel_ir
from .ir import KernelIR, Op, Region, Type, Value
from .signature import ArgSpec

__all__ = ["build_kernel_ir", "KernelIR", "Op", "Region", "Type", "Value", "ArgSpec"]
