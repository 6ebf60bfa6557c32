"""`triton.runtime.autotuner`'s names (Triton's module spelling of this package's `autotune.py`)."""
from .autotune import Autotuner, Config, Heuristics, autotune, heuristics

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics"]
