"""Lowering rules, one small function per IR op, registered with `@lowering` (importing registers them)."""
from . import atomics, control, debug, dot, gather, memory, pipeline, reduce, row_ring, scan, values  # noqa: F401
