"""Typing rules: what each builtin and operator means for shapes and dtypes, and which IR ops it becomes.

One rule per builtin name in `RULES` (filled by `@rule`), plus the operator rules used for Python syntax. This
module holds the registry, the value helpers every rule uses (constants, casts, broadcasting, block shapes) and
the operators; the builtins' rules are in the `semantic_*` modules, by kind (creation, memory, shapes,
elementwise, hints and debugging, reductions, scans, dots, atomics, block pointers, tensor descriptors,
libdevice, the standard library).
Rules receive the `Builder` (to emit ops and report errors at the current source position) and the bound
arguments, which are IR `Value`s or plain Python constants (constexprs). Broadcasting and promotion follow
Triton's `semantic.py`, through `transpiler.dtypes`.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from .. import dtypes
from ..dtypes import Kind
from ..errors import NOT_TRITON, NOT_YET, CompileTimeError, DTypeError, ShapeError, type_error_parts
from ..numerics import operators, storage
from .ir import OpKind, Type, Value
from .records import Record

RULES: dict = {}

MAX_BLOCK_ELEMENTS = 1 << 20   # Triton's TRITON_MAX_TENSOR_NUMEL


def rule(name):
    def register(fn):
        RULES[name] = fn
        return fn
    return register


def is_const(x):
    return not isinstance(x, Value)


def assigned_constant(x):
    """The Python number a 0-d `constant` op holds (a name assigned a number, which Triton makes an int32/fp32
    scalar), or `x` itself. Contexts that need a constexpr (`tl.arange` bounds, shapes, `static_range`, an `if`
    chosen at compile time) accept such a name by its value, where Triton refuses it."""
    if (isinstance(x, Value) and not x.shape and x.owner is not None
            and getattr(x.owner, "name", None) == OpKind.CONSTANT):
        return x.owner.attrs["value"]
    return x


def const_value(b, x, what="value"):
    x = assigned_constant(x)
    if isinstance(x, Value):
        raise b.error(CompileTimeError, f"{what} must be a compile-time constant (a constexpr), "
                      f"but it is a runtime {x.type}",
                      hint="pass it as a `tl.constexpr` parameter or compute it from constexprs")
    return x


# ---------------------------------------------------------------------------------------------------------
# Values: constants, scalars to blocks, casts, broadcasting
# ---------------------------------------------------------------------------------------------------------

def constant(b, value, dt=None) -> Value:
    dt = dt or scalar_dtype(b, value)
    if dt.kind is Kind.FLOAT:
        value = float(value)
    elif dt.kind is Kind.BOOL:
        value = bool(value)
    else:
        value = int(value)
        # Wrap into the type's range the way a C cast would.
        mask = (1 << dt.bits) - 1
        value &= mask
        if dt.signed and value >> (dt.bits - 1):
            value -= 1 << dt.bits
    return b.emit(OpKind.CONSTANT, [], Type(dt), value=value)


def to_value(b, x, dt=None) -> Value:
    if isinstance(x, Value):
        return x
    if isinstance(x, (bool, numbers.Number)):
        return constant(b, x, dt)
    raise b.error(DTypeError, f"cannot use {type(x).__name__} {x!r} as a kernel value")


def splat(b, v: Value, shape) -> Value:
    shape = tuple(shape)
    if v.shape == shape:
        return v
    assert not v.shape
    return b.emit(OpKind.SPLAT, [v], Type(v.dtype, shape))


def cast(b, v, dt, bitcast=False) -> Value:
    if not isinstance(v, Value):
        v = to_value(b, v)
    if v.dtype is dt:
        return v
    if bitcast:
        if v.dtype.is_ptr() or dt.is_ptr():
            if not (v.dtype.is_ptr() and dt.is_ptr()):
                raise b.error(DTypeError, f"cannot bitcast {v.dtype!r} to {dt!r}")
        elif v.dtype.bits != dt.bits:
            raise b.error(DTypeError, f"bitcast needs equal widths, but {v.dtype!r} has {v.dtype.bits} bits and "
                          f"{dt!r} has {dt.bits}")
        return b.emit(OpKind.BITCAST, [v], v.type.with_dtype(dt))
    if v.dtype.is_ptr() and not dt.is_ptr():
        if dt not in (dtypes.int64, dtypes.uint64):
            raise b.error(DTypeError, f"a pointer can only be cast to int64 or uint64, not {dt!r}")
    if dt.is_ptr() and not v.dtype.is_ptr() and v.dtype not in (dtypes.int64, dtypes.uint64):
        raise b.error(DTypeError, f"only 64-bit integers can be cast to a pointer, not {v.dtype!r}")
    for side in (v.dtype, dt):
        if side.is_fp8() and side not in dtypes.FP8_CONVERTIBLE:
            raise b.error(DTypeError, f"converting {side!r} values (CUDA has no such type)",
                          hint="load, store or bitcast its bits (x.to(tl.uint8, bitcast=True)); tl.float8e4nv and "
                               "tl.float8e5 convert", refusal=NOT_YET)
    owner = v.owner
    if (getattr(owner, "name", None) == OpKind.CONSTANT and not v.shape and v.dtype.kind is Kind.INT
            and dt.kind in (Kind.INT, Kind.FLOAT)):
        return constant(b, owner.attrs["value"], dt)     # an integer constant converts at compile time
    return b.emit(OpKind.CAST, [v], v.type.with_dtype(dt))


def broadcast_shapes(b, s1, s2):
    """The shape two operands broadcast to (Triton's `broadcast_impl_value`, NumPy's rule): the shorter shape
    gains leading size-1 axes, then size-1 axes stretch."""
    rank = builtins.max(len(s1), len(s2))
    p1, p2 = (1,) * (rank - len(s1)) + tuple(s1), (1,) * (rank - len(s2)) + tuple(s2)
    out = []
    for a, c in zip(p1, p2):
        if a == c or c == 1:
            out.append(a)
        elif a == 1:
            out.append(c)
        else:
            raise b.error(ShapeError, f"cannot broadcast shapes {list(s1)} and {list(s2)}",
                          hint="sizes must match or be 1; add axes with x[:, None] / x[None, :]")
    return tuple(out)


def lift_rank(b, v: Value, rank: int) -> Value:
    """Add leading size-1 axes to a block until it has `rank` dimensions (scalars are left alone)."""
    while v.shape and len(v.shape) < rank:
        v = expand_dims(b, v, 0)
    return v


def broadcast_to_shape(b, v: Value, shape) -> Value:
    shape = tuple(shape)
    if v.shape == shape:
        return v
    if not v.shape:
        return splat(b, v, shape)
    if len(v.shape) != len(shape):
        raise b.error(ShapeError, f"cannot broadcast shape {list(v.shape)} to {list(shape)}")
    for a, c in zip(v.shape, shape):
        if a != c and a != 1:
            raise b.error(ShapeError, f"cannot broadcast shape {list(v.shape)} to {list(shape)}")
    return b.emit(OpKind.BROADCAST, [v], Type(v.dtype, shape))


def broadcast_pair(b, x: Value, y: Value):
    if x.shape == y.shape:
        return x, y
    if not x.shape:
        return splat(b, x, y.shape), y
    if not y.shape:
        return x, splat(b, y, x.shape)
    shape = broadcast_shapes(b, x.shape, y.shape)
    x, y = lift_rank(b, x, len(shape)), lift_rank(b, y, len(shape))
    return broadcast_to_shape(b, x, shape), broadcast_to_shape(b, y, shape)


def scalar_dtype(b, value):
    """How a Python number is typed (int32, uint32, int64, uint64 by value; float32; int1)."""
    try:
        return dtypes.python_scalar_dtype(value)
    except OverflowError:
        raise b.error(DTypeError, f"the integer {value} does not fit in 64 bits") from None
    except TypeError as e:
        raise b.error(DTypeError, **type_error_parts(e)) from None


def _dtype_of(b, x):
    return x.dtype if isinstance(x, Value) else scalar_dtype(b, x)


def _check_scalar_fits(b, value, dt):
    """A Python integer meeting a block must be representable in the computation type (Triton checks this
    too, instead of wrapping the literal)."""
    if not dt.is_int() or isinstance(value, (float, bool)) or not isinstance(value, numbers.Integral):
        return
    if value < 0 and not dt.signed:
        raise b.error(DTypeError, f"cannot combine an unsigned {dt!r} block with the negative number {value}",
                      hint="cast one of them explicitly, e.g. x.to(tl.int64)")
    lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.signed else (0, (1 << dt.bits) - 1)
    if not lo <= value <= hi:
        raise b.error(DTypeError, f"the number {value} is out of range for {dt!r}",
                      hint="cast the block to a wider type first, e.g. x.to(tl.int64)")


def binary_operands(b, x, y, div_or_mod=False, allow_ptr=False, arithmetic=True):
    """Promote and broadcast two operands; returns (x, y, computation dtype)."""
    x_scalar, y_scalar = is_const(x), is_const(y)
    xd, yd = _dtype_of(b, x), _dtype_of(b, y)
    if xd.is_ptr() or yd.is_ptr():
        if not allow_ptr:
            raise b.error(DTypeError, f"this operator is not defined on pointers ({xd!r}, {yd!r})")
        return x, y, None
    try:
        dt = dtypes.computation_type(xd, x_scalar, yd, y_scalar, div_or_mod)
    except TypeError as e:
        raise b.error(DTypeError, **type_error_parts(e)) from None
    for value, is_scalar in ((x, x_scalar), (y, y_scalar)):
        if is_scalar:
            _check_scalar_fits(b, value, dt)
    xv = cast(b, to_value(b, x, dt if x_scalar else None), dt)
    yv = cast(b, to_value(b, y, dt if y_scalar else None), dt)
    xv, yv = broadcast_pair(b, xv, yv)
    return xv, yv, dt


def elementwise(b, fn, operands, out_dtype, **attrs) -> Value:
    fp8 = next((v.dtype for v in operands if v.dtype.is_fp8()), None)
    if fp8 is not None and fn != "select":
        return fp8_elementwise(b, fn, operands, out_dtype, fp8, **attrs)
    folded = _folded(fn, operands, out_dtype, attrs)
    if folded is not None:
        return constant(b, folded, out_dtype)
    shape = operands[0].shape
    return b.emit(OpKind.ELEMENTWISE, list(operands), Type(out_dtype, shape), fn=fn, **attrs)


def fp8_elementwise(b, fn, operands, out_dtype, fp8, **attrs) -> Value:
    """What Triton compiles on fp8 operands (`dtypes.FP8_COMPUTATIONS`), built from other ops: `abs` clears
    the sign bit of the bits (any fp8 format, as Triton's lowering does), `max` / `min` compare the values
    widened to fp32 exactly and narrow the winner back (exact). Anything else is refused, as Triton fails."""
    try:
        dtypes.fp8_computable(fn, fp8)
    except TypeError as e:
        raise b.error(DTypeError, **type_error_parts(e)) from None
    if fn == "abs":
        bits = cast(b, operands[0], dtypes.uint8, bitcast=True)
        magnitude = splat(b, constant(b, 0x7F, dtypes.uint8), bits.shape)
        cleared = b.emit(OpKind.ELEMENTWISE, [bits, magnitude], bits.type, fn="and")
        return cast(b, cleared, fp8, bitcast=True)
    wide = [cast(b, v, dtypes.float32) for v in operands]
    result = b.emit(OpKind.ELEMENTWISE, wide, Type(dtypes.float32, wide[0].shape), fn=fn, **attrs)
    return cast(b, result, out_dtype)


# Scalar constants combined at compile time (`unrolled = 0` then `unrolled += i` over a static_range is one
# number in the C++): only where NumPy computes exactly what the GPU would -- wrap-around integer arithmetic,
# IEEE fp32/fp64 add, sub and mul rounded once each (as Triton's constant folding, no fma contraction),
# comparisons and bitwise operations. Division, shifts, math functions and fp16/bf16 are left to the GPU. The
# value is the interpreter's evaluation of the op (`numerics/operators.py`): an int1 `1 + 1` is 0, as on the GPU.
_FOLDABLE = frozenset({"add", "sub", "mul", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor"})


def _foldable_type(dt, fn) -> bool:
    if dt.kind is Kind.FLOAT:
        return dt.bits in (32, 64) and fn not in ("and", "or", "xor")
    return dt.kind in (Kind.BOOL, Kind.INT)


def _folded(fn, operands, out_dtype, attrs):
    """The Python value of `fn` on 0-d constant operands when NumPy gives the GPU's exact result, else None."""
    if fn not in _FOLDABLE or attrs or out_dtype.kind is Kind.FLOAT and out_dtype.bits not in (32, 64):
        return None
    arrays = []
    for v in operands:
        owner = v.owner
        if v.shape or getattr(owner, "name", None) != OpKind.CONSTANT:      # the common case, checked first
            return None
        if not _foldable_type(v.dtype, fn):
            return None
        arrays.append(storage.scalar_constant(owner.attrs["value"], v.dtype))
    with np.errstate(all="ignore"):
        return operators.ELEMENTWISE[fn](out_dtype, operands[-1].dtype, {}, *arrays).item()


# ---------------------------------------------------------------------------------------------------------
# Python operators
# ---------------------------------------------------------------------------------------------------------

ARITH = {"add", "sub", "mul"}


def no_record_operand(b, *operands):
    """Operators take IR values and numbers; a record (a block pointer) is neither."""
    for x in operands:
        if isinstance(x, Record):
            raise b.error(DTypeError, f"operators do not apply to a {x.KIND}", hint=x.HINT)


def binary_op(b, op, x, y):
    """Apply a Python binary operator (`add`, `truediv`, `lshift`, ...) to two operands."""
    no_record_operand(b, x, y)
    if is_const(x) and is_const(y):
        return python_binary(b, op, x, y)
    result = BINARY_RULES[op](b, x, y)
    if op in ARITH and b.options.debug:
        check_int32_overflow(b, result)
    return result


_SYMBOL = {"add": "+", "sub": "-", "mul": "*"}


def check_int32_overflow(b, result):
    """Debug mode, as Triton's: an int32 `+`, `-` or `*` is recomputed in int64 and asserted to fit int32
    (index arithmetic that wraps is the usual cause of an out-of-bounds access)."""
    if not isinstance(result, Value) or result.dtype is not dtypes.int32:
        return
    op = result.owner
    fn = op.attrs.get("fn") if getattr(op, "name", None) == OpKind.ELEMENTWISE else None
    if fn not in _SYMBOL:
        return      # folded away (x * 1 is x): nothing was computed that could overflow
    wide = [cast(b, v, dtypes.int64) for v in op.operands]
    r64 = elementwise(b, fn, wide, dtypes.int64)
    lo, hi = (splat(b, constant(b, bound, dtypes.int64), r64.shape) for bound in (-2**31, 2**31 - 1))
    fits = logical(b, "and", elementwise(b, "ge", [r64, lo], dtypes.int1),
                   elementwise(b, "le", [r64, hi], dtypes.int1))
    RULES["device_assert"](b, fits, f"int32 overflow in {_SYMBOL[fn]}")


def python_binary(b, op, x, y):
    import operator
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
          "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "lshift": operator.lshift,
          "rshift": operator.rshift, "and_": operator.and_, "or_": operator.or_, "xor": operator.xor,
          "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
          "ne": operator.ne, "matmul": operator.matmul}[op]
    try:
        return fn(x, y)
    except Exception as e:
        raise b.error(CompileTimeError, f"constant expression failed: {e}") from None


