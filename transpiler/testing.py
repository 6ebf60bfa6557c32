"""Benchmarking helpers, as `triton.testing` offers them: `do_bench` times a launch with CUDA events."""
from .runtime.bench import do_bench

__all__ = ["do_bench"]
