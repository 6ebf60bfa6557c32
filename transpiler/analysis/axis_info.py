"""Axis information: for integer and pointer values, per dimension, contiguity, divisibility and constancy.

Decides nothing itself; it proves facts the vectorizer and the layout pass use: how many consecutive elements
along a dimension are consecutive in memory (contiguity), the largest power of two dividing the first element
of each such run (divisibility; bytes for pointers, elements for integers), and how many consecutive elements
are equal (constancy). Seeds come from the specialization (16-byte aligned pointers, integers divisible by
16) and from `tl.multiple_of` / `tl.max_contiguous` / `tl.max_constancy`. Rules follow Triton's AxisInfo.
Loop-carried values (a pointer block advanced by `ptrs += BLOCK * stride`) get the meet of their initial
value and what the body yields, iterated to a fixed point, so a carried pointer keeps its alignment.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..parse.ir import LOOPS, OpKind


MAX_DIVISIBILITY = 1 << 30


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple
    divisibility: tuple
    constancy: tuple
    constant: object = None   # the value, when the whole value is one known integer

    @staticmethod
    def unknown(rank):
        r = max(rank, 1)
        return AxisInfo((1,) * r, (1,) * r, (1,) * r)


def pow2_divisor(n: int) -> int:
    if n == 0:
        return MAX_DIVISIBILITY
    return min(n & -n, MAX_DIVISIBILITY)


def _dims(v):
    return max(len(v.shape), 1)


def _sizes(v):
    return v.shape or (1,)


class AxisInfoAnalysis:
    """Runs once over a kernel; `info[value]` answers for any integer or pointer value."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.info = {}
        for arg in kernel.args:
            v = arg.value
            if v.dtype.is_ptr():
                self.info[v] = AxisInfo((1,), (arg.divisibility,), (1,))
            else:
                self.info[v] = AxisInfo((1,), (arg.divisibility,), (1,), 1 if arg.equal_to_one else None)
        self._visit_region(kernel.body)

    def __getitem__(self, value) -> AxisInfo:
        return self.info.get(value) or AxisInfo.unknown(len(value.shape))

    def _visit_region(self, region):
        for op in region.ops:
            self._visit(op)

    def _visit(self, op):
        if op.name in LOOPS:
            self._loop(op)
            return
        if op.name == OpKind.IF:
            for r in op.regions:
                self._visit_region(r)
            for i, res in enumerate(op.results):
                self.info[res] = meet(*(self[r.ops[-1].operands[i]] for r in op.regions))
            return
        for r in op.regions:
            self._visit_region(r)
        rule = getattr(self, f"_op_{op.name}", None)
        if rule is not None and op.results:
            self.info[op.results[0]] = rule(op)

    def _loop(self, op):
        """Carried values: start from the initial values, meet with what the body yields until stable."""
        if op.name == OpKind.FOR:
            lo, step = self[op.operands[0]], self[op.operands[2]]
            iv = op.regions[0].args[0]
            self.info[iv] = AxisInfo((1,), (gcd(lo.divisibility[0], step.divisibility[0]),), (1,))
            inits, arg_lists = op.operands[3:], [op.regions[0].args[1:]]
        else:
            inits, arg_lists = op.operands, [r.args for r in op.regions]
        body = op.regions[-1]
        current = [self[v] for v in inits]
        for _ in range(4):
            for args in arg_lists:
                for a, info in zip(args, current):
                    self.info[a] = info
            for r in op.regions:
                self._visit_region(r)
            new = [meet(c, self[y]) for c, y in zip(current, body.ops[-1].operands)]
            if new == current:
                break
            current = new
        else:
            current = [AxisInfo.unknown(len(v.shape)) for v in inits]
            for args in arg_lists:
                for a, info in zip(args, current):
                    self.info[a] = info
            for r in op.regions:
                self._visit_region(r)
        for res, info in zip(op.results, current):
            self.info[res] = info

    # -- rules ---------------------------------------------------------------------------------------------
    def _op_constant(self, op):
        v = op.attrs["value"]
        if isinstance(v, bool) or not isinstance(v, int):
            return AxisInfo((1,), (1,), (1,))
        return AxisInfo((1,), (pow2_divisor(v),), (1,), v)

    def _op_program_id(self, op):
        return AxisInfo((1,), (1,), (1,))

    def _op_arange(self, op):
        n = op.results[0].shape[0]
        return AxisInfo((n,), (pow2_divisor(op.attrs["start"]),), (1,))

    def _op_splat(self, op):
        src = self[op.operands[0]]
        shape = op.results[0].shape
        return AxisInfo((1,) * len(shape), (src.divisibility[0],) * len(shape), tuple(shape), src.constant)

    def _op_broadcast(self, op):
        src, (s_in, s_out) = self[op.operands[0]], (op.operands[0].shape, op.results[0].shape)
        contig, div, const = [], [], []
        for d, (a, b) in enumerate(zip(s_in, s_out)):
            if a == b:
                contig.append(src.contiguity[d])
                div.append(src.divisibility[d])
                const.append(src.constancy[d])
            else:
                contig.append(1)
                div.append(src.divisibility[d])
                const.append(b)
        return AxisInfo(tuple(contig), tuple(div), tuple(const), src.constant)

    def _op_expand_dims(self, op):
        src, axis = self[op.operands[0]], op.attrs["axis"]
        if not op.operands[0].shape:
            return AxisInfo((1,), src.divisibility, (1,), src.constant)
        ins = lambda t, x: t[:axis] + (x,) + t[axis:]  # noqa: E731
        # Along the new size-1 dimension every element is its own run: what divides every element.
        every = min(1 if c > 1 else d for c, d in zip(src.contiguity, src.divisibility))
        return AxisInfo(ins(src.contiguity, 1), ins(src.divisibility, every), ins(src.constancy, 1), src.constant)

    def _op_permute(self, op):
        src, order = self[op.operands[0]], op.attrs["order"]
        return AxisInfo(tuple(src.contiguity[d] for d in order), tuple(src.divisibility[d] for d in order),
                        tuple(src.constancy[d] for d in order), src.constant)

    def _op_hint(self, op):
        src = self[op.operands[0]]
        values = tuple(op.attrs["values"])
        kind = op.attrs["kind"]
        if kind == "multiple_of":
            return AxisInfo(src.contiguity, values, src.constancy, src.constant)
        if kind == "max_contiguous":
            return AxisInfo(values, src.divisibility, src.constancy, src.constant)
        return AxisInfo(src.contiguity, src.divisibility, values, src.constant)

    def _op_cast(self, op):
        src = op.operands[0]
        if src.dtype.is_int() and op.results[0].dtype.is_int() and op.results[0].dtype.bits >= src.dtype.bits:
            return self[src]
        if src.dtype.is_ptr() or op.results[0].dtype.is_ptr():
            return self[src]
        return None

    def _op_addptr(self, op):
        ptr, off = self[op.operands[0]], self[op.operands[1]]
        size = op.results[0].dtype.element_ty.itemsize
        return self._add(ptr, off, rhs_scale=size, sizes=_sizes(op.results[0]))

    def _op_elementwise(self, op):
        fn = op.attrs["fn"]
        if fn in ("inline_asm", "map"):  # the assembly's / mapped function's values: nothing is known of them
            return None
        if not all(o.dtype.is_int() or o.dtype.is_ptr() for o in op.operands):
            return None
        infos = [self[o] for o in op.operands]
        sizes = _sizes(op.results[0])
        if fn == "add":
            return self._add(infos[0], infos[1], 1, sizes)
        if fn == "sub":
            a, b = infos
            contig = tuple(gcd(a.contiguity[d], b.constancy[d]) if b.contiguity[d] == 1 else 1 for d in range(len(sizes)))
            return AxisInfo(contig, tuple(gcd(x, y) for x, y in zip(a.divisibility, b.divisibility)),
                            tuple(gcd(x, y) for x, y in zip(a.constancy, b.constancy)), _fold(a, b, lambda x, y: x - y))
        if fn == "mul":
            a, b = infos
            contig = []
            div = []
            for d in range(len(sizes)):
                if a.constant == 1:
                    contig.append(b.contiguity[d])
                elif b.constant == 1:
                    contig.append(a.contiguity[d])
                else:
                    contig.append(1)
                da = 1 if a.contiguity[d] > 1 else a.divisibility[d]
                db = 1 if b.contiguity[d] > 1 else b.divisibility[d]
                if a.constant == 1:
                    da, db = 1, b.divisibility[d]
                elif b.constant == 1:
                    da, db = a.divisibility[d], 1
                div.append(min(da * db, MAX_DIVISIBILITY))
            return AxisInfo(tuple(contig), tuple(div), tuple(gcd(x, y) for x, y in zip(a.constancy, b.constancy)),
                            _fold(a, b, lambda x, y: x * y))
        if fn == "mod":
            a, b = infos
            contig = tuple(gcd(a.contiguity[d], b.divisibility[d]) if b.constancy[d] == sizes[d] or b.constant
                           is not None else 1 for d in range(len(sizes)))
            # a run of equal results needs a run of equal dividends and of equal divisors (a uniform dividend
            # over a varying divisor varies)
            return AxisInfo(contig, tuple(gcd(x, y) for x, y in zip(a.divisibility, b.divisibility)),
                            tuple(gcd(x, y) for x, y in zip(a.constancy, b.constancy)),
                            _fold(a, b, lambda x, y: x % y if y else None))
        if fn == "floordiv":
            a, b = infos
            const = []
            for d in range(len(sizes)):
                c = gcd(a.constancy[d], b.constancy[d])
                if b.constant and b.constant > 0 and a.divisibility[d] % b.constant == 0:
                    c = max(c, gcd(a.contiguity[d], b.constant))
                const.append(c)
            return AxisInfo((1,) * len(sizes), (1,) * len(sizes), tuple(const),
                            _fold(a, b, lambda x, y: x // y if y else None))
        if fn in ("lt", "le", "gt", "ge", "eq", "ne"):
            a, b = infos
            const = []
            for d in range(len(sizes)):
                c = gcd(a.constancy[d], b.constancy[d])
                # A contiguous run [m*k, m*k + k) against a value n*k gives one answer for the whole run under
                # `run < n*k` and `run >= n*k` (the run lies wholly on one side of n*k), not under `<=`, `>`
                # (the boundary n*k itself splits the run) or `==`, `!=`.
                if fn in _RUN_SPLITS_AT_MULTIPLE and b.constancy[d] == sizes[d] and a.contiguity[d] > 1:
                    c = max(c, gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])))
                if _MIRRORED.get(fn) in _RUN_SPLITS_AT_MULTIPLE and a.constancy[d] == sizes[d] \
                        and b.contiguity[d] > 1:
                    c = max(c, gcd(b.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])))
                const.append(c)
            return AxisInfo((1,) * len(sizes), (1,) * len(sizes), tuple(const))
        if fn in ("and", "or", "xor", "select"):
            return AxisInfo((1,) * len(sizes), (1,) * len(sizes),
                            tuple(min(i.constancy[d] for i in infos) for d in range(len(sizes))))
        if fn == "shl" and infos[1].constant is not None:
            a = infos[0]
            return AxisInfo((1,) * len(sizes), tuple(min((1 if a.contiguity[d] > 1 else a.divisibility[d])
                                                         << infos[1].constant, MAX_DIVISIBILITY)
                                                     for d in range(len(sizes))), a.constancy)
        return AxisInfo((1,) * len(sizes), (1,) * len(sizes),
                        tuple(min(i.constancy[d] for i in infos) for d in range(len(sizes))))

    def _add(self, a, b, rhs_scale, sizes):
        contig, div, const = [], [], []
        for d in range(len(sizes)):
            contig.append(max(gcd(a.contiguity[d], b.constancy[d]), gcd(a.constancy[d], b.contiguity[d])))
            div.append(gcd(a.divisibility[d], min(b.divisibility[d] * rhs_scale, MAX_DIVISIBILITY)))
            const.append(gcd(a.constancy[d], b.constancy[d]))
        folded = _fold(a, b, lambda x, y: x + y) if rhs_scale == 1 else None
        return AxisInfo(tuple(contig), tuple(div), tuple(const), folded)



# Comparisons whose answer changes only where the left side crosses a multiple of the right: `x < n` and
# `x >= n`; `_MIRRORED` turns `n > x` into `x < n` to ask the same of a contiguous right side.
_RUN_SPLITS_AT_MULTIPLE = frozenset({"lt", "ge"})
_MIRRORED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}


def meet(*infos):
    """What holds for a value that may be any of these: the weakest facts, per dimension."""
    first = infos[0]
    rank = len(first.contiguity)
    if any(len(i.contiguity) != rank for i in infos):
        return AxisInfo.unknown(rank)
    constants = {i.constant for i in infos}
    return AxisInfo(*(tuple(_gcd_all(getattr(i, f)[d] for i in infos) for d in range(rank))
                      for f in ("contiguity", "divisibility", "constancy")),
                    first.constant if len(constants) == 1 else None)


def _gcd_all(values):
    out = 0
    for v in values:
        out = gcd(out, v)
    return out


def _fold(a, b, fn):
    if a.constant is None or b.constant is None:
        return None
    try:
        return fn(a.constant, b.constant)
    except Exception:
        return None
