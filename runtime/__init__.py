"""Runtime (imported as `transpiler.runtime`): kernel objects, specialization keys, compile cache, launches."""
from .kernel import Kernel, gpu_available, transpile

__all__ = ["Kernel", "transpile", "gpu_available"]