def _add(b, x, y):
    xd, yd = _dtype_of(b, x), _dtype_of(b, y)
    if xd.is_ptr() and yd.is_ptr():
        raise b.error(DTypeError, "cannot add two pointers")
    if yd.is_ptr():
        x, y, xd, yd = y, x, yd, xd
    if xd.is_ptr():
        return pointer_offset(b, x, y, negate=False)
    x, y, dt = binary_operands(b, x, y)
    return elementwise(b, "add", [x, y], dt)


def _sub(b, x, y):
    xd, yd = _dtype_of(b, x), _dtype_of(b, y)
    if xd.is_ptr():
        if yd.is_ptr():
            raise b.error(DTypeError, f"invalid operands of type {xd!r} and {yd!r}: two pointers cannot be "
                          "subtracted")
        return pointer_offset(b, x, y, negate=True)
    if yd.is_ptr():
        raise b.error(DTypeError, "cannot subtract a pointer from a number")
    x, y, dt = binary_operands(b, x, y)
    return elementwise(b, "sub", [x, y], dt)


def pointer_offset(b, ptr, offset, negate):
    od = _dtype_of(b, offset)
    if not od.is_int():
        raise b.error(DTypeError, f"pointer arithmetic needs an integer offset, not {od!r}",
                      hint="convert the offset with .to(tl.int32) or .to(tl.int64)")
    ptr = to_value(b, ptr)
    offset = to_value(b, offset)
    if od.kind is Kind.BOOL:
        offset = cast(b, offset, dtypes.int32)
    if negate:
        offset = unary_op(b, "neg", offset)
    ptr, offset = broadcast_pair(b, ptr, offset)
    return b.emit(OpKind.ADDPTR, [ptr, offset], ptr.type)


