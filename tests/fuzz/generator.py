"""Seeded random kernels: a DAG of block operations, each typed by `triton_types` and bounded by `Facts`, written
as the Python source of one `@jit` kernel in the Triton dialect.

The source imports `transpiler` and `transpiler.language as tl` only, so bench/twins.py can load the very same
file as Triton's. A kernel is 1-D (`offs`, `mask`) or 2-D (`rows`, `cols`, `mask`); it loads its inputs with a
mask and an `other`, builds the DAG (arithmetic, comparisons, bitwise ops, shifts, `where`, min/max/clamp/fma,
math functions, casts, broadcasting, reductions with and without `keep_dims`, scans, a runtime loop, constexpr
`if`s, helper `@jit` functions) and stores some values through the block's mask. Sizes are not multiples of
the block. Every operation is chosen only when its result is well defined for the values it can meet.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .triton_types import (BOOL, FLOAT_LIMIT, INT_BITS, MANTISSA, Facts, Untypeable, computation_type, convert,
                           float_facts, int_facts, int_range, integer_promote, is_float, is_int, is_signed,
                           literal_type, minmax_reduce_type, sum_type)

INPUT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]
CAST_DTYPES = INPUT_DTYPES + ["uint16", "uint32", "uint64", "bfloat16"]
# What an output array holds a value of each dtype as (the store converts): no bool, bf16 or wide unsigned
# arrays are needed on the host.
OUTPUT_DTYPE = {BOOL: "int8", "bfloat16": "float32", "uint16": "int32", "uint32": "int64", "uint64": "int64"}
MATH = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "sigmoid", "floor", "ceil"]


@dataclass
class Node:
    name: str
    op: str
    args: list            # Nodes and Python numbers
    dtype: str
    shape: tuple
    facts: Facts
    attrs: dict = field(default_factory=dict)
    template: str = ""    # the defining expression over {0}, {1}, ... (the Node arguments' names, in order)
    lines: list = field(default_factory=list)   # the statements defining it, when not `name = template`

    @property
    def node_args(self):
        return [a for a in self.args if isinstance(a, Node)]


@dataclass
class Input:
    dtype: str
    lo: float
    hi: float
    scale: int | None     # floats: multiples of 2**-scale; None: any value in [lo, hi]
    other: object         # the `other` of its masked load


@dataclass
class Case:
    seed: int
    rank: int
    block: tuple
    sizes: tuple
    num_warps: int
    inputs: list
    scalars: list         # (name, dtype, value) runtime scalar arguments
    constexprs: dict
    nodes: list
    outputs: list         # (Node, output dtype)
    helpers: list
    kernel_name: str
    source: str = ""

    @property
    def grid(self):
        return tuple(-(-s // b) for s, b in zip(self.sizes, self.block))

    def arg_names(self):
        names = [f"IN{i}" for i in range(len(self.inputs))] + [f"OUT{i}" for i in range(len(self.outputs))]
        return names + list(("M", "N")[-self.rank:] if self.rank == 2 else ("N",)) + [s[0] for s in self.scalars]


def _literal_facts(value):
    if isinstance(value, float):
        scale = 0
        while value * 2**scale != int(value * 2**scale):
            scale += 1
        return Facts(value, value, True, scale, abs(value))
    return Facts(value, value)


def _lit(value) -> str:
    return f"({value!r})" if value < 0 else repr(value)


def _tl(dtype) -> str:
    return f"tl.{dtype}"


def _broadcast(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _float_result(lo, hi, dtype, operands, exact=None, scale=None):
    operand_facts = [f for f in operands]
    if exact is None:
        exact = all(f.exact and f.scale is not None for f in operand_facts)
    peak = max([f.peak for f in operand_facts] + [0.0])
    noise = max([f.noise for f in operand_facts] + [0.0])
    return float_facts(lo, hi, dtype, exact, scale if exact else None, peak, noise)


class Generator:
    """Builds one Case from a seed."""

    def __init__(self, seed: int, max_nodes: int | None = None):
        self.rng = random.Random(seed)
        self.seed = seed
        self.nodes: list = []
        self.helpers: list = []
        self.constexprs: dict = {}
        self.scalars: list = []
        self.max_nodes = max_nodes or self.rng.randint(8, 22)

    # -- the frame ---------------------------------------------------------------------------------------
    def frame(self):
        rng = self.rng
        self.rank = rng.choice([1, 1, 2])
        if self.rank == 1:
            self.block = (rng.choice([16, 32, 64, 128, 256]),)
            self.sizes = (self.block[0] * rng.randint(1, 3) - rng.randint(1, self.block[0] - 1),)
        else:
            self.block = (rng.choice([2, 4, 8, 16, 32]), rng.choice([4, 8, 16, 32, 64]))
            self.sizes = tuple(b * rng.randint(1, 2) - rng.randint(1, max(1, b - 1)) for b in self.block)
            self.sizes = tuple(max(1, s) for s in self.sizes)
        self.num_warps = rng.choice([1, 2, 4])
        if self.rank == 1:
            self.index_nodes = [self.node("index", [], "int32", self.block, Facts(0, self.sizes[0] + self.block[0]),
                                          template="offs", attrs=dict(which="offs"))]
        else:
            bm, bn = self.block
            self.index_nodes = [
                self.node("index", [], "int32", (bm, 1), Facts(0, self.sizes[0] + bm), template="rows[:, None]",
                          attrs=dict(which="rows")),
                self.node("index", [], "int32", (1, bn), Facts(0, self.sizes[1] + bn), template="cols[None, :]",
                          attrs=dict(which="cols"))]
        self.inputs = []
        for _ in range(rng.randint(1, 3)):
            self.load(self.make_input())
        for dtype, value in [("int32", rng.randint(-20, 20)), ("float32", rng.choice([0.5, -1.25, 3.0, 0.375]))]:
            if rng.random() < 0.4:
                name = f"s{len(self.scalars)}"
                self.scalars.append((name, dtype, value))
                self.node("scalar", [], dtype, (), _literal_facts(value), template=name)
        self.named_constants()

    def named_constants(self):
        """`c = <literal>` statements: a number assigned to a name is a 0-d tensor in Triton (int32, int64 past
        int32's range, fp32), typed like a scalar argument rather than the weak literal of `x * 3`; drawn from a
        stream of their own so that the rest of a seed's draws stay as they were."""
        rng = random.Random(self.seed * 7919 + 17)
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            value = rng.choice([3, -2, 5, 100, 127, -128, 200, 2**33, 0.5, -1.5, 2.0, 0.375, True])
            dtype = ("int1" if isinstance(value, bool) else "float32" if isinstance(value, float) else
                     "int32" if -2**31 <= value < 2**31 else "int64")
            self.node("constant", [], dtype, (), _literal_facts(int(value) if dtype == "int1" else value),
                      template=_lit(value), attrs=dict(value=value))

    def make_input(self):
        rng = self.rng
        dtype = rng.choice(INPUT_DTYPES)
        if is_int(dtype):
            tlo, thi = int_range(dtype)
            span = rng.choice([8, 100, 1000, 2**20, 2**40])
            lo, hi = max(tlo, -span), min(thi, span)
            if rng.random() < 0.3:
                lo = max(lo, 0)
            other = rng.randint(max(lo, -5), min(hi, 5))
            return Input(dtype, lo, hi, None, other)
        limit = min(FLOAT_LIMIT[dtype] / 4, rng.choice([2.0, 8.0, 100.0]))
        scale = rng.choice([0, 2, 3, None])
        if dtype == "float16" and scale is not None:
            scale = min(scale, 2)
        other = rng.choice([0.0, 1.5, -2.0, 0.25])
        return Input(dtype, -limit, limit, scale, other)

    def load(self, inp: Input):
        index = len(self.inputs)
        self.inputs.append(inp)
        if is_int(inp.dtype):
            facts = Facts(min(inp.lo, inp.other), max(inp.hi, inp.other))
        else:
            facts = Facts(min(inp.lo, inp.other), max(inp.hi, inp.other), True, inp.scale,
                          max(abs(inp.lo), abs(inp.hi), abs(inp.other)))
        return self.node("load", [], inp.dtype, self.block, facts, attrs=dict(input=index),
                         template=f"tl.load(IN{index} + {'offs' if self.rank == 1 else 'offs2'}, mask=mask, "
                                  f"other={inp.other!r})")

    # -- nodes ---------------------------------------------------------------------------------------------
    def node(self, op, args, dtype, shape, facts, template="", attrs=None, lines=None):
        n = Node(f"v{len(self.nodes)}", op, list(args), dtype, tuple(shape), facts, dict(attrs or {}), template,
                 lines or [])
        self.nodes.append(n)
        return n

    def pick(self, pred=lambda n: True):
        candidates = [n for n in self.nodes if pred(n)]
        if not candidates:
            return None
        # Prefer recent values, so the DAG grows deep as well as wide.
        weights = [1 + i for i in range(len(candidates))]
        return self.rng.choices(candidates, weights)[0]

    def small_literal(self, like):
        if is_float(like):
            return self.rng.choice([0.5, 2.0, -1.5, 0.25, 3.0, -0.75])
        lo, hi = int_range(like) if like != BOOL else (0, 1)
        return self.rng.randint(max(lo, -4 if is_signed(like) else 0), min(hi, 9))

    def operand_or_literal(self, a, allow_literal=True):
        """A second operand whose shape broadcasts with `a`'s: a node, or a Python number (weak)."""
        if allow_literal and self.rng.random() < 0.3:
            return self.small_literal(a.dtype)
        return self.pick(lambda n: n.dtype != BOOL and self.fits(n.shape, a.shape))

    # -- operations ----------------------------------------------------------------------------------------
    def op_arith(self):
        fn = self.rng.choice(["add", "sub", "mul"])
        a = self.pick(lambda n: n.dtype != BOOL)
        b = self.operand_or_literal(a)
        if b is None:
            return None
        return self.binary(fn, a, b)

    def _operand_types(self, a, b, div_or_mod=False):
        a_dt = a.dtype if isinstance(a, Node) else literal_type(a)
        b_dt = b.dtype if isinstance(b, Node) else literal_type(b)
        ct = computation_type(a_dt, not isinstance(a, Node), b_dt, not isinstance(b, Node), div_or_mod)
        facts = []
        for x, dt in ((a, a_dt), (b, b_dt)):
            if isinstance(x, Node):
                facts.append(convert(x.facts, dt, ct))
            else:
                if is_int(ct) and not (int_range(ct)[0] <= x <= int_range(ct)[1]):
                    raise Untypeable("a literal out of the computation type's range")
                facts.append(convert(_literal_facts(x), dt, ct) if is_float(ct) else _literal_facts(int(x)))
        return ct, facts

    def legal(self, shape):
        """Shapes values may have: each axis 1 or the block's own size there (a 1-D value is a row)."""
        if shape is None or len(shape) > self.rank:
            return False
        dims = self.block[self.rank - len(shape):]
        return all(d in (1, b) for d, b in zip(shape, dims))

    def fits(self, *shapes):
        shape = _broadcast(*shapes)
        return shape is not None and self.legal(shape)

    def _shape(self, *xs):
        shape = _broadcast(*[x.shape for x in xs if isinstance(x, Node)] or [()])
        return shape if self.legal(shape) else None

    def binary(self, fn, a, b, strict=False):
        try:
            ct, (fa, fb) = self._operand_types(a, b)
        except Untypeable:
            return None
        if fa is None or fb is None or ct == BOOL:
            return None
        shape = self._shape(a, b)
        if shape is None:
            return None
        if fn == "mul":
            products = [fa.lo * fb.lo, fa.lo * fb.hi, fa.hi * fb.lo, fa.hi * fb.hi]
            lo, hi = min(products), max(products)
        elif fn == "add":
            lo, hi = fa.lo + fb.lo, fa.hi + fb.hi
        else:
            lo, hi = fa.lo - fb.hi, fa.hi - fb.lo
        if is_int(ct):
            facts = int_facts(lo, hi, ct)
        else:
            scale = (fa.scale or 0) + (fb.scale or 0) if fn == "mul" else max(fa.scale or 0, fb.scale or 0)
            facts = _float_result(lo, hi, ct, [fa, fb], scale=scale)
        if facts is None:
            return None
        sym = {"add": "+", "sub": "-", "mul": "*"}[fn]
        return self.expr_node(fn, [a, b], ct, shape, facts, f"{{}} {sym} {{}}", ct=ct)

    def expr_node(self, op, args, dtype, shape, facts, fmt, **attrs):
        """A node defined by one expression; `fmt` has one `{}` per argument, literals spelled in place."""
        parts, k = [], 0
        for x in args:
            if isinstance(x, Node):
                parts.append("{%d}" % k)
                k += 1
            else:
                parts.append(_lit(x))
        return self.node(op, args, dtype, shape, facts, template=fmt.format(*parts), attrs=attrs)

    def op_div(self):
        a = self.pick(lambda n: n.dtype != BOOL)
        b = self.pick(lambda n: n.dtype != BOOL and self.fits(n.shape, a.shape) and (
            not is_int(a.dtype) or is_int(n.dtype) and is_signed(n.dtype) == is_signed(a.dtype)))
        if a is None or b is None:
            return None
        d = self.positive_divisor(b)
        if d is None:
            return None
        integer = self.rng.random() < 0.5 and is_int(a.dtype) and is_int(d.dtype)
        try:
            ct, (fa, fd) = self._operand_types(a, d, div_or_mod=True)
        except Untypeable:
            return None
        if fa is None or fd is None:
            return None
        shape = self._shape(a, d)
        if shape is None:
            return None
        if integer:
            if self.rng.random() < 0.5:
                facts = int_facts(min(fa.lo, 0), max(fa.hi, 0), ct)
                return facts and self.expr_node("floordiv", [a, d], ct, shape, facts, "{} // {}", ct=ct)
            facts = int_facts(max(fa.lo, -7) if fa.lo < 0 else 0, min(max(fa.hi, 0), 7), ct)
            return facts and self.expr_node("mod", [a, d], ct, shape, facts, "{} % {}", ct=ct)
        rdt = "float32" if is_int(ct) else ct
        fa = convert(fa, ct, rdt)
        if fa is None:
            return None
        facts = _float_result(-fa.magnitude, fa.magnitude, rdt, [fa], exact=False)
        return facts and self.expr_node("truediv", [a, d], rdt, shape, facts, "{} / {}", ct=rdt)

    def positive_divisor(self, b):
        """A divisor built from `b` that is at least 1 everywhere: `tl.abs(b) + 1.0`, or `(b & 7) + 1`."""
        if is_float(b.dtype):
            absb = self.unary("abs", b)
            return absb and self.binary("add", absb, 1.0)
        masked = self.bitwise("and", b, 7)
        return masked and self.binary("add", masked, 1)

    def op_bitwise(self):
        a = self.pick(lambda n: is_int(n.dtype) or n.dtype == BOOL)
        if a is None:
            return None
        fn = self.rng.choice(["and", "or", "xor"])
        if a.dtype == BOOL:
            b = self.pick(lambda n: n.dtype == BOOL and self.fits(n.shape, a.shape))
        elif self.rng.random() < 0.3:
            b = self.small_literal(a.dtype)
        else:
            b = self.pick(lambda n: is_int(n.dtype) and self.fits(n.shape, a.shape))
        return b is not None and self.bitwise(fn, a, b) or None

    def bitwise(self, fn, a, b):
        try:
            ct, (fa, fb) = self._operand_types(a, b)
        except Untypeable:
            return None
        if fa is None or fb is None or not (is_int(ct) or ct == BOOL):
            return None
        shape = self._shape(a, b)
        if shape is None:
            return None
        if ct == BOOL:
            facts = Facts(0, 1)
        else:
            bits = max(int(abs(v)).bit_length() for v in (fa.lo, fa.hi, fb.lo, fb.hi))
            negative = min(fa.lo, fb.lo) < 0
            facts = int_facts(-(1 << bits) if negative else 0, (1 << bits) - 1, ct)
        if facts is None:
            return None
        sym = {"and": "&", "or": "|", "xor": "^"}[fn]
        return self.expr_node(fn, [a, b], ct, shape, facts, f"{{}} {sym} {{}}", ct=ct)

    def op_shift(self):
        a = self.pick(lambda n: is_int(n.dtype))
        if a is None:
            return None
        s = self.rng.randint(0, INT_BITS[a.dtype] - 1)
        f = a.facts
        if self.rng.random() < 0.5 or is_signed(a.dtype):
            return self.expr_node("shr", [a, s], a.dtype, a.shape, Facts(f.lo >> s, f.hi >> s), "{} >> {}",
                                  ct=a.dtype)
        facts = int_facts(f.lo << s, f.hi << s, a.dtype)
        return self.expr_node("shl", [a, s], a.dtype, a.shape, facts, "{} << {}", ct=a.dtype)

    def op_compare(self):
        a = self.pick(lambda n: n.dtype != BOOL and (is_int(n.dtype) or n.facts.exact))
        if a is None:
            return None
        b = self.operand_or_literal(a)
        if b is None or (isinstance(b, Node) and is_float(b.dtype) and not b.facts.exact):
            return None
        try:
            ct, (fa, fb) = self._operand_types(a, b)
        except Untypeable:
            return None
        if fa is None or fb is None or not (fa.exact and fb.exact):
            return None
        shape = self._shape(a, b)
        if shape is None:
            return None
        fn = self.rng.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[fn]
        return self.expr_node(fn, [a, b], BOOL, shape, Facts(0, 1), f"{{}} {sym} {{}}", ct=ct)

    def op_where(self):
        c = self.pick(lambda n: n.dtype == BOOL)
        if c is None:
            return self.op_compare()
        x = self.pick(lambda n: n.dtype != BOOL and self.fits(n.shape, c.shape))
        if x is None:
            return None
        y = self.operand_or_literal(x)
        if y is None:
            return None
        try:
            ct, (fx, fy) = self._operand_types(x, y)
        except Untypeable:
            return None
        shape = self._shape(c, x, y)
        if fx is None or fy is None or shape is None:
            return None
        facts = self.union(ct, fx, fy)
        return facts and self.expr_node("where", [c, x, y], ct, shape, facts, "tl.where({}, {}, {})", ct=ct)

    @staticmethod
    def union(ct, fx, fy):
        lo, hi = min(fx.lo, fy.lo), max(fx.hi, fy.hi)
        if is_int(ct):
            return int_facts(lo, hi, ct)
        exact = fx.exact and fy.exact
        scale = max(fx.scale or 0, fy.scale or 0) if fx.scale is not None and fy.scale is not None else None
        return float_facts(lo, hi, ct, exact and scale is not None or (exact and fx.scale is None), scale,
                           max(fx.peak, fy.peak), max(fx.noise, fy.noise))

    def _strict_types(self, *xs):
        """Triton's to_tensor then (for min/max/clamp) bf16 to fp32: the operands' types, none of them weak."""
        return [x.dtype if isinstance(x, Node) else literal_type(x) for x in xs]

    def op_minmax(self):
        a = self.pick(lambda n: n.dtype != BOOL)
        b = self.operand_or_literal(a)
        if b is None:
            return None
        da, db = ("float32" if d == "bfloat16" else d for d in self._strict_types(a, b))
        try:
            ct = computation_type(da, False, db, False)
        except Untypeable:
            return None
        fa = convert(a.facts, a.dtype, ct)
        fb = convert(b.facts, b.dtype, ct) if isinstance(b, Node) else (
            convert(_literal_facts(b), literal_type(b), ct))
        shape = self._shape(a, b)
        if fa is None or fb is None or shape is None:
            return None
        fn = self.rng.choice(["minimum", "maximum"])
        pick = min if fn == "minimum" else max
        lo, hi = pick(fa.lo, fb.lo), pick(fa.hi, fb.hi)
        facts = self.union(ct, fa, fb)
        facts = facts and Facts(lo, hi, facts.exact, facts.scale, facts.peak, facts.noise)
        return facts and self.expr_node(fn, [a, b], ct, shape, facts, f"tl.{fn}({{}}, {{}})", ct=ct)

    def op_clamp(self):
        x = self.pick(lambda n: is_float(n.dtype))
        if x is None:
            return None
        lo, hi = sorted(self.rng.sample([-1.5, -0.5, 0.0, 0.75, 2.0, 4.0], 2))
        dx = "float32" if x.dtype == "bfloat16" else x.dtype
        ct = computation_type(dx, False, "float32", False)
        fx = convert(x.facts, x.dtype, ct)
        if fx is None:
            return None
        facts = float_facts(max(min(fx.lo, hi), lo), min(max(fx.hi, lo), hi), ct, fx.exact, max(fx.scale or 0, 2)
                            if fx.scale is not None else None, fx.peak, fx.noise)
        return facts and self.expr_node("clamp", [x, lo, hi], ct, x.shape, facts, "tl.clamp({}, {}, {})", ct=ct)

    def op_fma(self):
        x = self.pick(lambda n: is_float(n.dtype))
        if x is None:
            return None
        y = self.pick(lambda n: n.dtype != BOOL and self.fits(n.shape, x.shape))
        z = self.operand_or_literal(x)
        if y is None or z is None:
            return None
        dx, dy, dz = self._strict_types(x, y, z)
        try:
            ct_xy = computation_type(dx, False, dy, False)
            ct = computation_type(dz, False, ct_xy, False)
        except Untypeable:
            return None
        if not is_float(ct):
            return None
        # Triton's order: x and y meet first (y may round there, an int64 into fp16), then z meets them
        fx, fy = (convert(f, d, ct_xy) for f, d in ((x.facts, dx), (y.facts, dy)))
        fx, fy = (f and convert(f, ct_xy, ct) for f in (fx, fy))
        fz = convert(z.facts if isinstance(z, Node) else _literal_facts(z), dz, ct)
        shape = self._shape(x, y, z)
        if None in (fx, fy, fz) or shape is None:
            return None
        products = [fx.lo * fy.lo, fx.lo * fy.hi, fx.hi * fy.lo, fx.hi * fy.hi]
        facts = _float_result(min(products) + fz.lo, max(products) + fz.hi, ct, [fx, fy, fz],
                              scale=max((fx.scale or 0) + (fy.scale or 0), fz.scale or 0))
        return facts and self.expr_node("fma", [x, y, z], ct, shape, facts, "tl.fma({}, {}, {})", ct=ct,
                                        ct_xy=ct_xy)

    def op_unary(self):
        fn = self.rng.choice(["neg", "invert", "abs"])
        a = self.pick(lambda n: n.dtype == BOOL and fn == "invert" or n.dtype != BOOL and
                      (fn != "invert" or is_int(n.dtype)))
        return a and self.unary(fn, a)

    def unary(self, fn, a):
        f, dt = a.facts, a.dtype
        if fn == "invert":
            if dt == BOOL:
                facts = Facts(0, 1)
            elif is_signed(dt):
                facts = Facts(-f.hi - 1, -f.lo - 1)
            else:
                top = int_range(dt)[1]
                facts = Facts(top - f.hi, top - f.lo)
            return self.expr_node("invert", [a], dt, a.shape, facts, "~{}")
        if is_int(dt):
            if is_signed(dt) and f.lo == int_range(dt)[0]:
                return None
            if fn == "neg":
                facts = Facts(-f.hi, -f.lo) if is_signed(dt) else (Facts(0, 0) if f.hi == 0 else
                                                                  Facts(*int_range(dt)))
            else:
                facts = Facts(0 if f.lo <= 0 <= f.hi else min(abs(f.lo), abs(f.hi)), max(abs(f.lo), abs(f.hi))) \
                    if is_signed(dt) else f
        else:
            if fn == "neg":
                facts = Facts(-f.hi, -f.lo, f.exact, f.scale, f.peak, f.noise)
            else:
                facts = Facts(0.0 if f.lo <= 0 <= f.hi else min(abs(f.lo), abs(f.hi)), f.magnitude, f.exact,
                              f.scale, f.peak, f.noise)
        return self.expr_node(fn, [a], dt, a.shape, facts, "-{}" if fn == "neg" else "tl.abs({})")

    def op_math(self):
        fn = self.rng.choice(MATH)
        a = self.pick(lambda n: is_float(n.dtype) and (fn not in ("floor", "ceil") or n.facts.exact))
        if a is None:
            return None
        if a.dtype not in ("float32", "float64"):       # Triton's math functions take fp32 and fp64 only
            a = self.cast(a, "float32")
            if a is None:
                return None
        f = a.facts
        if fn in ("log", "log2", "rsqrt", "sqrt"):
            absa = self.unary("abs", a)
            a = absa and (self.binary("add", absa, 1.0) if fn != "sqrt" else absa)
            if a is None:
                return None
            f = a.facts
        lo, hi = f.lo, f.hi
        if fn in ("exp", "exp2") and hi > 8:
            return None
        if fn in ("sin", "cos", "erf", "sigmoid") and f.magnitude > 60:
            return None
        bounds = {"exp": lambda: (math.exp(lo), math.exp(hi)), "exp2": lambda: (2.0**lo, 2.0**hi),
                  "log": lambda: (math.log(lo), math.log(hi)), "log2": lambda: (math.log2(lo), math.log2(hi)),
                  "sqrt": lambda: (0.0, math.sqrt(hi)), "rsqrt": lambda: (0.0, 1.0),
                  "sin": lambda: (-1.0, 1.0), "cos": lambda: (-1.0, 1.0), "erf": lambda: (-1.0, 1.0),
                  "sigmoid": lambda: (0.0, 1.0), "floor": lambda: (math.floor(lo), math.floor(hi)),
                  "ceil": lambda: (math.ceil(lo), math.ceil(hi))}[fn]()
        exact = fn in ("floor", "ceil")
        facts = float_facts(bounds[0], bounds[1], a.dtype, exact, 0 if exact else None, max(f.peak, 1.0), f.noise)
        return facts and self.expr_node(fn, [a], a.dtype, a.shape, facts, f"tl.{fn}({{}})")

    def op_cast(self):
        a = self.pick()
        if a is None:
            return None
        return self.cast(a, self.rng.choice([d for d in CAST_DTYPES if d != a.dtype]))

    def cast(self, a, dst):
        facts = convert(a.facts, a.dtype, dst)
        if facts is None:
            return None
        return self.expr_node("cast", [a], dst, a.shape, facts, f"{{}}.to({_tl(dst)})")

    def op_full(self):
        dtype = self.rng.choice(INPUT_DTYPES)
        value = self.small_literal(dtype)
        shape = self.block if self.rng.random() < 0.7 else ()
        if not shape:
            return None
        facts = _literal_facts(float(value) if is_float(dtype) else value)
        spelled = "(" + ", ".join(("BLOCK",) if self.rank == 1 else ("BM", "BN")) + ("," if self.rank == 1 else "")
        return self.node("full", [value], dtype, shape, facts, attrs=dict(value=value),
                         template=f"tl.full({spelled + ')'}, {_lit(value)}, {_tl(dtype)})")

    def op_reduce(self):
        a = self.pick(lambda n: n.dtype != BOOL and any(d > 1 for d in n.shape))
        if a is None:
            return None
        fn = self.rng.choice(["sum", "max", "min", "argmax", "argmin", "xor_sum"])
        axes = [i for i, d in enumerate(a.shape) if d > 1]
        axis = self.rng.choice(axes + ([None] if len(a.shape) == 2 and fn in ("sum", "max", "min") else []))
        keep = self.rng.random() < 0.4
        n = math.prod(a.shape) if axis is None else a.shape[axis]
        if axis is None:
            shape = (1,) * len(a.shape) if keep else ()
        else:
            shape = tuple(1 if i == axis else d for i, d in enumerate(a.shape)) if keep else \
                tuple(d for i, d in enumerate(a.shape) if i != axis)
        f = a.facts
        if fn == "sum":
            dt = sum_type(a.dtype)
            f = convert(f, a.dtype, dt)
            if f is None:
                return None
            lo, hi = min(f.lo * n, f.lo), max(f.hi * n, f.hi)
            facts = int_facts(lo, hi, dt) if is_int(dt) else _float_result(lo, hi, dt, [f], scale=f.scale)
            if is_float(dt) and MANTISSA[dt] < 24 and n > 64:
                return None      # a long half-precision sum: Triton's order of roundings is its own
        elif fn in ("max", "min"):
            dt = minmax_reduce_type(a.dtype)
            facts = convert(f, a.dtype, dt)
        elif fn in ("argmax", "argmin"):
            if is_float(a.dtype) and not f.exact:
                return None
            dt, facts = "int32", Facts(0, n - 1)
        else:
            if not is_int(a.dtype):
                return None
            dt = a.dtype
            bits = max(int(abs(v)).bit_length() for v in (f.lo, f.hi))
            facts = int_facts(-(1 << bits) if f.lo < 0 else 0, (1 << bits) - 1, dt)
        if facts is None:
            return None
        args = f"axis={axis}" + (", keep_dims=True" if keep else "")
        return self.expr_node("reduce", [a], dt, shape, facts, f"tl.{fn}({{}}, {args})", fn=fn, axis=axis,
                              keep_dims=keep)

    def op_scan(self):
        a = self.pick(lambda n: n.dtype != BOOL and any(d > 1 for d in n.shape))
        if a is None:
            return None
        axis = self.rng.choice([i for i, d in enumerate(a.shape) if d > 1])
        reverse = self.rng.random() < 0.3
        dt = sum_type("float32" if a.dtype == "bfloat16" else a.dtype)
        f = convert(a.facts, a.dtype, dt)
        if f is None:
            return None
        n = a.shape[axis]
        lo, hi = min(f.lo * n, f.lo), max(f.hi * n, f.hi)
        facts = int_facts(lo, hi, dt) if is_int(dt) else _float_result(lo, hi, dt, [f], scale=f.scale)
        if facts is None or (is_float(dt) and MANTISSA[dt] < 24 and n > 64):
            return None
        args = f"axis={axis}" + (", reverse=True" if reverse else "")
        return self.expr_node("cumsum", [a], dt, a.shape, facts, f"tl.cumsum({{}}, {args})", axis=axis,
                              reverse=reverse)

    def op_expand(self):
        if self.rank != 2:
            return None
        a = self.pick(lambda n: len(n.shape) == 1)
        if a is None:
            return None
        axis = 1 if a.shape[0] == self.block[0] else 0
        shape = (a.shape[0], 1) if axis == 1 else (1, a.shape[0])
        return self.expr_node("expand", [a], a.dtype, shape, a.facts, "{}[:, None]" if axis == 1 else "{}[None, :]")

    def op_loop(self):
        acc = self.pick(lambda n: n.dtype != BOOL and n.op not in ("loop",))
        if acc is None or any(n.op == "loop" for n in self.nodes):
            return None
        y = self.pick(lambda n: n.dtype != BOOL and _broadcast(n.shape, acc.shape) == acc.shape)
        if y is None:
            return None
        fn = self.rng.choice(["add", "maximum", "minimum"] + (["xor"] if is_int(acc.dtype) else []))
        fy = convert(y.facts, y.dtype, acc.dtype)
        if fy is None:
            return None
        trips = self.rng.randint(1, 3)
        fa = acc.facts
        if fn == "add":
            lo = fa.lo + trips * min(fy.lo, 0)
            hi = fa.hi + trips * max(fy.hi, 0)
            facts = int_facts(lo, hi, acc.dtype) if is_int(acc.dtype) else \
                _float_result(lo, hi, acc.dtype, [fa, fy], scale=max(fa.scale or 0, fy.scale or 0))
        elif fn == "xor":
            bits = max(int(abs(v)).bit_length() for v in (fa.lo, fa.hi, fy.lo, fy.hi))
            facts = int_facts(-(1 << bits) if min(fa.lo, fy.lo) < 0 else 0, (1 << bits) - 1, acc.dtype)
        else:
            facts = self.union(acc.dtype, fa, fy)
        if facts is None:
            return None
        self.scalars.append(("n_iter", "int32", trips))
        t = _tl(acc.dtype)
        body = {"add": "({0} + {1}.to(%s)).to(%s)" % (t, t), "xor": "({0} ^ {1}.to(%s)).to(%s)" % (t, t),
                "maximum": "tl.maximum({0}, {1}.to(%s)).to(%s)" % (t, t),
                "minimum": "tl.minimum({0}, {1}.to(%s)).to(%s)" % (t, t)}[fn]
        n = self.node("loop", [acc, y], acc.dtype, acc.shape, facts, attrs=dict(fn=fn, trips=trips))
        n.lines = [f"{n.name} = {{0}}", "for i in range(0, n_iter):",
                   f"    {n.name} = " + body.format(n.name, "{1}")]
        return n

    # -- wrappers: a helper @jit function, a constexpr if --------------------------------------------------
    def wrap_in_helper(self, n):
        params = [f"a{i}" for i in range(len(n.node_args))]
        name = f"helper{len(self.helpers)}"
        # Triton accepts blocks for parameters annotated tl.constexpr (its fused-attention tutorial does it)
        spelled = [p + (": tl.constexpr" if self.rng.random() < 0.3 else "") for p in params]
        self.helpers.append(f"@transpiler.jit\ndef {name}({', '.join(spelled)}):\n"
                            f"    return {n.template.format(*params)}\n")
        n.template = f"{name}({', '.join('{%d}' % i for i in range(len(params)))})"

    def wrap_in_constexpr_if(self, n):
        others = [m for m in self.nodes if m is not n and m.op != "loop" and m not in n.node_args]
        if not others:
            return
        flag = f"FLAG{len(self.constexprs)}"
        taken = self.rng.random() < 0.5
        self.constexprs[flag] = taken
        other = self.rng.choice(others)
        n.attrs["untaken"] = other
        mine = f"    {n.name} = {n.template}"
        alt = f"    {n.name} = {{{len(n.node_args)}}}"
        n.lines = ([f"if {flag}:", mine, "else:", alt] if taken else [f"if not {flag}:", mine, "else:", alt])

    # -- the whole case --------------------------------------------------------------------------------------
    OPS = ["op_arith"] * 6 + ["op_compare", "op_where", "op_where", "op_bitwise", "op_bitwise", "op_shift",
                             "op_minmax", "op_minmax", "op_clamp", "op_fma", "op_unary", "op_math", "op_math",
                             "op_cast", "op_cast", "op_cast", "op_div", "op_div", "op_full", "op_reduce", "op_reduce", "op_scan",
                             "op_expand", "op_loop"]

    def build(self) -> Case:
        self.frame()
        attempts = 0
        while len(self.nodes) < self.max_nodes and attempts < 200:
            attempts += 1
            before = len(self.nodes)
            made = getattr(self, self.rng.choice(self.OPS))()
            if made is None or len(self.nodes) == before:
                continue
            if made.op not in ("loop", "load", "index", "scalar", "constant") and made.node_args:
                if self.rng.random() < 0.12:
                    self.wrap_in_helper(made)
                elif self.rng.random() < 0.08:
                    self.wrap_in_constexpr_if(made)
        outputs = self.choose_outputs()
        block_names = {"BLOCK": self.block[0]} if self.rank == 1 else {"BM": self.block[0], "BN": self.block[1]}
        self.constexprs.update(block_names)
        case = Case(self.seed, self.rank, self.block, self.sizes, self.num_warps, self.inputs, self.scalars,
                    self.constexprs, self.nodes, outputs, self.helpers, f"fuzz_kernel_{self.seed}")
        case.source = write_source(case)
        return case

    def choose_outputs(self):
        storable = [n for n in self.nodes if len(n.shape) in (0, self.rank) and n.op not in ("index",)]
        used = {id(a) for n in self.nodes for a in n.node_args}
        sinks = [n for n in storable if id(n) not in used]
        chosen = sinks[-3:] or storable[-1:]
        extra = [n for n in storable if n not in chosen]
        if extra and self.rng.random() < 0.5:
            chosen.append(self.rng.choice(extra))
        return [(n, OUTPUT_DTYPE.get(n.dtype, n.dtype)) for n in chosen]


def _statements(n: Node):
    names = [a.name for a in n.node_args]
    if n.lines:
        extra = [n.attrs["untaken"].name] if "untaken" in n.attrs else []
        return [line.format(*(names + extra)) for line in n.lines]
    return [f"{n.name} = {n.template.format(*names)}"]


def write_source(case: Case) -> str:
    """The kernel module's Python source (Triton dialect)."""
    out = ["# Generated by tests/fuzz/generator.py, seed %d" % case.seed, "import transpiler",
           "import transpiler.language as tl", "", ""]
    for h in case.helpers:
        out += [h, ""]
    consts = [f"{k}: tl.constexpr" for k in case.constexprs]
    params = case.arg_names() + consts
    out.append("@transpiler.jit")
    out.append(f"def {case.kernel_name}({', '.join(params)}):")
    body = []
    if case.rank == 1:
        body += ["pid = tl.program_id(0)", "offs = pid * BLOCK + tl.arange(0, BLOCK)", "mask = offs < N"]
    else:
        body += ["rows = tl.program_id(0) * BM + tl.arange(0, BM)", "cols = tl.program_id(1) * BN + tl.arange(0, BN)",
                 "mask = (rows[:, None] < M) & (cols[None, :] < N)", "offs2 = rows[:, None] * N + cols[None, :]"]
    for n in case.nodes:
        body += _statements(n)
    target = "offs" if case.rank == 1 else "offs2"
    for i, (n, _) in enumerate(case.outputs):
        body.append(f"tl.store(OUT{i} + {target}, {n.name}, mask=mask)")
    out += ["    " + line for line in body]
    return "\n".join(out) + "\n"


# Two seeds in five make a kernel of one of the families (families.py): dots, atomics, layout chains, scans,
# integer edge cases, cast chains, block pointers, loops, libdevice, random numbers.
FAMILY_SEEDS = (1, 3)


def generate(seed: int):
    """The kernel of `seed`: a DAG case, or for two seeds in five a family case."""
    if seed % 5 in FAMILY_SEEDS:
        from .families import generate_family
        return generate_family(seed)
    return generate_dag(seed)


def generate_dag(seed: int) -> Case:
    return Generator(seed).build()
