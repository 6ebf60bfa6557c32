"""Typing of Triton's standard-library functions that are compositions of other builtins:
`tl.softmax`, `tl.ravel`, `tl.swizzle2d`, the shape functions `tl.join`, `tl.split`, `tl.interleave`,
`tl.cat`, `tl.flip`, and `tl.sort` / `tl.topk` (the bitonic network of `transpiler/bitonic.py`),
`tl.histogram`, `tl.gather` (`transpiler/language/standard.py`).

Each rule calls the rules of the builtins it is made of, so the IR (and the generated CUDA) is what the user
would get by writing the composition out; no new op, analysis or lowering is involved.
"""
from __future__ import annotations

import builtins

from .. import dtypes
from ..bitonic import merge_network, sort_network
from ..errors import NOT_YET, DTypeError, ShapeError, UnsupportedSyntaxError
from .ir import OpKind, Type
from .semantic import (RULES, binary_op, broadcast_pair, broadcast_to_shape, cast, const_value, expand_dims, is_const,
                       logical, rule, to_value)


@rule("softmax")
def _softmax(b, x, dim=None, keep_dims=False, ieee_rounding=False):
    dim = 0 if const_value(b, dim, "softmax's dim") is None else dim
    z = binary_op(b, "sub", x, RULES["max"](b, x, dim, keep_dims=keep_dims))
    num = RULES["exp"](b, z)
    den = RULES["sum"](b, num, dim, keep_dims=keep_dims)
    return RULES["fdiv"](b, num, den, ieee_rounding)


@rule("ravel")
def _ravel(b, x, can_reorder=False):
    v = to_value(b, x)
    numel = 1
    for s in v.shape:
        numel *= s
    return RULES["reshape"](b, v, numel, can_reorder=can_reorder)


@rule("swizzle2d")
def _swizzle2d(b, i, j, size_i, size_j, size_g):
    ij = binary_op(b, "add", binary_op(b, "mul", i, size_j), j)      # row-major linear index
    size_gj = binary_op(b, "mul", size_g, size_j)                     # elements in one group of size_g rows
    off_i = binary_op(b, "mul", binary_op(b, "floordiv", ij, size_gj), size_g)
    rows = binary_op(b, "sub", size_i, off_i)                         # the last group may have fewer rows
    if is_const(rows) and is_const(size_g):
        group_rows = builtins.min(rows, size_g)
    else:
        group_rows = RULES["minimum"](b, rows, size_g)
    ij = binary_op(b, "mod", ij, size_gj)
    return (binary_op(b, "add", off_i, binary_op(b, "mod", ij, group_rows)),
            binary_op(b, "floordiv", ij, group_rows))



# ---- shape functions built from selects, reductions and reshapes ----------------------------------------
# Each is exact for every dtype: split and flip move bit patterns (floats through same-width integers), so
# NaN payloads and -0.0 survive. The layouts the pieces ask for do the data movement between threads.

_BITS = {8: dtypes.int8, 16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}


def to_bits(b, v):
    if v.dtype is dtypes.int1:
        return cast(b, v, dtypes.int8)
    return v if v.dtype.is_int() else cast(b, v, _BITS[v.dtype.bits], bitcast=True)


def from_bits(b, bits, dt):
    if dt is dtypes.int1:
        return cast(b, bits, dt)
    return bits if dt.is_int() else cast(b, bits, dt, bitcast=True)


def _index_along_last(b, shape):
    """int32 block of `shape` holding each element's index along the last dimension."""
    idx = RULES["arange"](b, 0, shape[-1])
    for _ in shape[:-1]:
        idx = expand_dims(b, idx, 0)
    return broadcast_to_shape(b, idx, shape)


@rule("join")
def _join(builder, a, b):          # the builtin's parameters are `a` and `b`: the builder is `builder` here
    x, y = broadcast_pair(builder, to_value(builder, a), to_value(builder, b))
    b = builder
    if x.dtype is not y.dtype:
        raise b.error(DTypeError, f"tl.join needs two blocks of one dtype, got {x.dtype!r} and {y.dtype!r}")
    shape = tuple(x.shape) + (2,)
    first = binary_op(b, "eq", _index_along_last(b, shape), 0)
    x = broadcast_to_shape(b, expand_dims(b, x, len(x.shape)), shape)
    y = broadcast_to_shape(b, expand_dims(b, y, len(y.shape)), shape)
    return RULES["where"](b, first, x, y)


@rule("split")
def _split(b, a):
    v = to_value(b, a)
    if not v.shape or v.shape[-1] != 2:
        raise b.error(ShapeError, f"tl.split needs a last dimension of size 2, got shape {list(v.shape)}")
    bits = to_bits(b, v)
    index = _index_along_last(b, v.shape)
    halves = []
    for k in (0, 1):
        only_k = RULES["where"](b, binary_op(b, "eq", index, k), bits, 0)
        halves.append(from_bits(b, RULES["xor_sum"](b, only_k, len(v.shape) - 1), v.dtype))
    return tuple(halves)


@rule("interleave")
def _interleave(builder, a, b):
    joined = _join(builder, a, b)
    if len(joined.shape) == 1:
        return joined
    return RULES["reshape"](builder, joined, *joined.shape[:-2], 2 * joined.shape[-2])


@rule("cat")
def _cat(b, input, other, can_reorder=False):
    x, y = to_value(b, input), to_value(b, other)
    if len(x.shape) != 1 or x.shape != y.shape:
        raise b.error(ShapeError, f"tl.cat needs two 1-D blocks of one shape, got {list(x.shape)} and "
                      f"{list(y.shape)}")
    # join gives (n, 2); its transpose (2, n) read row-major is x followed by y.
    return RULES["reshape"](b, RULES["trans"](b, _join(b, x, y)), 2 * x.shape[0])