def is_integer_one(v) -> bool:
    """Whether `v` is the integer constant 1 (splat or broadcast to a block or not)."""
    owner = getattr(v, "owner", None)
    while getattr(owner, "name", None) in (OpKind.SPLAT, OpKind.BROADCAST):
        owner = getattr(owner.operands[0], "owner", None)
    return getattr(owner, "name", None) == OpKind.CONSTANT and v.dtype.is_int() and owner.attrs.get("value") == 1


def _arith(fn):
    def apply(b, x, y):
        x, y, dt = binary_operands(b, x, y)
        if fn == "mul" and dt.is_int():
            # An integer argument equal to 1 is specialized into the constant 1 (Triton's rule): multiplying
            # by it (a unit stride) is the other operand, so the access stays contiguous and vectorizes.
            if is_integer_one(y):
                return x
            if is_integer_one(x):
                return y
        return elementwise(b, fn, [x, y], dt)
    return apply


def _truediv(b, x, y, fn="truediv"):
    """`x / y` (Triton's rounding: div.full on fp32) or, with fn="div_rn", IEEE division; integers divide
    as fp32."""
    x, y, dt = binary_operands(b, x, y, div_or_mod=True)
    if dt.kind is not Kind.FLOAT:
        dt = dtypes.float32
        x, y = cast(b, x, dt), cast(b, y, dt)
    return elementwise(b, fn, [x, y], dt)


