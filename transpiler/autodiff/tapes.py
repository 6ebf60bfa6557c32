"""Tapes: the carried values of a runtime loop kept per iteration, for a reverse that reads them.

The reverse of `h = tanh(h * w + x)` needs h at the start of every iteration, last to first. Two exact ways
(regions.py writes either): replay the forward loop up to each reverse iteration (n(n-1)/2 body replays, no
memory), or run the forward loop once storing the carried values into a tape and load them back in reverse
(one forward pass, n stores and n loads of the carried blocks). `choose` decides by cost and says why:

- the tape needs its size before the launch, so the loop's bounds must be host values (constants and the
  kernel's integer arguments: `range(0, steps)`), and the taped values plain numbers (floating or integer
  blocks or scalars); else the replay, whatever the cost;
- with a trip count known at compile time, the cheaper of n(n-1)/2 body replays and n (body + the taped
  blocks' stores and loads, each weighed as MEMORY_WEIGHT ops);
- with a runtime trip count, the tape (O(n) against O(n^2)).

The kernel object (kernel.py) allocates each tape per launch as [programs, trips, elements] of the value's
dtype, not zeroed (every element is stored before it is loaded); a program's rows are its own (indexed by its
real program id, so folded backwards share nothing either), and a barrier separates the stores from the loads
(the threads storing an element need not be those loading it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .gradient_writes import Affine

MEMORY_WEIGHT = 8       # one block's global store or load, in body ops (a rough ratio of their costs)
_TAPED_DTYPES = ("fp16", "bf16", "fp32", "fp64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64")


@dataclass
class Tape:
    """One taped carried value: its kernel parameters and what sizes it at launch."""

    pointer: str          # parameter: the tape's base pointer
    trips: str            # parameter: iterations per program (the row count of a program's tape)
    dtype: object         # the carried value's dtype
    shape: tuple          # the carried value's block shape (() for a scalar)
    lo: Affine            # the loop's bounds, in the kernel's integer arguments and constants
    hi: Affine
    step: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    def trip_count(self, arguments: dict) -> int:
        lo, hi = (_evaluate(f, arguments) for f in (self.lo, self.hi))
        return max(0, -(-(hi - lo) // self.step))


def _evaluate(form: Affine, arguments) -> int:
    return form.constant + sum(c * int(arguments[s[1]]) for s, c in form.terms)


def host_bound(form) -> bool:
    """Whether an affine form can be computed before the launch (constants and integer arguments only)."""
    return form is not None and all(s[0] == "arg" for s, _ in form.terms)


@dataclass
class Choice:
    tape: bool
    why: str


def choose(lo, hi, step, carried, body_ops) -> Choice:
    """Tape or replay for a loop whose reverse reads the carried values `carried` (region arguments)."""
    if not (host_bound(lo) and host_bound(hi)):
        return Choice(False, "its bounds are not host values (they depend on program ids or loaded data), so a "
                             "tape could not be sized before the launch")
    odd = [v for v in carried if v.dtype.name not in _TAPED_DTYPES]
    if odd:
        return Choice(False, f"a carried value of type {odd[0].dtype!r} is not taped")
    if lo.terms or hi.terms:
        return Choice(True, "its trip count is a runtime value: a tape costs O(n) iterations where replaying "
                            "costs O(n^2)")
    n = max(0, -(-(hi.constant - lo.constant) // step))
    replay = n * (n - 1) // 2 * body_ops
    tape = n * (body_ops + 2 * MEMORY_WEIGHT * len(carried))
    if tape < replay:
        return Choice(True, f"{n} iterations: a tape ({n} body replays and {n} stores and loads of "
                            f"{len(carried)} carried value(s), ~{tape} ops) costs less than replaying "
                            f"({n * (n - 1) // 2} body replays, ~{replay} ops)")
    return Choice(False, f"{n} iterations: replaying ({n * (n - 1) // 2} body replays, ~{replay} ops) costs no "
                         f"more than a tape ({n} stores and loads of {len(carried)} carried value(s), ~{tape} ops)")


def offsets_text(shape) -> str:
    """Row-major element offsets of a block of `shape` as Triton-dialect text ('' for a scalar)."""
    if not shape:
        return ""
    parts = []
    rank = len(shape)
    for d, n in enumerate(shape):
        index = "[" + ", ".join(":" if e == d else "None" for e in range(rank)) + "]" if rank > 1 else ""
        stride = math.prod(shape[d + 1:])
        parts.append(f"tl.arange(0, {n}){index}" + (f" * {stride}" if stride != 1 else ""))
    return " + ".join(parts)


_LIBRARY_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}


def allocate(like, tape: Tape, programs: int, trips: int):
    """An uninitialised tape [programs, trips, elements] in the library and device of the array `like`."""
    name = _LIBRARY_DTYPES.get(tape.dtype.name, tape.dtype.name)
    shape = (programs, max(trips, 1), max(tape.elements, 1))
    module = type(like).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.empty(shape, dtype=getattr(torch, name), device=like.device)
    if module == "cupy":
        import cupy
        return cupy.empty(shape, dtype=name)
    import numpy as np
    if name == "bfloat16":
        import ml_dtypes
        return np.empty(shape, dtype=ml_dtypes.bfloat16)
    return np.empty(shape, dtype=name)
