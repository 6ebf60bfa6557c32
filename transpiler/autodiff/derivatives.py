"""The derivative table: for each IR op kind, how the adjoint of its result flows to its operands.

Keyed by the IR's op kinds (`OPS`) and, for `elementwise`, by its function (`ELEMENTWISE`), so it can join an
op catalogue later. A rule gets the transform's context, the op and the adjoint names of its results (None
where a result has none) and calls `ctx.add(operand, expression)` for each operand the adjoint reaches. It may
bind intermediate values with `ctx.let`. Primal (forward) values are named by `ctx.p(value)`: the reverse
sweep recomputes them, so a rule may use any of them.

Choices: elementwise min/max route the gradient to the chosen side, half to each on a tie (torch's rule);
max/min reductions route it to the first position of the maximum (Triton's argmax tie break); `where` routes
to the taken side; comparisons, casts to integers, bit operations, floor/ceil, argmax/argmin indices have no
gradient (zero).
Kinds absent here and in `NO_GRADIENT` are refused when an active value reaches them.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..parse.ir import OpKind

LN2 = math.log(2.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _binary(ctx, op, g, dx, dy):
    x, y = op.operands
    if dx is not None:
        ctx.add(x, dx)
    if dy is not None:
        ctx.add(y, dy)


def _add(ctx, op, g):
    _binary(ctx, op, g, g, g)


def _sub(ctx, op, g):
    _binary(ctx, op, g, g, f"(-{g})")


def _mul(ctx, op, g):
    x, y = op.operands
    _binary(ctx, op, g, f"({g} * {ctx.p(y)})", f"({g} * {ctx.p(x)})")


def _div(ctx, op, g):
    x, y = op.operands
    q = ctx.p(op.result)
    dy = f"(-({g} * {q}) / {ctx.p(y)})" if ctx.active(y) else None
    _binary(ctx, op, g, f"({g} / {ctx.p(y)})", dy)


def _neg(ctx, op, g):
    ctx.add(op.operands[0], f"(-{g})")


def _fma(ctx, op, g):
    x, y, z = op.operands
    ctx.add(x, f"({g} * {ctx.p(y)})")
    ctx.add(y, f"({g} * {ctx.p(x)})")
    ctx.add(z, g)


def _min_max(first_wins):
    """The gradient goes to the chosen operand; on a tie each operand gets half, as torch.minimum/maximum do
    (low-precision inputs tie often: the boxes of a loss in fp16)."""
    def rule(ctx, op, g):
        x, y = op.operands
        share = ctx.let(f"tl.where({ctx.p(x)} {first_wins} {ctx.p(y)}, {g}, tl.where({ctx.p(x)} == {ctx.p(y)}, "
                        f"0.5 * {g}, 0.0))", "first_share")
        _binary(ctx, op, g, share, f"({g} - {share})")
    return rule


def _select(ctx, op, g):
    c, x, y = op.operands
    ctx.add(x, f"tl.where({ctx.p(c)}, {g}, 0.0)")
    ctx.add(y, f"tl.where({ctx.p(c)}, 0.0, {g})")


def _unary(derivative):
    """`derivative(x, r)`: the factor d r / d x as an expression of the primal operand and result."""
    def rule(ctx, op, g):
        (x,) = op.operands
        ctx.add(x, f"({g} * {derivative(ctx.p(x), ctx.p(op.result))})")
    return rule


def _abs(ctx, op, g):
    (x,) = op.operands
    ctx.add(x, f"tl.where({ctx.p(x)} < 0, -{g}, {g})")


def _pow(ctx, op, g):
    x, y = op.operands
    ctx.add(x, f"({g} * {ctx.p(y)} * libdevice.pow({ctx.p(x)}, {ctx.p(y)} - 1))")
    if ctx.active(y):
        ctx.add(y, f"({g} * {ctx.p(op.result)} * tl.log({ctx.p(x)}))")


ELEMENTWISE = {
    "add": _add, "sub": _sub, "mul": _mul, "truediv": _div, "div_rn": _div, "neg": _neg, "fma": _fma,
    "min": _min_max("<"), "max": _min_max(">"), "select": _select,
    "exp": _unary(lambda x, r: r),
    "exp2": _unary(lambda x, r: f"({r} * {LN2!r})"),
    "log": _unary(lambda x, r: f"(1.0 / {x})"),
    "log2": _unary(lambda x, r: f"(1.0 / ({x} * {LN2!r}))"),
    "sqrt": _unary(lambda x, r: f"(0.5 / {r})"),
    "sqrt_rn": _unary(lambda x, r: f"(0.5 / {r})"),
    "rsqrt": _unary(lambda x, r: f"(-0.5 * {r} / {x})"),
    "sin": _unary(lambda x, r: f"tl.cos({x})"),
    "cos": _unary(lambda x, r: f"(-tl.sin({x}))"),
    "erf": _unary(lambda x, r: f"({TWO_OVER_SQRT_PI!r} * tl.exp(-({x} * {x})))"),
    "sigmoid": _unary(lambda x, r: f"({r} * (1.0 - {r}))"),
    "abs": _abs,
    "libdevice.tanh": _unary(lambda x, r: f"(1.0 - {r} * {r})"),
    "libdevice.exp": _unary(lambda x, r: r),
    "libdevice.expm1": _unary(lambda x, r: f"({r} + 1.0)"),
    "libdevice.log": _unary(lambda x, r: f"(1.0 / {x})"),
    "libdevice.log1p": _unary(lambda x, r: f"(1.0 / ({x} + 1.0))"),
    "libdevice.sqrt": _unary(lambda x, r: f"(0.5 / {r})"),
    "libdevice.rsqrt": _unary(lambda x, r: f"(-0.5 * {r} / {x})"),
    "libdevice.sin": _unary(lambda x, r: f"tl.cos({x})"),
    "libdevice.cos": _unary(lambda x, r: f"(-tl.sin({x}))"),
    "libdevice.tan": _unary(lambda x, r: f"(1.0 + {r} * {r})"),
    "libdevice.atan": _unary(lambda x, r: f"(1.0 / (1.0 + {x} * {x}))"),
    "libdevice.sinh": _unary(lambda x, r: f"libdevice.cosh({x})"),
    "libdevice.cosh": _unary(lambda x, r: f"libdevice.sinh({x})"),
    "libdevice.erf": _unary(lambda x, r: f"({TWO_OVER_SQRT_PI!r} * tl.exp(-({x} * {x})))"),
    "libdevice.pow": _pow,
}

# Elementwise functions whose result carries no gradient (integer or boolean results, piecewise constants).
NO_GRADIENT_FN = {"floor", "ceil", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor", "shl", "shr", "ashr",
                  "invert", "floordiv", "mod", "umulhi", "libdevice.floor", "libdevice.ceil", "libdevice.trunc",
                  "libdevice.round", "libdevice.rint", "libdevice.nearbyint", "libdevice.isnan", "libdevice.isinf",
                  "libdevice.signbit", "libdevice.isfinited", "libdevice.finitef"}


def _elementwise(ctx, op, g):
    (g,) = g
    fn = op.attrs["fn"]
    if fn in NO_GRADIENT_FN:
        return
    rule = ELEMENTWISE.get(fn)
    if rule is None:
        ctx.refuse(op, f"the derivative of {fn}")
    rule(ctx, op, g)


def _cast(ctx, op, g):
    (g,) = g
    (x,) = op.operands
    if op.result.dtype.is_floating() and x.dtype.is_floating():
        ctx.add(x, ctx.converted(g, x))


def _through(ctx, op, g):
    """hint: the value passes unchanged."""
    ctx.add(op.operands[0], g[0])


def _sum_to(ctx, g, from_shape, to_shape):
    """The adjoint of a broadcast from `to_shape` (size-1 axes, or a scalar) to `from_shape`: sums over the
    axes it stretched."""
    if not to_shape:
        for axis in reversed(range(len(from_shape))):
            g = f"tl.sum({g}, axis={axis})"
        return g
    for axis, (a, b) in enumerate(zip(to_shape, from_shape)):
        if a == 1 and b != 1:
            g = f"tl.sum({g}, axis={axis}, keep_dims=True)"
    return g


def _broadcast(ctx, op, g):
    (x,) = op.operands
    ctx.add(x, _sum_to(ctx, g[0], op.result.shape, x.shape))


def _expand_dims(ctx, op, g):
    (x,) = op.operands
    ctx.add(x, f"tl.reshape({g[0]}, {x.shape!r})" if x.shape else f"tl.sum({g[0]}, axis=0)")


def _reshape(ctx, op, g):
    (x,) = op.operands
    ctx.add(x, f"tl.reshape({g[0]}, {x.shape!r})")


def _permute(ctx, op, g):
    (x,) = op.operands
    order = op.attrs["order"]
    inverse = tuple(order.index(d) for d in range(len(order)))
    ctx.add(x, f"tl.permute({g[0]}, {inverse!r})")


def _unreduce(ctx, g, axis, shape):
    """A reduced block's adjoint spread back over the reduced axis."""
    if len(shape) == 1:
        return f"tl.broadcast_to({g}, {shape!r})"
    return f"tl.broadcast_to(tl.expand_dims({g}, {axis}), {shape!r})"