def _floordiv(b, x, y):
    x, y, dt = binary_operands(b, x, y, div_or_mod=True)
    if dt.kind is Kind.FLOAT:
        raise b.error(DTypeError, f"// is only defined on integers here, not {dt!r}",
                      hint="use tl.floor(x / y) for floats")
    return elementwise(b, "floordiv", [x, y], dt)


def _mod(b, x, y):
    x, y, dt = binary_operands(b, x, y, div_or_mod=True)
    return elementwise(b, "mod", [x, y], dt)


def _require_int_operands(b, x, y):
    xd, yd = _dtype_of(b, x), _dtype_of(b, y)
    for d in (xd, yd):
        if not d.is_int():
            # Triton's words ("invalid operands of type"), which tests written for Triton look for.
            raise b.error(DTypeError, f"invalid operands of type {xd!r} and {yd!r}: a bitwise operator needs "
                                      f"integer operands, not {d!r}",
                          hint="convert with .to(tl.int32), reinterpret bits with .to(tl.int32, "
                               "bitcast=True), or use comparisons and tl.where on floats")


def _bitwise(fn):
    def apply(b, x, y):
        _require_int_operands(b, x, y)
        x, y, dt = binary_operands(b, x, y)
        return elementwise(b, fn, [x, y], dt)
    return apply


