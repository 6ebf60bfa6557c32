"""Affine forms of a loop's index and pointer blocks: the algebra the TMA pass (tma.py) proves tiles with.

A block value `v` of shape (n0, n1, ...) has the *affine form* `v[i0, i1, ...] = c + i0 * a0 + i1 * a1 + ...`
when `c` and the coefficients `a_d` are polynomials (`Poly`) in scalars: kernel arguments, scalars computed
before the loop (kept as opaque atoms unless they are sums and products the algebra can expand), and the loop's
iteration count `ITER` (0 for the first iteration). A pointer block has such a form plus a base pointer
argument (`base + form` elements).

Rules, for the ops an address is built from (anything else has no form):
- `arange(s, s + n)`: `s + i0`; a splat: its scalar; a hint (`tl.multiple_of`, ...): its operand;
  `expand_dims` / `broadcast` move or drop dimensions (a dimension of size 1 carries no coefficient); `add`, `sub`, and `mul` where one side is a scalar;
  casts between integers that keep every value (to a width at least as wide, the same signedness or wider);
  `addptr` adds an offset form to a pointer form;
- the loop's induction variable is `lo + step * ITER`; a carried value is `init + ITER * delta` when what the
  body yields for it is the carried value plus a `delta` that depends on neither it nor the iteration;
- `(s + i_d) % M` (one dimension, coefficient 1, M a scalar) is `s + i_d` under the *wrap guard*
  `0 <= s && s + n_d <= M`, a condition on scalars the kernel checks at run time before it relies on it.

A mask has *bounds* when it is a conjunction of comparisons `i_d + x  <op>  y` (x, y scalars): per dimension
an inclusive lower and an exclusive upper bound on the index `i_d`, as polynomials.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..parse.ir import OpKind, walk

ITER = "ITER"      # the atom key of the loop's iteration count


class Poly:
    """An integer polynomial: {monomial: coefficient}; a monomial is a sorted tuple of atom keys (value ids,
    or ITER), the empty tuple for the constant term. `atoms` maps keys to the IR values they stand for."""

    __slots__ = ("terms", "atoms")

    def __init__(self, terms=None, atoms=None):
        self.terms = {m: c for m, c in (terms or {}).items() if c}
        self.atoms = dict(atoms or {})

    @staticmethod
    def const(c):
        return Poly({(): c} if c else {})

    @staticmethod
    def atom(key, value=None):
        return Poly({(key,): 1}, {key: value} if value is not None else {})

    def __add__(self, other):
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms, {**self.atoms, **other.atoms})

    def __neg__(self):
        return Poly({m: -c for m, c in self.terms.items()}, self.atoms)

    def __sub__(self, other):
        return self + (-other)

    def __mul__(self, other):
        terms = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2, key=str))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms, {**self.atoms, **other.atoms})

    def __eq__(self, other):
        return isinstance(other, Poly) and self.terms == other.terms

    __hash__ = None

    @property
    def is_const(self):
        return all(m == () for m in self.terms)

    @property
    def value(self):
        return self.terms.get((), 0)

    def keys(self):
        return {k for m in self.terms for k in m}

    def degree_in(self, key):
        return max((m.count(key) for m in self.terms), default=0)

    def split_by(self, key):
        """(part without `key`, coefficient of `key`) when the polynomial is at most linear in it."""
        rest, coef = {}, {}
        for m, c in self.terms.items():
            n = m.count(key)
            if n == 0:
                rest[m] = c
            elif n == 1:
                coef[tuple(k for k in m if k != key)] = c
            else:
                return None
        return Poly(rest, self.atoms), Poly(coef, self.atoms)

    def divide_monomial(self, mono, coef):
        """(quotient, remainder): the terms whose monomial holds `mono` and whose coefficient `coef` divides,
        divided by `coef * mono`, and the other terms."""
        quotient, rest = {}, {}
        for m, c in self.terms.items():
            left = list(m)
            try:
                for k in mono:
                    left.remove(k)
            except ValueError:
                rest[m] = c
                continue
            if c % coef:
                rest[m] = c
                continue
            q = tuple(left)
            quotient[q] = quotient.get(q, 0) + c // coef
        return Poly(quotient, self.atoms), Poly(rest, self.atoms)

    def spell(self, name_of) -> str:
        """C expression; `name_of(key)` spells one atom."""
        if not self.terms:
            return "0"
        parts = []
        spelled = sorted(((len(m), sorted(name_of(k) for k in m), c) for m, c in self.terms.items()),
                         key=lambda t: (t[0], t[1]))         # by names, not ids: the same text every build
        for _, factors, c in spelled:
            if abs(c) != 1 or not factors:
                factors.insert(0, str(abs(c)))
            text = " * ".join(factors)
            parts.append(("- " if c < 0 else "+ ") + text)
        out = " ".join(parts)
        return out[2:] if out.startswith("+ ") else "-" + out[2:]

    def __repr__(self):
        return self.spell(lambda k: k if k == ITER else getattr(self.atoms.get(k), "name", None) or f"v{k}")


@dataclass
class Form:
    """`base + const + sum_d i_d * coefs[d]` (base None for an integer block)."""

    const: Poly
    coefs: dict = field(default_factory=dict)       # dimension -> Poly
    base: object = None
    wraps: tuple = ()        # (start Poly, size, modulus Poly) wrap guards this form relies on

    def plus(self, other, sign=1):
        coefs = dict(self.coefs)
        for d, c in other.coefs.items():
            coefs[d] = coefs.get(d, Poly()) + (c if sign > 0 else -c)
        const = self.const + other.const if sign > 0 else self.const - other.const
        return Form(const, {d: c for d, c in coefs.items() if c.terms}, self.base or other.base,
                    self.wraps + other.wraps)

    def scaled(self, p):
        return Form(self.const * p, {d: c * p for d, c in self.coefs.items() if (c * p).terms}, self.base, self.wraps)

    @property
    def is_scalar(self):
        return not self.coefs


@dataclass
class Bounds:
    """Per dimension [lower, upper) on the index i_d a mask lets through (None: that side unbounded)."""

    lower: dict = field(default_factory=dict)
    upper: dict = field(default_factory=dict)


def _int_widening(src, dst):
    if not (src.is_int() and dst.is_int()) or src.bits == 1 or dst.bits == 1:
        return False
    if src.signed == dst.signed:
        return dst.bits >= src.bits
    return not src.signed and dst.bits > src.bits


class LoopForms:
    """Affine forms of values inside `loop` (a `for` op); `form(v)` is None when `v` has none."""

    def __init__(self, kernel, loop):
        self.kernel, self.loop = kernel, loop
        region = loop.regions[0]
        self.iv, self.carried, self.yields = region.args[0], list(region.args[1:]), region.ops[-1].operands
        self.inside = {id(op) for op in walk(region)}
        self.args = {a.value for a in kernel.args}
        self.cache = {}
        self.busy = set()

    # -- scalars defined before the loop: expanded through sums and products down to atoms ---------------------
    def outer(self, v):
        owner = v.owner
        if v in self.args or owner is None or not hasattr(owner, "name"):
            return Form(Poly.atom(v.id, v))
        if owner.name == OpKind.CONSTANT and isinstance(owner.attrs.get("value"), int) \
                and not isinstance(owner.attrs.get("value"), bool):
            return Form(Poly.const(owner.attrs["value"]))
        if owner.name == OpKind.CAST and _int_widening(owner.operands[0].dtype, v.dtype):
            return self.outer(owner.operands[0])
        if owner.name == OpKind.ELEMENTWISE and owner.attrs.get("fn") in ("add", "sub", "mul") and not v.shape:
            x, y = (self.outer(o) for o in owner.operands)
            fn = owner.attrs["fn"]
            return x.plus(y) if fn == "add" else x.plus(y, -1) if fn == "sub" else Form(x.const * y.const)
        return Form(Poly.atom(v.id, v))

    # -- values of the loop -------------------------------------------------------------------------------
    def form(self, v):
        if v in self.cache:
            return self.cache[v]
        if v in self.busy:
            return None
        self.busy.add(v)
        try:
            f = self._form(v)
        finally:
            self.busy.discard(v)
        if f is not None:
            f = Form(f.const, {d: c for d, c in f.coefs.items() if c.terms and d < len(v.shape) and v.shape[d] > 1},
                     f.base, f.wraps)
        self.cache[v] = f
        return f

    def _form(self, v):
        if v is self.iv:
            lo, step = (self.outer(o) for o in self.loop.operands[:3:2])
            if not (lo.is_scalar and step.is_scalar):
                return None
            return Form(lo.const + step.const * Poly.atom(ITER))
        if v in self.carried:
            return self._carried(self.carried.index(v))
        if v in self.args:
            return Form(Poly(), base=v) if v.dtype.is_ptr() else self.outer(v)
        owner = v.owner
        if owner is None or not hasattr(owner, "name"):
            return None
        if id(owner) not in self.inside and not v.shape and not v.dtype.is_ptr():
            return self.outer(v)
        return self._op(owner, v)

    def _carried(self, j):
        init = self.form(self.loop.operands[3 + j])
        if init is None:
            return None
        placeholder = Form(Poly.atom(("carried", j)), base=init.base)
        saved = dict(self.cache)
        self.cache[self.carried[j]] = placeholder
        yielded = self.form(self.yields[j])
        self.cache = saved
        if yielded is None or yielded.base is not init.base:
            return None
        delta = yielded.plus(placeholder, -1)
        keys = delta.const.keys().union(*(c.keys() for c in delta.coefs.values()))
        if ITER in keys or any(isinstance(k, tuple) for k in keys) or delta.wraps:
            return None
        step = Form(delta.const, delta.coefs).scaled(Poly.atom(ITER))
        return init.plus(step)

    def _op(self, op, v):
        name = op.name
        if name == OpKind.CONSTANT:
            value = op.attrs.get("value")
            return Form(Poly.const(value)) if isinstance(value, int) and not isinstance(value, bool) else None
        if name == OpKind.ARANGE:
            start = op.attrs.get("start", 0)
            return Form(Poly.const(start), {0: Poly.const(1)})
        if name == OpKind.SPLAT:
            x = self.form(op.operands[0])
            return None if x is None or not x.is_scalar else x
        if name in (OpKind.BROADCAST, OpKind.HINT):      # tl.multiple_of / max_contiguous keep the value
            return self.form(op.operands[0])
        if name == OpKind.EXPAND_DIMS:
            x = self.form(op.operands[0])
            if x is None:
                return None
            axis = op.attrs["axis"]
            return Form(x.const, {d + (d >= axis): c for d, c in x.coefs.items()}, x.base, x.wraps)
        if name == OpKind.CAST:
            if not _int_widening(op.operands[0].dtype, v.dtype):
                return None
            return self.form(op.operands[0])
        if name == OpKind.ADDPTR:
            p, off = self.form(op.operands[0]), self.form(op.operands[1])
            if p is None or off is None or p.base is None or off.base is not None:
                return None
            return p.plus(off)
        if name == OpKind.ELEMENTWISE and v.dtype.is_int() and v.dtype.bits > 1:
            fn = op.attrs.get("fn")
            if fn not in ("add", "sub", "mul", "mod"):
                return None
            x, y = (self.form(o) for o in op.operands)
            if x is None or y is None or x.base is not None or y.base is not None:
                return None
            if fn == "add":
                return x.plus(y)
            if fn == "sub":
                return x.plus(y, -1)
            if fn == "mul":
                if y.is_scalar:
                    return x.scaled(y.const)
                if x.is_scalar:
                    return y.scaled(x.const)
                return None
            return self._wrap(x, y, v)
        return None

    def _wrap(self, x, m, v):
        """`x % m` where `x = s + i_d` over one dimension: `x` itself, under the guard 0 <= s, s + n_d <= m."""
        if not m.is_scalar or len(x.coefs) != 1:
            return None
        (d, c), = x.coefs.items()
        if c != Poly.const(1):
            return None
        return Form(x.const, x.coefs, None, x.wraps + ((x.const, v.shape[d], m.const),))

    # -- masks ----------------------------------------------------------------------------------------------
    def bounds(self, mask):
        """Bounds on the indices a mask lets through, or None when it is not such a conjunction."""
        owner = mask.owner
        if owner is None or not hasattr(owner, "name"):
            return None
        if owner.name == OpKind.BROADCAST:
            inner = self.bounds(owner.operands[0])
            if inner is None:
                return None
            src = owner.operands[0].shape
            keep = lambda side: {d: p for d, p in side.items() if src[d] > 1}   # noqa: E731
            return Bounds(keep(inner.lower), keep(inner.upper))
        if owner.name == OpKind.EXPAND_DIMS:
            inner = self.bounds(owner.operands[0])
            if inner is None:
                return None
            axis = owner.attrs["axis"]
            move = lambda side: {d + (d >= axis): p for d, p in side.items()}   # noqa: E731
            return Bounds(move(inner.lower), move(inner.upper))
        if owner.name != OpKind.ELEMENTWISE:
            return None
        fn = owner.attrs.get("fn")
        if fn == "and":
            a, b = (self.bounds(o) for o in owner.operands)
            if a is None or b is None:
                return None
            if set(a.lower) & set(b.lower) or set(a.upper) & set(b.upper):
                return None
            return Bounds({**a.lower, **b.lower}, {**a.upper, **b.upper})
        if fn not in ("lt", "le", "gt", "ge"):
            return None
        x, y = (self.form(o) for o in owner.operands)
        if x is None or y is None or x.base is not None or y.base is not None or x.wraps or y.wraps:
            return None
        diff = x.plus(y, -1)                    # the comparison is `diff <op> 0`
        if len(diff.coefs) != 1:
            return None
        (d, e), = diff.coefs.items()
        c = diff.const
        one = Poly.const(1)
        if e == one:        # i_d + c <op> 0
            table = {"lt": ("upper", -c), "le": ("upper", one - c), "gt": ("lower", one - c), "ge": ("lower", -c)}
        elif e == -one:     # c - i_d <op> 0
            table = {"lt": ("lower", c + one), "le": ("lower", c), "gt": ("upper", c), "ge": ("upper", c + one)}
        else:
            return None
        side, bound = table[fn]
        return Bounds({d: bound}, {}) if side == "lower" else Bounds({}, {d: bound})


__all__ = ["ITER", "Poly", "Form", "Bounds", "LoopForms"]