def _reduce(ctx, op, g):
    combine, axis = op.attrs["combine"], op.attrs["axis"]
    x = op.operands[0]
    shape = x.shape
    if combine == "add":
        ctx.add(x, _unreduce(ctx, g[0], axis, shape))
        return
    if combine in ("max", "min", "argmax", "argmin"):
        if g[0] is None:
            return              # only the index is used: no gradient
        which = combine[-3:]
        index = op.results[1] if combine.startswith("arg") else None
        idx = ctx.p(index) if index is not None else ctx.let(f"tl.arg{which}({ctx.p(x)}, axis={axis})", "arg_pos")
        positions = f"tl.arange(0, {shape[axis]})"
        if len(shape) > 1:
            for d in range(len(shape)):
                if d != axis:
                    positions = f"tl.expand_dims({positions}, {d})"
            chosen = ctx.let(f"({positions} == tl.expand_dims({idx}, {axis}))", "chosen")
        else:
            chosen = ctx.let(f"({positions} == {idx})", "chosen")
        spread = ctx.let(_unreduce(ctx, g[0], axis, shape), "spread")
        ctx.add(x, f"tl.where({chosen}, {spread}, 0.0)")
        return
    if combine in ("xor", "or"):      # integers: no gradient
        return
    ctx.refuse(op, f"the derivative of a reduction with combine {combine!r}")


