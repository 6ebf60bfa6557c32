"""Typing rule of `tl.map_elementwise(scalar_fn, *args, pack=1)`: a @jit function applied to each element.

The arguments are broadcast to one shape (as Triton does; their types stay as they are, no promotion), and the
function is built once per result into a region of scalar arguments, where it may branch on its values (the
point of the builtin: `if x > 0: return a` computes one side only). Each result is an elementwise op `map`
carrying that region; the emitter makes it a device function called for every element
(emit_cuda/map_elementwise.py). A function that stores or runs atomics is refused, as Triton refuses it; one
that prints is kept when its result is unread, and refused when it has several results (each result's op runs
it); `pack` > 1 (several elements per call) is not supported yet.
"""
from __future__ import annotations

from ..errors import NOT_TRITON, NOT_YET, CompileTimeError, UnsupportedSyntaxError
from .ir import OpKind, Region, Type, Value, WRITES_MEMORY
from .semantic import RULES, broadcast_pair, const_value, to_value

_EFFECTS = WRITES_MEMORY + (OpKind.DEVICE_PRINT, OpKind.DEVICE_ASSERT)


def _region_of(b, scalar_fn, args):
    region = Region(args=[Value(Type(v.dtype), name=f"x{i}") for i, v in enumerate(args)])
    results = b.inline_into_region(scalar_fn, region, "tl.map_elementwise's function", None)
    return region, [r.dtype for r in results]


def _writes(region, kinds=_EFFECTS) -> bool:
    for op in region.ops:
        if op.name in kinds or any(_writes(r, kinds) for r in op.regions):
            return True
    return False


def _map_elementwise(b, scalar_fn, *args, pack=1):
    if const_value(b, pack, "pack") != 1:
        raise b.error(UnsupportedSyntaxError, "tl.map_elementwise with pack > 1",
                      hint="call it with pack=1 (the default): the function then gets one element of each argument",
                      refusal=NOT_YET)
    if not args:
        raise b.error(CompileTimeError, "tl.map_elementwise needs at least one tensor argument")
    values = [to_value(b, a) for a in args]
    for i in range(1, len(values)):              # one shape for all: each broadcast against the first and back
        values[0], values[i] = broadcast_pair(b, values[0], values[i])
    for i in range(1, len(values)):
        values[0], values[i] = broadcast_pair(b, values[0], values[i])
    region, dtypes_ = _region_of(b, scalar_fn, values)
    if _writes(region, WRITES_MEMORY):
        raise b.error(UnsupportedSyntaxError, "tl.map_elementwise's function stores to memory (Triton refuses "
                      "stores inside map_elementwise)", hint="return the value and store the mapped block",
                      refusal=NOT_TRITON)
    if len(dtypes_) > 1 and _writes(region):
        raise b.error(UnsupportedSyntaxError, "tl.map_elementwise of a function that writes memory or prints and "
                      "returns several values", hint="return one value from it", refusal=NOT_YET)
    shape = values[0].shape
    effects = {"is_pure": False} if _writes(region) else {}    # kept when nothing reads its result (dead_code.py)
    results = []
    for k, dt in enumerate(dtypes_):
        own = region if k == 0 else _region_of(b, scalar_fn, values)[0]
        results.append(b.emit(OpKind.ELEMENTWISE, values, Type(dt, shape), regions=[own], fn="map", result=k,
                              **effects))
    return results[0] if len(results) == 1 else tuple(results)


RULES["map_elementwise"] = _map_elementwise