def _shift_right(b, x, y):
    """`>>` as Triton's `tensor.__rshift__` / `__rrshift__`: sign-filling when the block operand (the left one,
    or the right one under a Python number) is signed, whatever type the two promote to. An int8 block shifted
    by a uint32 one is computed in uint32 and still fills with its sign ("ashr")."""
    _require_int_operands(b, x, y)
    signed = _dtype_of(b, x if isinstance(x, Value) else y).is_int_signed()
    x, y, dt = binary_operands(b, x, y)
    return elementwise(b, "ashr" if signed and not dt.signed else "shr", [x, y], dt)


def _compare(fn):
    def apply(b, x, y):
        xd, yd = _dtype_of(b, x), _dtype_of(b, y)
        if xd.is_ptr() or yd.is_ptr():
            xv, yv = broadcast_pair(b, to_value(b, x), to_value(b, y))
            return elementwise(b, fn, [xv, yv], dtypes.int1)
        x, y, _ = binary_operands(b, x, y)
        return elementwise(b, fn, [x, y], dtypes.int1)
    return apply


def _pow(b, x, y):
    raise b.error(DTypeError, "** of runtime values (it works between constexprs only)",
                  hint="use tl.exp2 / tl.exp and tl.log", refusal=NOT_TRITON)


def _matmul(b, x, y):
    return RULES["dot"](b, x, y)


