"""The gradient-write decision: how the gradient of each load from a differentiable input is added into its
gradient array: a plain read-add-write, or an atomic add.

A plain write is correct only when no other lane, of this program or another, touches the same element: the
analysis proves that from the load's addresses. Each address is read as an affine form over the program ids,
the lanes of each block dimension and the constants (`affine_forms`); a form is injective over the launch when
every dimension of the block has a lane term, at most one program id appears, and the terms, sorted by the
size of their coefficient, form a mixed-radix number (each coefficient larger than the span of the smaller
ones, the program id's the largest). Several loads of one input (a box's four fields at 4 * box + k) are
disjoint when they share the same terms and their constants differ modulo the coefficients' common divisor.
Inside a runtime `for` with a constant positive step, the induction variable is `lo + step * k` with k the
iteration's number (0 <= k < the trip count, known when the bounds are constants, unbounded otherwise): k is
one more digit of the mixed-radix number, so `X + pid * BLOCK * ITERS + i * BLOCK + arange` (constant trip
count) and `X + row * stride + start + arange` (a runtime bound: the row's per-program part, bounded by the
mask `start + arange < n_cols`, under the runtime test `stride >= n_cols`) are proved injective over the
launch and all iterations.
Anything else (an address depending on a runtime stride or on loaded data, a block every program reads such
as a weight vector) gets atomic adds, and the reason says why. The decisions appear in `explain`.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..parse.ir import OpKind


def forced_atomic() -> bool:
    """`TRANSPILER_AUTODIFF_WRITES=atomic` makes every gradient write an atomic add (to check that both
    choices give the same answer); read when a backward is derived, and part of its cache key."""
    return os.environ.get("TRANSPILER_AUTODIFF_WRITES") == "atomic"


@dataclass(frozen=True)
class Affine:
    """sum(coefficient * symbol) + constant; symbols are ("pid", axis), ("lane", dim), ("arg", name) and
    ("prod", (symbol, symbol)) for a product of two (never proved injective: only named in reasons)."""

    terms: tuple          # sorted ((symbol, coefficient), ...), no zero coefficients
    constant: int = 0

    @staticmethod
    def of(terms: dict, constant: int = 0) -> "Affine":
        return Affine(tuple(sorted((s, c) for s, c in terms.items() if c)), constant)

    def term_dict(self) -> dict:
        return dict(self.terms)

    def plus(self, other: "Affine", sign: int = 1) -> "Affine":
        terms = self.term_dict()
        for s, c in other.terms:
            terms[s] = terms.get(s, 0) + sign * c
        return Affine.of(terms, self.constant + sign * other.constant)

    def scaled(self, k: int) -> "Affine":
        return Affine.of({s: c * k for s, c in self.terms}, self.constant * k)

    def relabel_lanes(self, mapping) -> "Affine":
        return Affine.of({(("lane", mapping(s[1])) if s[0] == "lane" else s): c for s, c in self.terms},
                         self.constant)

    def __str__(self):
        parts = [f"{c}*{_symbol_text(s)}" if c != 1 else _symbol_text(s) for s, c in self.terms]
        if self.constant or not parts:
            parts.append(str(self.constant))
        return " + ".join(parts)


def _symbol_text(s):
    kind, what = s
    if kind == "prod":
        return "*".join(_symbol_text(x) for x in what)
    if kind == "iter":
        return f"iteration({what[1]})"
    return {"pid": f"program_id({what})", "lane": f"lane[{what}]", "arg": str(what)}[kind]


class AffineForms:
    """The affine form of integer and pointer values (pointers: element offsets from their root argument), or
    None where a value is not affine in the launch's coordinates."""

    def __init__(self, ir):
        from ..parse.ir import walk
        self.arg_names = {a.value: a.name for a in ir.args}
        self.memo = {}
        self.loops = {}        # induction variable -> (index, the for op)
        self.trip_counts = {}  # ("iter", (index, name)) -> iterations, or None when the bounds are runtime values
        self.program_axes = set()   # grid axes whose program id the kernel reads
        for op in walk(ir.body):
            if op.name == OpKind.FOR:
                self.loops[op.regions[0].args[0]] = (len(self.loops), op)
            elif op.name == OpKind.PROGRAM_ID:
                self.program_axes.add(op.attrs["axis"])

    def __call__(self, v):
        if v not in self.memo:
            self.memo[v] = self._form(v)
        return self.memo[v]

    def _induction_form(self, v):
        """`lo + step * k` for the induction variable of a loop with a constant positive step (k: the
        iteration's number, a symbol of its own), else None."""
        index, op = self.loops[v]
        lo, hi, step = (self(o) for o in op.operands[:3])
        if lo is None or step is None or step.terms or step.constant <= 0:
            return None
        symbol = ("iter", (index, v.name or f"loop {index}"))
        known = hi is not None and not hi.terms and not lo.terms
        self.trip_counts[symbol] = max(0, -(-(hi.constant - lo.constant) // step.constant)) if known else None
        return lo.plus(Affine.of({symbol: step.constant}))

    def _form(self, v):
        if v in self.arg_names:
            return Affine.of({}) if v.dtype.is_ptr() else Affine.of({("arg", self.arg_names[v]): 1})
        if v in self.loops:
            return self._induction_form(v)
        op = v.owner
        if op is None or not hasattr(op, "name"):
            return None
        rule = _FORMS.get(op.name)
        return rule(self, op) if rule else None


def _elementwise_form(forms, op):
    fn = op.attrs["fn"]
    operands = [forms(o) for o in op.operands]
    if any(f is None for f in operands):
        return None
    if fn in ("add", "sub"):
        return operands[0].plus(operands[1], 1 if fn == "add" else -1)
    if fn == "neg":
        return operands[0].scaled(-1)
    if fn == "mul":
        x, y = operands
        if not x.terms:
            return y.scaled(x.constant)
        if not y.terms:
            return x.scaled(y.constant)
        if len(x.terms) == 1 and len(y.terms) == 1 and not x.constant and not y.constant:
            # row * stride: a product of two launch values, kept as one symbol so the reason can name it
            (sx, cx), (sy, cy) = x.terms[0], y.terms[0]
            return Affine.of({("prod", (sx, sy)): cx * cy})
    return None


def _int_cast_form(forms, op):
    (x,) = op.operands
    if x.dtype.is_int() and op.result.dtype.is_int() and op.result.dtype.bits >= x.dtype.bits:
        return forms(x)
    return None


def _expand_form(forms, op):
    f = forms(op.operands[0])
    axis = op.attrs["axis"]
    return f and f.relabel_lanes(lambda d: d + 1 if d >= axis else d)


def _permute_form(forms, op):
    f = forms(op.operands[0])
    order = list(op.attrs["order"])
    return f and f.relabel_lanes(lambda d: order.index(d))


def _addptr_form(forms, op):
    p, off = (forms(o) for o in op.operands)
    return p.plus(off) if p is not None and off is not None else None


_FORMS = {
    OpKind.CONSTANT: lambda forms, op: Affine.of({}, op.attrs["value"]) if isinstance(op.attrs["value"], int) else None,
    OpKind.PROGRAM_ID: lambda forms, op: Affine.of({("pid", op.attrs["axis"]): 1}),
    OpKind.ARANGE: lambda forms, op: Affine.of({("lane", 0): 1}, op.attrs["start"]),
    OpKind.SPLAT: lambda forms, op: forms(op.operands[0]),
    OpKind.BROADCAST: lambda forms, op: forms(op.operands[0]),
    OpKind.HINT: lambda forms, op: forms(op.operands[0]),
    OpKind.EXPAND_DIMS: _expand_form,
    OpKind.PERMUTE: _permute_form,
    OpKind.CAST: _int_cast_form,
    OpKind.ELEMENTWISE: _elementwise_form,
    OpKind.ADDPTR: _addptr_form,
}


@dataclass
class WriteDecision:
    plain: bool
    reason: str
    condition: str | None = None    # Python text: plain where it holds at run time, atomic adds otherwise
    partials: bool = False          # per-program partial rows summed by a second kernel (partials.py)
    full_row: int = 0               # partials: the read covers [0, full_row) one lane per element


def _live_lane_bound(mask, forms, arg_names, row=None):
    """(dimension, bound text, constant c) when the mask keeps only lanes with lane[d] + c < bound, the bound a
    scalar argument: `cols < n_cols` (conjunctions searched), else None. With `row` (the per-program part of
    the offsets, loop iterations included), the mask's left side must be that part plus a constant:
    `start + arange < n_cols`."""
    if mask is None:
        return None
    op = getattr(mask, "owner", None)
    if getattr(op, "name", None) != OpKind.ELEMENTWISE:
        return None
    if op.attrs["fn"] == "and":
        return (_live_lane_bound(op.operands[0], forms, arg_names, row) or
                _live_lane_bound(op.operands[1], forms, arg_names, row))
    if op.attrs["fn"] != "lt":
        return None
    lhs, rhs = (forms(v) for v in op.operands)
    if lhs is None or rhs is None:
        return None
    if row is not None and any(s[0] == "iter" for s, _ in row.terms):
        if lhs.terms != row.terms:
            return None
        lanes = [s for s, _ in lhs.terms if s[0] == "lane"]
        lhs = Affine.of({lanes[0]: 1}, lhs.constant)
    if len(lhs.terms) != 1 or lhs.terms[0][0][0] != "lane" or lhs.terms[0][1] != 1:
        return None
    if len(rhs.terms) != 1 or rhs.terms[0][0][0] != "arg" or rhs.terms[0][1] != 1 or rhs.constant:
        return None
    return lhs.terms[0][0][1], rhs.terms[0][0][1], lhs.constant


def _strided_rows(op, form, shape, forms):
    """The runtime condition under which the load's offsets `program_id * stride + lanes` (a row per program,
    its live lanes bounded by the mask; in a loop, `+ start` with `start` stepping by the block) are
    injective: stride >= the row's live span. None if not that shape."""
    terms = form.term_dict()
    prods = [(s, c) for s, c in terms.items() if s[0] == "prod"]
    if len(prods) != 1 or prods[0][1] != 1 or any(s[0] in ("arg", "pid") for s in terms):
        return None
    pair = prods[0][0][1]
    kinds = sorted(x[0] for x in pair)
    if kinds != ["arg", "pid"]:
        return None
    if set(forms.program_axes) - {next(x[1] for x in pair if x[0] == "pid")}:
        return None         # programs along another axis read the same row
    stride = next(x[1] for x in pair if x[0] == "arg")
    lanes = {s[1]: c for s, c in terms.items() if s[0] == "lane"}
    if len(lanes) != 1 or list(lanes.values())[0] != 1 or sum(1 for n in shape if n > 1) != 1:
        return None
    row = Affine.of({s: c for s, c in terms.items() if s[0] != "prod"})     # the per-program part
    iterations = {s: c for s, c in row.terms if s[0] == "iter"}
    if iterations and (any(c <= 0 for c in iterations.values()) or not _lanes_injective(row, shape,
                                                                                         forms.trip_counts)):
        return None
    bound = _live_lane_bound(op.operands[1] if len(op.operands) > 1 else None, forms, None, row)
    dim = next(iter(lanes))
    if bound is None or bound[0] != dim:
        if iterations:
            return None                 # the loop's span is not bounded by a mask
        return f"{stride} >= {shape[dim]}"
    _, limit, c = bound
    return f"{stride} >= {limit} - ({c})" if c else f"{stride} >= {limit}"


def _program_digits(terms, shape, trip_counts):
    """The digits (coefficient, count; None: unbounded) of one program's offsets: each block dimension's lanes
    and each enclosing loop's iterations; None when a block dimension has no lane term."""
    digits = []
    for d, n in enumerate(shape):
        c = terms.get(("lane", d), 0)
        if n > 1 and c == 0:
            return None
        if n > 1:
            digits.append((abs(c), n))
    digits += [(abs(c), trip_counts.get(s)) for s, c in terms.items() if s[0] == "iter"]
    return digits


def _mixed_radix_span(digits):
    """The largest offset of the digits if they form a mixed-radix number (each coefficient above the span of
    the smaller ones; an unbounded digit only as the largest: span None), else False."""
    span = 0
    for c, n in sorted(digits, key=lambda d: (d[0], d[1] is None)):
        if span is None or c <= span:
            return False
        span = None if n is None else span + c * (n - 1)
    return span


def _lanes_injective(form: Affine, shape, trip_counts=None) -> bool:
    """Whether the lanes of one program, over all iterations of its loops, read distinct elements (constant
    coefficients, mixed radix)."""
    terms = form.term_dict()
    if any(s[0] not in ("lane", "iter") for s in terms):
        return False
    digits = _program_digits(terms, shape, trip_counts or {})
    return digits is not None and _mixed_radix_span(digits) is not False


def _injective(form: Affine, shape, trip_counts=None, program_axes=()) -> str | None:
    """None when the form maps (program, lane, iteration) to distinct offsets, else why not. `program_axes`:
    the grid axes whose program id the kernel reads; programs differing only along one the form lacks read
    the same elements (a bias `B + rn` in a kernel with rows along axis 0)."""
    terms = form.term_dict()
    args = [s for s in terms if s[0] == "arg"] + [x for s in terms if s[0] == "prod" for x in s[1] if x[0] == "arg"]
    if args:
        return f"its offsets depend on the runtime value {args[0][1]}"
    if any(s[0] == "prod" for s in terms):
        return "its offsets multiply program ids"
    for d, n in enumerate(shape):
        if n > 1 and not terms.get(("lane", d), 0):
            return f"every lane along dimension {d} of the block reads the same element"
    pids = [(s, c) for s, c in terms.items() if s[0] == "pid"]
    if not pids:
        return "every program reads the same elements (a block replicated across programs)"
    if len(pids) > 1:
        return "its offsets combine several program ids"
    missing = sorted(set(program_axes) - {pids[0][0][1]})
    if missing:
        return (f"programs along grid axis {missing[0]} read the same elements (its offsets do not depend on "
                f"program_id({missing[0]}))")
    span = _mixed_radix_span(_program_digits(terms, shape, trip_counts or {}))
    if span is False:
        return "two lanes of a program, or two iterations of its loop, may read the same element"
    if span is None:
        return "its loop's trip count is a runtime value, so the blocks of neighbouring programs may overlap"
    if abs(pids[0][1]) <= span:
        return "the blocks of neighbouring programs overlap"
    return None


def decide(loads, forms: AffineForms) -> WriteDecision:
    """One decision for all loads of one differentiable input (their writes must all be plain, or none)."""
    if forced_atomic():
        return WriteDecision(False, "TRANSPILER_AUTODIFF_WRITES=atomic")
    shapes_forms = []
    for op in loads:
        f = forms(op.operands[0])
        if f is None:
            return WriteDecision(False, "its addresses are not affine in the program id and lanes")
        shapes_forms.append((op.operands[0].shape, f))
    counts = forms.trip_counts
    for shape, f in shapes_forms:
        why = _injective(f, shape, counts, forms.program_axes)
        if why:
            if len(loads) == 1 and _lanes_injective(f, shape, counts):
                full = len(shape) == 1 and f.terms == ((("lane", 0), 1),) and f.constant == 0
                how = (f"each program stores its row of {shape[0]} (a row per program while the buffer stays "
                       "under 256 MiB, else atomic adds into 64 shared rows)" if full else
                       "each program adds atomically into row program % 64")
                return WriteDecision(False, f"{why}: per-program partial sums: {how} of a partial buffer; a second "
                                            "kernel (partials.py) adds the rows into the gradient",
                                     partials=True, full_row=shape[0] if full else 0)
            if len(loads) == 1:
                condition = _strided_rows(loads[0], f, shape, forms)
                if condition:
                    return WriteDecision(False, f"a row per program at a runtime stride (offsets {f}): plain when "
                                                f"{condition} holds at run time (rows cannot overlap), atomic "
                                                "adds otherwise", condition=condition)
            return WriteDecision(False, why)
    first_shape, first = shapes_forms[0]
    if len(shapes_forms) > 1:
        if any(s != first_shape or f.terms != first.terms for s, f in shapes_forms):
            return WriteDecision(False, "its loads read through different index patterns that may overlap")
        step = 0
        for _, c in first.terms:
            step = math.gcd(step, abs(c))
        residues = [f.constant % step for _, f in shapes_forms]
        if len(set(residues)) != len(residues):
            return WriteDecision(False, "two of its loads may read the same element")
    offsets = "; ".join(str(f) for _, f in shapes_forms)
    looped = " in one iteration of its loop" if any(s[0] == "iter" for s, _ in first.terms) else ""
    return WriteDecision(True, f"each element is read by exactly one lane of one program{looped} (offsets "
                               f"{offsets})")
