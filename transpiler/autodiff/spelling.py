"""How a forward IR op is spelled back as Triton-dialect Python, for the forward values the backward
recomputes (the primal replay).

One entry per IR op kind (`SPELLINGS`), and one per elementwise function (`ELEMENTWISE`); each takes the
op and the names of its operands and returns the Python expression of its result (a tuple's text for ops
with several results). An op kind without an entry cannot be replayed: the transform refuses the kernel at
that op's line ("not supported yet").
"""
from __future__ import annotations

import math

from .. import dtypes
from ..parse.ir import OpKind

# The name Triton's language gives each dtype (`tl.float32`), for casts and typed constants.
_TL_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "int1": "int1"}


def tl_dtype(dt) -> str:
    if dt.is_fp8():
        return f"tl.{repr(dt)[3:]}"
    return f"tl.{_TL_NAMES.get(dt.name, dt.name)}"


def literal(value) -> str:
    """A Python literal for a constant (infinities and NaN through float())."""
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    return repr(value)


def typed_constant(value, dt, shape=()) -> str:
    return f"tl.full({tuple(shape)!r}, {literal(value)}, {tl_dtype(dt)})"


_INFIX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
          "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>",
          "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_CALLS = {"fma": "tl.fma", "umulhi": "tl.umulhi", "div_rn": "tl.div_rn", "select": "tl.where"}
_MATH = ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf", "floor", "ceil",
         "sigmoid", "abs")


def spell_elementwise(op, args) -> str | None:
    fn = op.attrs["fn"]
    if fn in _INFIX:
        return f"({args[0]} {_INFIX[fn]} {args[1]})"
    if fn == "neg":
        return f"(-{args[0]})"
    if fn == "invert":
        return f"(~{args[0]})"
    if fn in ("min", "max"):
        nan = ", propagate_nan=tl.PropagateNan.ALL" if op.attrs.get("propagate_nan") else ""
        return f"tl.{'minimum' if fn == 'min' else 'maximum'}({args[0]}, {args[1]}{nan})"
    if fn in _CALLS:
        return f"{_CALLS[fn]}({', '.join(args)})"
    if fn in _MATH:
        return f"tl.{fn}({args[0]})"
    if fn.startswith("libdevice."):
        return f"libdevice.{fn[len('libdevice.'):]}({', '.join(args)})"
    return None          # ashr (an arithmetic shift of unsigned bits) and anything newer: not spelled


def _load(op, args):
    attrs = _memory_options(op)
    if op.attrs.get("volatile"):
        attrs += ", volatile=True"
    if len(args) == 1:
        return f"tl.load({args[0]}{attrs})"
    return f"tl.load({args[0]}, mask={args[1]}, other={args[2]}{attrs})"


def _memory_options(op):
    text = ""
    if op.attrs.get("cache"):
        text += f", cache_modifier={op.attrs['cache']!r}"
    if op.attrs.get("eviction"):
        text += f", eviction_policy={op.attrs['eviction']!r}"
    return text


def _reduce(op, args):
    combine, axis = op.attrs["combine"], op.attrs["axis"]
    if op.regions or combine not in _REDUCERS:
        return None
    if combine in ("argmax", "argmin"):
        return f"tl.{combine[3:]}({args[0]}, axis={axis}, return_indices=True)"
    return f"{_REDUCERS[combine]}({args[0]}, axis={axis})"


_REDUCERS = {"add": "tl.sum", "max": "tl.max", "min": "tl.min", "xor": "tl.xor_sum", "or": "tl.reduce_or", "argmax": "", "argmin": ""}


def _scan(op, args):
    if op.regions or op.attrs["combine"] != "add" or len(args) != 1:
        return None
    return f"tl.cumsum({args[0]}, axis={op.attrs['axis']}, reverse={bool(op.attrs.get('reverse'))})"


def _cast(op, args):
    rounding = op.attrs.get("rounding")
    extra = f", fp_downcast_rounding={rounding!r}" if rounding else ""
    return f"{args[0]}.to({tl_dtype(op.result.dtype)}{extra})"


def _dot(op, args):
    precision = op.attrs.get("precision")
    extra = f", input_precision={precision!r}" if precision and op.operands[0].dtype is dtypes.float32 else ""
    return f"tl.dot({args[0]}, {args[1]}, {args[2]}{extra})"


SPELLINGS = {
    OpKind.CONSTANT: lambda op, a: typed_constant(op.attrs["value"], op.result.dtype),
    OpKind.PROGRAM_ID: lambda op, a: f"tl.program_id({op.attrs['axis']})",
    OpKind.NUM_PROGRAMS: lambda op, a: f"tl.num_programs({op.attrs['axis']})",
    OpKind.ARANGE: lambda op, a: f"tl.arange({op.attrs['start']}, {op.attrs['start'] + op.result.shape[0]})",
    OpKind.SPLAT: lambda op, a: f"tl.broadcast_to({a[0]}, {op.result.shape!r})",
    OpKind.BROADCAST: lambda op, a: f"tl.broadcast_to({a[0]}, {op.result.shape!r})",
    OpKind.EXPAND_DIMS: lambda op, a: f"tl.expand_dims({a[0]}, {op.attrs['axis']})",
    OpKind.RESHAPE: lambda op, a: f"tl.reshape({a[0]}, {op.result.shape!r})",
    OpKind.PERMUTE: lambda op, a: f"tl.permute({a[0]}, {tuple(op.attrs['order'])!r})",
    OpKind.ADDPTR: lambda op, a: f"({a[0]} + {a[1]})",
    OpKind.CAST: _cast,
    OpKind.BITCAST: lambda op, a: f"{a[0]}.to({tl_dtype(op.result.dtype)}, bitcast=True)",
    OpKind.ELEMENTWISE: spell_elementwise,
    OpKind.LOAD: _load,
    OpKind.REDUCE: _reduce,
    OpKind.SCAN: _scan,
    OpKind.DOT: _dot,
    OpKind.HINT: lambda op, a: f"tl.{op.attrs['kind']}({a[0]}, {tuple(op.attrs['values'])!r})",
    OpKind.GATHER: lambda op, a: f"tl.gather({a[0]}, {a[1]}, {op.attrs['axis']})",
}


def spell(op, args) -> str | None:
    rule = SPELLINGS.get(op.name)
    return rule(op, args) if rule else None
