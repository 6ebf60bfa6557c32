"""NumPy evaluation of a generated DAG, for every program at once, with Triton's semantics.

A node's value is an array of shape grid + node shape (bf16 held as float32 rounded to bf16, bool as bool).
Each operation converts its operands to the computation type the generator recorded, computes (floats in
float64, then rounded once to the node's dtype; integers in their own dtype, where unsigned values wrap and
signed ones cannot overflow by construction; `//` and `%` truncate toward zero as in C) and broadcasts block
shapes as NumPy does, after the grid axes. Nothing here calls the transpiler.
"""
from __future__ import annotations

import math

import numpy as np

from .triton_types import BOOL, is_float, is_int

_NP = {BOOL: np.bool_, "bfloat16": np.float32, "float16": np.float16, "float32": np.float32, "float64": np.float64}


def np_dtype(d):
    return np.dtype(_NP.get(d, d))


def round_bf16(x):
    """float64 values rounded once to bf16 (8 significant bits, ties to even), held as float32."""
    m, e = np.frexp(np.asarray(x, np.float64))
    return np.ldexp(np.rint(m * 256.0) / 256.0, e).astype(np.float32)


def round_to(x64, d):
    if d == "bfloat16":
        return round_bf16(x64)
    return np.asarray(x64, np.float64).astype(np_dtype(d))


def convert(a, src, dst):
    a = np.asarray(a)
    if src == dst:
        return a
    if is_float(dst):
        return round_to(a.astype(np.float64), dst)
    if is_float(src):
        wide = np.trunc(a.astype(np.float64))
        return wide.astype(np.uint64 if dst == "uint64" else np.int64).astype(np_dtype(dst))
    return a.astype(np_dtype(dst))        # integer to integer: C's conversion (wraps)


def _c_floordiv(a, b):
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _int_binary(fn, a, b):
    with np.errstate(over="ignore"):
        if fn == "floordiv":
            return _c_floordiv(a, b)
        if fn == "mod":
            return a - _c_floordiv(a, b) * b
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and,
                "or": np.bitwise_or, "xor": np.bitwise_xor}[fn](a, b).astype(a.dtype)


_FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide}
_COMPARE = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
            "ne": np.not_equal}
_erf = np.vectorize(math.erf, otypes=[np.float64])
_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
         "rsqrt": lambda v: 1.0 / np.sqrt(v), "sin": np.sin, "cos": np.cos, "erf": _erf,
         "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)), "floor": np.floor, "ceil": np.ceil}


