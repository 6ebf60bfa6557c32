"""Python kernel source in, typed IR out (libcst + the typing rules)."""
from .ir import KernelIR, Op, Region, Type, Value
from .signature import ArgSpec

__all__ = ["build_kernel_ir", "KernelIR", "Op", "Region", "Type", "Value", "ArgSpec"]


def __getattr__(name):
    # The builder (and libcst) loads on first use: the interpreter runs the typing rules without it.
    if name == "build_kernel_ir":
        from .builder import build_kernel_ir
        return build_kernel_ir
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
