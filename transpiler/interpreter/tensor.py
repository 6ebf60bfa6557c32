"""The interpreter's block value: a NumPy array plus its language dtype, with Triton's Python operators.

A `Tensor` of shape `()` is a scalar (what `tl.program_id`, a full reduction or a load through a scalar
pointer give). Operators are the compiler's operator rules, evaluated (`eager.py`); methods such as
`x.to(...)` or `x.sum(...)` go through the builtin of the same name (`TENSOR_METHODS`), so they run the
same interpreter rule as `tl.cast(x, ...)` or `tl.sum(x, ...)`. Values are immutable: every operation
returns a new Tensor and never writes into an existing array (arrays may be read-only broadcast views).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from ..errors import NOT_TRITON, DTypeError, ShapeError, UnsupportedSyntaxError
from ..language import TENSOR_METHODS, TENSOR_PROPERTIES
from ..language import core
from ..numerics import storage as numeric
from .location import error


class BlockShape(tuple):
    """A block's shape: a tuple that also equals the list of the same sizes, as Triton's shape lists compare
    (`tl.static_assert(x.shape == [1, N])`); the compiler folds list literals to tuples the same way."""

    def __eq__(self, other):
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


class BlockAsScalarError(ShapeError):
    """A block used where Python needs one value (an `if` condition, `int()`): the kernel is wrong, unless the
    interpreter itself handed the block to a function the compiled path calls on scalars (a combine_fn)."""


class Tensor:
    """A block (or 0-d scalar) value of the language."""

    __slots__ = ("data", "dtype")
    # Make NumPy scalars defer to our reflected operators (`np.int32(1) + t` calls `t.__radd__`).
    __array_ufunc__ = None

    def __init__(self, data, dtype: dt.dtype):
        self.data = np.asarray(data)
        self.dtype = dtype

    @property
    def shape(self) -> tuple:
        return BlockShape(self.data.shape)

    @property
    def numel(self) -> int:
        """Triton's `x.numel`: the element count (1 for a scalar)."""
        return int(self.data.size)

    @property
    def type(self):
        """Triton's `x.type`: the element type of a scalar, a `block_type` of a block."""
        return dt.value_type(self.dtype, self.shape)

    def _with_data(self, data) -> "Tensor":
        """Same dtype (and, for pointers, same buffer), new elements: used by the shape operations."""
        return Tensor(data, self.dtype)

    # ---- methods: `x.to(...)`, `x.sum(...)` ... are the builtins of the same name --------------------------
    def __getattr__(self, name):
        if name in TENSOR_PROPERTIES:                       # `x.T` is `tl.trans(x)`
            return core.BUILTINS[TENSOR_PROPERTIES[name]](self)
        builtin_name = TENSOR_METHODS.get(name)
        if builtin_name is None or name.startswith("__"):
            raise AttributeError(f"'tensor' object has no attribute '{name}'")
        return functools.partial(core.BUILTINS[builtin_name], self)

    # ---- operators: the compiler's operator rules, evaluated (eager.py); the table is below the class ------
    __hash__ = object.__hash__

    def __pos__(self):
        return self

    # ---- indexing: the compiler's rule (only None and ':', as in Triton) ----------------------------------
    def __getitem__(self, index):
        return eager.index(self, index if isinstance(index, tuple) else (index,))

    def __iter__(self):
        raise error(UnsupportedSyntaxError, "iterating over a block", hint="use tl.range and indexing arithmetic",
                    refusal=NOT_TRITON)

    # ---- conversion of 0-d values to Python (control flow: `if x < y:`, `while`, `range(n)`) -------------
    def _scalar(self, what: str):
        if self.shape != ():
            raise error(BlockAsScalarError, f"{what} needs a scalar, but this block has shape {self.shape}",
                        hint="reduce it first (tl.max, tl.sum, ...) or use tl.where")
        return self.data.item()

    def __bool__(self):
        return bool(self._scalar("using a block as a condition"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __float__(self):
        return float(self._scalar("float()"))

    def __index__(self):
        if self.dtype.is_floating() or self.dtype.is_ptr():
            raise error(DTypeError, f"a {self.dtype!r} value cannot be used as an integer (index, range bound)")
        return int(self._scalar("an integer bound"))

    # ---- display ---------------------------------------------------------------------------------------
    def __str__(self):
        return str(self.data)

    def __repr__(self):
        return f"tensor({self.data!r}, dtype={self.dtype!r})"


# ---- turning Python values into tensors -------------------------------------------------------------------

def unwrap(value):
    """`tl.constexpr(v)` -> `v`; anything else unchanged."""
    return value.value if isinstance(value, core.constexpr) else value


class AssignedNumber(Tensor):
    """A number assigned to a name (`c = 100`): an int32 / fp32 / ... 0-d block for typing, as Triton makes it,
    that still gives its value where a constexpr is needed (`tl.arange(0, c)`), as the compiler accepts it
    (`parse.semantic.assigned_constant`). Anything computed from it is an ordinary block."""

    __slots__ = ("number",)

    def __init__(self, number):
        super().__init__(numeric.scalar_constant(number, scalar_dtype(number)), scalar_dtype(number))
        self.number = number


def is_python_number(value) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def scalar_dtype(value) -> dt.dtype:
    """How a Python (or NumPy) number is typed when it meets a block: the compiler's rule."""
    return semantic.scalar_dtype(eager.BUILDER, value)


def scalar_tensor(value, dtype: dt.dtype | None = None) -> Tensor:
    """A 0-d Tensor holding the Python number `value`, typed as Triton types literals unless `dtype` is given."""
    dtype = dtype or scalar_dtype(value)
    return Tensor(numeric.scalar_constant(value, dtype), dtype)


class _NumberMethods:
    """Block methods on a compile-time number (`SCALE.to(tl.float32)` of a constexpr), as the compiler
    offers them: the number is first the scalar Triton types it as (`tl.core.to_tensor`)."""

    __slots__ = ()

    def __getattr__(self, name):
        if name in TENSOR_METHODS and not name.startswith("__"):
            return getattr(scalar_tensor(self._number()), name)
        if name == "value":        # Triton's `constexpr.value`: a helper's constexpr argument unwrapped
            return self._number()
        raise AttributeError(f"'{type(self).__mro__[2].__name__}' object has no attribute '{name}'")


class ConstInt(_NumberMethods, int):
    def _number(self):
        return int(self)


class ConstFloat(_NumberMethods, float):
    def _number(self):
        return float(self)


def constexpr_number(value):
    """`value` with block methods when it is a Python int or float (bools and other objects as they are)."""
    if type(value) is int:
        return ConstInt(value)
    if type(value) is float:
        return ConstFloat(value)
    return value


def _binary(op, reflected):
    if reflected:
        return lambda self, other: eager.binary(op, other, self)
    return lambda self, other: eager.binary(op, self, other)


# Python's operator names -> the operator rules' (`semantic.BINARY_RULES`); each has a reflected form but the
# comparisons, which Python reflects by swapping them.
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "floordiv": "floordiv", "mod": "mod",
           "pow": "pow", "and": "and_", "or": "or_", "xor": "xor", "lshift": "lshift", "rshift": "rshift"}
for _python, _op in _BINARY.items():
    setattr(Tensor, f"__{_python}__", _binary(_op, False))
    setattr(Tensor, f"__r{_python}__", _binary(_op, True))
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Tensor, f"__{_op}__", _binary(_op, False))
Tensor.__neg__ = lambda self: eager.unary("neg", self)
Tensor.__invert__ = lambda self: eager.unary("invert", self)

core.TENSOR_CLASSES.append(Tensor)   # `isinstance(x, tl.tensor)` while interpreting

from . import eager  # noqa: E402  (imported last: it needs the Tensor class above)
from ..parse import semantic  # noqa: E402