BINARY_RULES = {
    "add": _add, "sub": _sub, "mul": _arith("mul"), "truediv": _truediv, "floordiv": _floordiv, "mod": _mod,
    "pow": _pow, "matmul": _matmul,
    "lshift": _bitwise("shl"), "rshift": _shift_right, "and_": _bitwise("and"), "or_": _bitwise("or"),
    "xor": _bitwise("xor"),
    "lt": _compare("lt"), "le": _compare("le"), "gt": _compare("gt"), "ge": _compare("ge"),
    "eq": _compare("eq"), "ne": _compare("ne"),
}


def unary_op(b, op, x):
    no_record_operand(b, x)
    if is_const(x):
        import operator
        return {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
                "not": operator.not_}[op](x)
    if op == "pos":
        return x
    if op == "neg":
        if x.dtype.is_ptr():
            raise b.error(DTypeError, "cannot negate a pointer")
        return elementwise(b, "neg", [x], x.dtype)
    if op == "invert":
        if not x.dtype.is_int():
            raise b.error(DTypeError, f"~ needs an integer operand, not {x.dtype!r}")
        return elementwise(b, "invert", [x], x.dtype)
    if op == "not":
        return elementwise(b, "eq", [x, splat(b, constant(b, 0, x.dtype), x.shape)], dtypes.int1)
    raise AssertionError(op)


def to_bool(b, x):
    """A condition as int1 (`x != 0`)."""
    if x.dtype is dtypes.int1:
        return x
    return elementwise(b, "ne", [x, splat(b, constant(b, 0, x.dtype), x.shape)], dtypes.int1)


def logical(b, op, x, y):
    x, y = to_value(b, x), to_value(b, y)
    x, y = broadcast_pair(b, to_bool(b, x), to_bool(b, y))
    return elementwise(b, op, [x, y], dtypes.int1)


# ---------------------------------------------------------------------------------------------------------
# Block shapes (also used by the rules of the semantic_* modules)
# ---------------------------------------------------------------------------------------------------------

def check_block_shape(b, shape):
    n = 1
    for s in shape:
        if not isinstance(s, int) or s <= 0 or s & (s - 1):
            raise b.error(CompileTimeError, f"block dimensions must be powers of two, but the shape is {list(shape)}",
                          hint="round up with transpiler.next_power_of_2 and mask the tail")
        n *= s
    if n > MAX_BLOCK_ELEMENTS:
        raise b.error(CompileTimeError, f"a block may hold at most {MAX_BLOCK_ELEMENTS} elements, "
                      f"but {list(shape)} holds {n}",
                      hint="use smaller blocks and loop over the rest (for k in range(0, n, BLOCK): ...)")



def expand_dims(b, v, axis):
    rank = len(v.shape) + 1
    if not -rank <= axis < rank:
        raise b.error(ShapeError, f"expand_dims axis {axis} is out of range for a result of rank {rank}")
    axis %= rank
    shape = v.shape[:axis] + (1,) + v.shape[axis:]
    return b.emit(OpKind.EXPAND_DIMS, [v], Type(v.dtype, shape), axis=axis)
