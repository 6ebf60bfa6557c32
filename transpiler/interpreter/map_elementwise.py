"""Interpreter rule of `tl.map_elementwise`: the function called once per element of the broadcast arguments
(as scalars, so it may branch on them), its results stacked back into blocks of the broadcast shape."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError, UnsupportedSyntaxError
from .location import error
from .registry import rule
from .shapes import broadcast_pair
from .tensor import to_tensor, unwrap


@rule("map_elementwise")
def map_elementwise(scalar_fn, *args, pack=1):
    if unwrap(pack) != 1:
        raise error(UnsupportedSyntaxError, "tl.map_elementwise with pack > 1 is not supported yet")
    if not args:
        raise error(UnsupportedSyntaxError, "tl.map_elementwise needs at least one tensor argument")
    values = [to_tensor(a, "an argument of tl.map_elementwise") for a in args]
    for _ in range(2):
        for i in range(1, len(values)):
            values[0], values[i] = broadcast_pair(values[0], values[i])
    shape = values[0].shape
    columns, kinds = None, None
    for index in np.ndindex(*shape):
        out = scalar_fn(*[v._with_data(v.data[index]) for v in values])
        outs = [to_tensor(o, "a result of tl.map_elementwise's function") for o in
                (out if isinstance(out, (tuple, list)) else [out])]
        if any(o.shape for o in outs):
            raise error(ShapeError, "tl.map_elementwise's function must return scalars")
        if columns is None:
            columns, kinds = [[] for _ in outs], [o for o in outs]
        for column, o in zip(columns, outs):
            column.append(o.data)
    if columns is None:                    # an empty block: the function's types are unknown without a call
        raise error(ShapeError, "tl.map_elementwise over a block of no elements")
    results = [kind._with_data(np.array(column, dtype=kind.data.dtype).reshape(shape))
               for kind, column in zip(kinds, columns)]
    return results[0] if not isinstance(out, (tuple, list)) else tuple(results)
