"""Lowering rules, one small function per IR op, registered with `@lowering` (importing registers them)."""
from . import control, debug, memory, reduce, values  # noqa: F401
