"""Interpreter rule of `tl.map_elementwise`: the function called once per element of the broadcast arguments
(as scalars, so it may branch on them), its results stacked back into blocks of the broadcast shape. (The
compiler's typing rule builds the function into a region, which the eager builder does not; this rule is the
interpreter's own.)"""
from __future__ import annotations

import numpy as np

from ..errors import NOT_YET, CompileTimeError, ShapeError, UnsupportedSyntaxError
from ..parse.semantic import to_value
from .location import error
from .registry import rule
from .tensor import unwrap


def _value(a):
    from .eager import BUILDER, from_ir, to_ir
    return from_ir(to_value(BUILDER, to_ir(a)))


@rule("map_elementwise")
def map_elementwise(scalar_fn, *args, pack=1):
    if unwrap(pack) != 1:
        raise error(UnsupportedSyntaxError, "tl.map_elementwise with pack > 1", refusal=NOT_YET)
    if not args:
        raise error(CompileTimeError, "tl.map_elementwise needs at least one tensor argument")
    values = [_value(a) for a in args]
    try:
        shape = np.broadcast_shapes(*(v.data.shape for v in values))
    except ValueError:
        raise error(ShapeError, "tl.map_elementwise's arguments do not broadcast to one shape: "
                    f"{[tuple(v.data.shape) for v in values]}") from None
    values = [v._with_data(np.broadcast_to(v.data, shape)) for v in values]
    columns, kinds, single = None, None, True
    for index in np.ndindex(*shape):
        out = scalar_fn(*[v._with_data(v.data[index]) for v in values])
        single = not isinstance(out, (tuple, list))
        outs = [_value(o) for o in ([out] if single else out)]
        if any(o.data.shape for o in outs):
            raise error(ShapeError, "tl.map_elementwise's function must return scalars")
        if columns is None:
            columns, kinds = [[] for _ in outs], outs
        for column, o in zip(columns, outs):
            column.append(o.data)
    if columns is None:
        raise error(ShapeError, "tl.map_elementwise over a block of no elements")
    results = [kind._with_data(np.array(column, dtype=kind.data.dtype).reshape(shape))
               for kind, column in zip(kinds, columns)]
    return results[0] if single else tuple(results)
