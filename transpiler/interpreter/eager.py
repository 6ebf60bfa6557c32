"""The one semantics, run eagerly: the interpreter hands a builtin call or an operator to the compiler's typing
rule (`parse/semantic*.py`), with a builder whose every op is evaluated on NumPy as it is made.

This is Triton's interpreter design: one `semantic.py` written against a builder, and an interpreter builder that
executes each op at once while the kernel runs as Python (so `print` and `pdb` work in it). The typing, the
broadcasting, the promotion, the constant folding and every refusal are the compiler's, with their messages; the
interpreter only supplies the arithmetic (`evaluate.py`).

At the call's boundary the interpreter's values (`Tensor`, `Pointer`, a number assigned to a name) become
`Evaluated` IR values holding their arrays, and the rule's result becomes a `Tensor` again (a `Pointer` where it
is one): the ops a rule made live only for the call, so a long loop keeps no chain of them. A number assigned to
a name enters as the constant op it is in the compiled kernel, so the rules fold and accept it the same way.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import TranspilerError
from ..options import DEFAULT as DEFAULT_OPTIONS
from ..parse import semantic, semantic_shapes, typing_rules  # noqa: F401  (every typing rule registered)
from ..language import core
from ..parse.ir import OpKind, Type, Value
from ..parse.records import Record, record_rule
from ..parse.semantic_tensor_desc import TensorDescriptor
from . import pointers      # a module reference: pointers.py imports tensor.py, which imports this module
from .evaluate import EVALUATE
from .evaluate_atomics import EVALUATE_ATOMICS
from .evaluate_blocks import EVALUATE_BLOCKS, EVALUATE_MULTI, Combine
from .location import attach_location, error
from .records import DescriptorValue, RecordValue
from .tensor import AssignedNumber, ConstFloat, ConstInt, Tensor

_EVALUATE = {**EVALUATE, **EVALUATE_BLOCKS, **EVALUATE_ATOMICS}


class Evaluated(Value):
    """An IR value whose elements are known: `data` (the interpreter's storage array), and for a pointer block
    the `buffer` its int64 element offsets point into."""

    __slots__ = ("data", "buffer")

    def __init__(self, type: Type, data, buffer=None):
        self.type, self.name, self.id, self.owner = type, None, 0, None
        self.data, self.buffer = data, buffer


class Made:
    """What the rules read of the op that made a value (its kind, operands and attributes: a constant folds, a
    multiplication by the constant 1 is dropped), without the cost of an `Op`."""

    __slots__ = ("name", "operands", "attrs")

    def __init__(self, name, operands, attrs):
        self.name, self.operands, self.attrs = name, operands, attrs


class EagerBuilder:
    """The builder the typing rules run against while interpreting: `emit` evaluates the op it is given."""

    options = DEFAULT_OPTIONS        # the interpreter runs kernels as compiled without debug asserts

    def __init__(self):
        self.constants = {}          # (type, repr of the number) -> its Evaluated: literals recur in every program

    def emit(self, name, operands, result_type, regions=(), **attrs):
        kind = name                  # `name` as the compiler's builder calls it (an op attribute may be `kind`)
        if kind is OpKind.CONSTANT:
            key = (result_type, repr(attrs["value"]))      # repr tells -0.0 from 0.0
            made = self.constants.get(key)
            if made is None:
                if len(self.constants) > 4096:       # numbers that vary (a Python loop's counter) do not pile up
                    self.constants.clear()
                made = self.constants[key] = self._evaluated(kind, operands, result_type, attrs)
            return made
        return self._evaluated(kind, operands, result_type, attrs)

    def _evaluated(self, kind, operands, result_type, attrs):
        evaluate = _EVALUATE.get(kind)
        if evaluate is None:
            raise AssertionError(f"no evaluation of IR op kind '{kind}' in the interpreter (interpreter/evaluate.py)")
        data, buffer = evaluate(attrs, result_type, operands)
        if result_type is None:          # a store
            return None
        result = Evaluated(result_type, data, buffer)
        result.owner = Made(kind, operands, attrs)
        return result

    def emit_multi(self, name, operands, result_types, regions=(), **attrs):
        arrays = EVALUATE_MULTI[name](attrs, result_types, operands, regions)
        made = Made(name, operands, attrs)
        results = [Evaluated(t, data) for t, data in zip(result_types, arrays)]
        for r in results:
            r.owner = made
        return MadeOp(results)

    def inline_into_region(self, fn, region, what, cast_to):
        """A combine function is not built but kept, to be called on slices when its op is evaluated."""
        region.combine = Combine(fn, cast_to, what)

    def error(self, cls, message, hint=None, refusal=None):
        return error(cls, message, hint=hint, refusal=refusal)


class MadeOp:
    """What `emit_multi` gives the rules: the op's results."""

    __slots__ = ("results",)

    def __init__(self, results):
        self.results = results


BUILDER = EagerBuilder()


_TYPES: dict = {}


def _type_of(dtype, shape) -> Type:
    """The IR type of a value (one object per dtype and shape: a frozen dataclass is slow to make)."""
    key = (dtype, shape)
    t = _TYPES.get(key)
    if t is None:
        t = _TYPES[key] = Type(dtype, shape)
    return t


_AS_IS = frozenset({str, bool, int, float, type(None)})     # the usual keyword arguments: nothing to convert


def to_ir(x):
    """An interpreter value as the typing rules see it (an `Evaluated`, a plain number, or as it is)."""
    cls = type(x)
    if cls is Tensor:
        return Evaluated(_type_of(x.dtype, x.data.shape), x.data)
    if cls in _AS_IS:
        return x
    if cls is pointers.Pointer:
        return Evaluated(_type_of(x.dtype, x.data.shape), x.data, x.buffer)
    if cls is AssignedNumber:
        value = Evaluated(_type_of(x.dtype, ()), x.data)
        value.owner = Made(OpKind.CONSTANT, [], {"value": x.number})
        return value
    if cls is core.constexpr:
        return to_ir(x.value)
    if cls is ConstInt or cls is ConstFloat:
        return x._number()
    if cls is list or cls is tuple:
        return cls(to_ir(item) for item in x) if x else x
    if cls is RecordValue or cls is DescriptorValue:
        return x.record.with_leaves([to_ir(leaf) for leaf in x.record.leaves()])
    if isinstance(x, Tensor):
        raise AssertionError(f"no IR value for the interpreter's {cls.__name__}")
    return x


def from_ir(x):
    """A rule's result as the interpreter's value."""
    if type(x) is Evaluated:
        data, shape = x.data, x.type.shape
        if data.shape != shape:          # a splat or broadcast left as it was (evaluate.py)
            data = np.broadcast_to(data, shape)
        if x.buffer is not None:
            return pointers.Pointer(data, x.buffer, x.type.dtype)
        return Tensor(data, x.type.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(from_ir(item) for item in x)
    if isinstance(x, Record):
        held = DescriptorValue if isinstance(x, TensorDescriptor) else RecordValue
        return held(x.with_leaves([from_ir(leaf) for leaf in x.leaves()]))
    return x


def _located(fn):
    """`fn` with a rule's error given the current kernel line (the rules raise without one)."""
    @functools.wraps(fn)
    def located(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TranspilerError as err:
            raise attach_location(err)
    return located


@_located
def apply_rule(name, *args, **kwargs):
    """Builtin `name` on interpreter values through its typing rule (a record's own, for a block pointer or a
    tensor descriptor as the first argument), evaluated."""
    args = [to_ir(a) for a in args]
    rule = semantic.RULES[name]
    if args and isinstance(args[0], Record):
        rule = record_rule(BUILDER, name, args[0])
    return from_ir(rule(BUILDER, *args, **{k: to_ir(v) for k, v in kwargs.items()}))


@_located
def index(x, items):
    """`x[items]` (Python's subscript of a block or a pointer block)."""
    return from_ir(semantic_shapes.index(BUILDER, to_ir(x), [to_ir(item) for item in items]))


@_located
def binary(op, x, y):
    """A Python binary operator (`add`, `lt`, `rshift`, ... as `semantic.BINARY_RULES` names them)."""
    return from_ir(semantic.binary_op(BUILDER, op, to_ir(x), to_ir(y)))


@_located
def unary(op, x):
    """A Python unary operator (`neg`, `invert`, `pos`)."""
    return from_ir(semantic.unary_op(BUILDER, op, to_ir(x)))