@rule("flip")
def _flip(b, x, dim=None):
    v = to_value(b, x)
    rank = len(v.shape)
    dim = const_value(b, dim, "tl.flip's dim")
    dim = rank - 1 if dim is None else dim
    if not -rank <= dim < rank:
        raise b.error(ShapeError, f"tl.flip's dim {dim} is out of range for a block of rank {rank}")
    dim %= rank
    steps = v.shape[dim].bit_length() - 1
    if steps == 0:
        return v
    # Index j along `dim` reversed is n - 1 - j: every bit of j complemented. With `dim` split into `steps`
    # axes of size 2, swapping the two halves of each axis (y ^ xor of the pair) complements one bit.
    y = RULES["reshape"](b, to_bits(b, v), *v.shape[:dim], *([2] * steps), *v.shape[dim + 1:])
    for axis in builtins.range(dim, dim + steps):
        y = binary_op(b, "xor", y, RULES["xor_sum"](b, y, axis, keep_dims=True))
    return from_bits(b, RULES["reshape"](b, y, *v.shape), v.dtype)


# ---- sorting, counting and gathering ------------------------------------------------------------------
# Built from compares, selects and reductions over a block of (elements x candidates): exact for every dtype
# and size; the intermediate block has input-size x bins (histogram) or index-size x source-extent (gather)
# elements, so large ones cost registers (Triton uses shared memory for these).

class _Ops:
    """The block operations `bitonic.sort_network` needs, as the compiler's typing rules."""

    def __init__(self, b):
        self.b = b

    def shape(self, x):
        return to_value(self.b, x).shape

    def fail(self, message):
        raise self.b.error(ShapeError, message)

    def reshape(self, x, shape):
        return RULES["reshape"](self.b, x, *shape)

    def arange(self, n):
        return RULES["arange"](self.b, 0, n)

    def to_bits(self, x):
        return to_bits(self.b, to_value(self.b, x))

    def from_bits(self, bits, like):
        return from_bits(self.b, bits, to_value(self.b, like).dtype)

    def xor(self, x, y):
        return binary_op(self.b, "xor", x, y)

    def xor_sum(self, x, axis):
        return RULES["xor_sum"](self.b, x, axis, keep_dims=True)

    def gt(self, x, y):
        return binary_op(self.b, "gt", x, y)

    def ne(self, x, y):
        return binary_op(self.b, "ne", x, y)

    def where(self, c, x, y):
        return RULES["where"](self.b, c, x, y)

    def max(self, x, axis):
        return RULES["max"](self.b, x, axis)

    def min(self, x, axis):
        return RULES["min"](self.b, x, axis, propagate_nan=True)


@rule("sort")
def _sort(b, x, dim=None, descending=False):
    return sort_network(_Ops(b), to_value(b, x), dim=const_value(b, dim, "tl.sort's dim"),
                        descending=bool(const_value(b, descending, "tl.sort's descending")))


@rule("topk")
def _topk(b, x, k, dim=None):
    return sort_network(_Ops(b), to_value(b, x), k=const_value(b, k, "tl.topk's k"),
                        dim=const_value(b, dim, "tl.topk's dim"), descending=True)


@rule("bitonic_merge")
def _bitonic_merge(b, x, dim=None, descending=0):
    return merge_network(_Ops(b), to_value(b, x), dim=const_value(b, dim, "tl.bitonic_merge's dim"),
                         descending=bool(const_value(b, descending, "tl.bitonic_merge's descending")))


@rule("histogram")
def _histogram(b, input, num_bins, mask=None):
    v = to_value(b, input)
    if len(v.shape) != 1 or not v.dtype.is_int() or v.dtype is dtypes.int1:
        raise b.error(DTypeError, f"tl.histogram needs a 1-D block of integers, got {v.type}")
    num_bins = const_value(b, num_bins, "tl.histogram's num_bins")
    bins = RULES["arange"](b, 0, num_bins)
    hits = binary_op(b, "eq", expand_dims(b, v, 1), expand_dims(b, bins, 0))       # (elements, bins)
    if mask is not None:
        hits = logical(b, "and", hits, expand_dims(b, to_value(b, mask), 1))
    return RULES["sum"](b, cast(b, hits, dtypes.int32), 0)


@rule("gather")
def _gather(b, src, index, axis):
    s, i = to_value(b, src), to_value(b, index)
    rank = len(s.shape)
    if not i.dtype.is_int() or i.dtype is dtypes.int1:
        raise b.error(DTypeError, f"tl.gather's index must be integers, got {i.dtype!r}")
    if len(i.shape) != rank or rank == 0:
        raise b.error(ShapeError, f"tl.gather needs a source and an index block of one rank, got shapes "
                      f"{list(s.shape)} and {list(i.shape)}")
    axis = const_value(b, axis, "tl.gather's axis")
    if not -rank <= axis < rank:
        raise b.error(ShapeError, f"tl.gather's axis {axis} is out of range for rank {rank}")
    axis %= rank
    for d in builtins.range(rank):
        if d != axis and s.shape[d] != i.shape[d]:
            raise b.error(ShapeError, f"tl.gather: the index's dimension {d} ({i.shape[d]}) must equal the "
                          f"source's ({s.shape[d]})")
    if s.dtype.is_ptr():
        raise b.error(UnsupportedSyntaxError, "tl.gather of pointers", refusal=NOT_YET)
    # one op (emit_cuda/rules/gather.py: the source through shared memory); an index outside the source gives 0
    return b.emit(OpKind.GATHER, [s, i], Type(s.dtype, i.shape), axis=axis)