def _scan(ctx, op, g):
    if op.attrs["combine"] != "add" or op.regions:
        ctx.refuse(op, "the derivative of a scan other than cumsum")
    reverse = not op.attrs.get("reverse")
    ctx.add(op.operands[0], f"tl.cumsum({g[0]}, axis={op.attrs['axis']}, reverse={reverse})")


def _dot(ctx, op, g):
    (g,) = g
    a, b, acc = op.operands
    precision = op.attrs.get("precision")
    extra = f", input_precision={precision!r}" if precision and a.dtype is dtypes.float32 else ""
    transposed = lambda v: f"tl.trans({ctx.p(v)})"  # noqa: E731
    if ctx.active(a):
        ctx.add(a, f"tl.dot({ctx.cast_to(g, b.dtype)}, {transposed(b)}{extra}, out_dtype={ctx.adjoint_tl(a)})")
    if ctx.active(b):
        ctx.add(b, f"tl.dot({transposed(a)}, {ctx.cast_to(g, a.dtype)}{extra}, out_dtype={ctx.adjoint_tl(b)})")
    ctx.add(acc, ctx.converted(g, acc))


OPS = {
    OpKind.ELEMENTWISE: _elementwise,
    OpKind.CAST: _cast,
    OpKind.HINT: _through,
    OpKind.SPLAT: _broadcast,
    OpKind.BROADCAST: _broadcast,
    OpKind.EXPAND_DIMS: _expand_dims,
    OpKind.RESHAPE: _reshape,
    OpKind.PERMUTE: _permute,
    OpKind.REDUCE: _reduce,
    OpKind.SCAN: _scan,
    OpKind.DOT: _dot,
}

# Op kinds that never carry a gradient (indices, pointers, bits).
NO_GRADIENT = {OpKind.CONSTANT, OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS, OpKind.ARANGE, OpKind.ADDPTR, OpKind.BITCAST}