class Evaluation:
    def __init__(self, case, inputs, scalars):
        self.case = case
        self.inputs = inputs
        self.scalars = dict((name, value) for (name, _, value) in case.scalars)
        self.scalars.update(scalars or {})
        self.grid = case.grid
        self.values = {}
        self._frame()

    def _frame(self):
        case, g = self.case, self.grid
        if case.rank == 1:
            (b,), (n,) = case.block, case.sizes
            self.offs = np.arange(g[0])[:, None] * b + np.arange(b)[None, :]
            self.mask = self.offs < n
            self.index = {"offs": self.offs.astype(np.int32)}
        else:
            (bm, bn), (m, n) = case.block, case.sizes
            full = g + (bm, bn)
            rows = np.broadcast_to(np.arange(g[0])[:, None, None, None] * bm + np.arange(bm)[None, None, :, None],
                                   g + (bm, 1))
            cols = np.broadcast_to(np.arange(g[1])[None, :, None, None] * bn + np.arange(bn)[None, None, None, :],
                                   g + (1, bn))
            self.mask = np.broadcast_to((rows < m) & (cols < n), full)
            self.offs = np.broadcast_to(rows * n + cols, full)
            self.index = {"rows": rows.astype(np.int32), "cols": cols.astype(np.int32)}

    def lift(self, node, shape):
        """`node`'s value shaped grid + `shape`'s rank (leading size-1 axes added), ready to broadcast."""
        v = self.values[node.name]
        extra = len(shape) - len(node.shape)
        return v.reshape(self.grid + (1,) * extra + node.shape)

    def arg(self, x, shape, src, ct):
        """An operand converted to the computation type `ct`: a node lifted to `shape`, or a literal."""
        if hasattr(x, "name"):
            return convert(self.lift(x, shape), src or x.dtype, ct)
        return convert(np.asarray(x), "float64" if isinstance(x, float) else "int64", ct) if ct != BOOL \
            else np.asarray(bool(x))

    def run(self):
        for n in self.case.nodes:
            self.values[n.name] = np.asarray(self.evaluate(n))
            expected = self.grid + n.shape
            if self.values[n.name].shape != expected:
                self.values[n.name] = np.broadcast_to(self.values[n.name], expected)
        return self.outputs()

    def evaluate(self, n):
        op, a, ct = n.op, n.args, n.attrs.get("ct")
        if op == "index":
            return self.index[n.attrs["which"]]
        if op == "constant":
            return np.full(self.grid, n.attrs["value"], np_dtype(n.dtype))
        if op == "scalar":
            return np.full(self.grid, self.scalars[n.template], np_dtype(n.dtype))
        if op == "load":
            inp = self.inputs[n.attrs["input"]]
            flat = inp.reshape(-1)
            picked = flat[np.where(self.mask, self.offs, 0)]
            other = convert(np.asarray(self.case.inputs[n.attrs["input"]].other), "float64" if is_float(n.dtype)
                            else "int64", n.dtype)
            return np.where(self.mask, picked, other)
        if op == "full":
            return np.full(self.grid + n.shape, convert(np.asarray(a[0]), "float64" if isinstance(a[0], float)
                                                        else "int64", n.dtype))
        if op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor"):
            x, y = (self.arg(v, n.shape, None, ct) for v in a)
            if ct == BOOL:
                return {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op](x, y)
            if is_int(ct):
                x, y = np.broadcast_arrays(x, y)
                return _int_binary(op, x, y)
            return round_to(_FLOAT_BINARY[op](x.astype(np.float64), y.astype(np.float64)), n.dtype)
        if op in ("shl", "shr"):
            x = self.lift(a[0], n.shape)
            s = np.asarray(a[1]).astype(x.dtype)
            return np.left_shift(x, s) if op == "shl" else np.right_shift(x, s)
        if op in _COMPARE:
            x, y = (self.arg(v, n.shape, None, ct) for v in a)
            return _COMPARE[op](x, y)
        if op == "where":
            c = self.lift(a[0], n.shape)
            x, y = (self.arg(v, n.shape, None, ct) for v in a[1:])
            return np.where(c, x, y)
        if op in ("minimum", "maximum", "clamp"):
            x, y = (self.arg(v, n.shape, None, ct) for v in a[:2])
            if op == "clamp":
                return np.minimum(np.maximum(x, y), self.arg(a[2], n.shape, None, ct))
            return np.minimum(x, y) if op == "minimum" else np.maximum(x, y)
        if op == "fma":
            x, y = (convert(self.arg(v, n.shape, None, n.attrs["ct_xy"]), n.attrs["ct_xy"], ct) for v in a[:2])
            x, y, z = x.astype(np.float64), y.astype(np.float64), self.arg(a[2], n.shape, None, ct).astype(np.float64)
            return round_to(x * y + z, n.dtype)
        if op == "neg":
            x = self.lift(a[0], n.shape)
            with np.errstate(over="ignore"):
                return (np.zeros_like(x) - x).astype(x.dtype)      # Triton's -x is 0 - x (+0.0 stays +0.0)
        if op == "invert":
            x = self.lift(a[0], n.shape)
            return np.logical_not(x) if n.dtype == BOOL else np.invert(x)
        if op == "abs":
            x = self.lift(a[0], n.shape)
            return np.abs(x) if is_float(n.dtype) or n.dtype.startswith("int") else x
        if op in _MATH:
            return round_to(_MATH[op](self.lift(a[0], n.shape).astype(np.float64)), n.dtype)
        if op == "cast":
            return convert(self.lift(a[0], a[0].shape), a[0].dtype, n.dtype)
        if op == "expand":
            return self.lift(a[0], a[0].shape).reshape(self.grid + n.shape)
        if op == "reduce":
            return self.reduce(n)
        if op == "cumsum":
            return self.cumsum(n)
        if op == "loop":
            return self.loop(n)
        raise NotImplementedError(op)

    def _axes(self, node, axis):
        g = len(self.grid)
        return tuple(range(g, g + len(node.shape))) if axis is None else g + axis

    def reduce(self, n):
        src = n.args[0]
        x = self.lift(src, src.shape)
        fn, axis, keep = n.attrs["fn"], n.attrs["axis"], n.attrs["keep_dims"]
        axes = self._axes(src, axis)
        if fn in ("argmax", "argmin"):
            idx = (np.argmax if fn == "argmax" else np.argmin)(x, axis=axes)
            return (np.expand_dims(idx, axes) if keep else idx).astype(np.int32)
        x = convert(x, src.dtype, n.dtype)
        if fn == "sum":
            if is_float(n.dtype):
                return round_to(np.sum(x.astype(np.float64), axis=axes, keepdims=keep), n.dtype)
            with np.errstate(over="ignore"):
                return np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)
        if fn == "xor_sum":
            return np.bitwise_xor.reduce(x, axis=axes, keepdims=keep)
        return (np.max if fn == "max" else np.min)(x, axis=axes, keepdims=keep)

    def cumsum(self, n):
        src = n.args[0]
        x = convert(self.lift(src, src.shape), src.dtype, n.dtype)
        axis = len(self.grid) + n.attrs["axis"]
        if n.attrs["reverse"]:
            x = np.flip(x, axis)
        if is_float(n.dtype):
            out = round_to(np.cumsum(x.astype(np.float64), axis=axis), n.dtype)
        else:
            with np.errstate(over="ignore"):
                out = np.cumsum(x, axis=axis, dtype=x.dtype)
        return np.flip(out, axis) if n.attrs["reverse"] else out

    def loop(self, n):
        acc_node, y_node = n.args
        t = n.dtype
        acc = self.lift(acc_node, n.shape)
        y = convert(self.lift(y_node, n.shape), y_node.dtype, t)
        fn = n.attrs["fn"]
        for _ in range(self.scalars["n_iter"]):
            acc, yb = np.broadcast_arrays(acc, y)
            if fn == "add":
                acc = _int_binary("add", acc, yb) if is_int(t) else round_to(acc.astype(np.float64) + yb, t)
            elif fn == "xor":
                acc = np.bitwise_xor(acc, yb)
            else:
                acc = np.minimum(acc, yb) if fn == "minimum" else np.maximum(acc, yb)
        return acc

    def outputs(self):
        """The output arrays as the kernel leaves them: poison where no program stores."""
        case = self.case
        total = int(np.prod(case.sizes))
        results = []
        for node, out_dt in case.outputs:
            out = poison(total, out_dt)
            full = self.grid + case.block
            v = np.broadcast_to(convert(self.lift(node, case.block), node.dtype, out_dt), full)
            out[self.offs[self.mask]] = v[self.mask]
            results.append(out.reshape(case.sizes))
        return results


def poison(count, dtype):
    if is_float(dtype):
        return np.full(count, np.nan, np_dtype(dtype))
    return np.full(count, -7 if dtype.startswith("int") else 7, np_dtype(dtype))


def evaluate(case, inputs, scalars=None):
    return Evaluation(case, inputs, scalars).run()
