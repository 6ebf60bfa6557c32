"""Interpreter rules for the non-numeric builtins: program ids, block construction, memory access, shape
manipulation, iteration, compiler hints and debugging.

One function per builtin, registered by builtin name, with the builtin's exact signature (a test checks
this). Elementwise math and casts are the compiler's rules (`shared_rules.py`), reductions in
`reductions.py`, `tl.dot` in `dot.py`.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dtypes as dt
from ..errors import CompileTimeError, DTypeError, InterpreterError, ShapeError
from ..language import core
from . import block_pointers, numeric, pointers
from .location import error, program_text
from .registry import rule
from .shapes import (broadcast_pair, fit_to_shape, normalize_axis, shape_argument, validate_block_shape)
from .tensor import Tensor, constexpr_value, is_python_number, to_tensor, unwrap

# ---- argument helpers -------------------------------------------------------------------------------------


def _constexpr_int(value, what: str) -> int:
    value = constexpr_value(value)
    if isinstance(value, Tensor):
        raise error(CompileTimeError, f"{what} must be a constexpr integer, but got a runtime {value.dtype!r} value",
                    hint="pass it as a parameter annotated tl.constexpr")
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise error(CompileTimeError, f"{what} must be a constexpr integer, got {value!r}")
    return int(value)


def _dtype_argument(value, what: str, allow_pointer: bool = False) -> dt.dtype:
    value = unwrap(value)
    if isinstance(value, dt.block_type):   # `x.to(p.dtype.element_ty)` of a block pointer `p`, as in Triton
        value = value.scalar
    if not isinstance(value, dt.dtype) or value is dt.void or (value.is_ptr() and not allow_pointer):
        raise error(DTypeError, f"{what} needs an element type such as tl.float32, got {value!r}")
    return value


def _interpreter():
    return core.current_interpreter()


# ---- program ----------------------------------------------------------------------------------------------


def _grid_axis(axis, what: str) -> int:
    axis = _constexpr_int(axis, f"the axis of {what}")
    if axis not in (0, 1, 2):
        raise error(CompileTimeError, f"{what.removeprefix('tl.')} axis must be 0, 1, or 2 but got {axis}")
    return axis


@rule("program_id")
def program_id(axis=0):
    return Tensor(np.int32(_interpreter().program_id[_grid_axis(axis, "tl.program_id")]), dt.int32)


@rule("num_programs")
def num_programs(axis=0):
    return Tensor(np.int32(_interpreter().grid[_grid_axis(axis, "tl.num_programs")]), dt.int32)


# ---- block construction -----------------------------------------------------------------------------------


@rule("arange")
def arange(start, end):
    start = _constexpr_int(start, "the start of tl.arange")
    end = _constexpr_int(end, "the end of tl.arange")
    length = end - start
    if length <= 0 or length & (length - 1):
        raise error(CompileTimeError, f"tl.arange({start}, {end}): the length end - start = {length} must be a "
                    "positive power of two")
    lo, hi = numeric.int_range(dt.int32)
    if start < lo or end - 1 > hi:
        raise error(CompileTimeError, f"tl.arange({start}, {end}) does not fit in int32")
    validate_block_shape((length,), "tl.arange")
    return Tensor(np.arange(start, end, dtype=np.int32), dt.int32)


def _fill_value(value, dtype: dt.dtype, what: str) -> np.ndarray:
    """`value` (a number or a one-element block) as a 0-d array of `dtype` storage."""
    value = unwrap(value)
    if isinstance(value, Tensor):
        if value.data.size != 1 or value.dtype.is_ptr():
            raise error(ShapeError, f"{what}: the fill value must be a scalar, got a block of shape {value.shape}")
        return numeric.cast(value.data.reshape(()), value.dtype, dtype)
    if is_python_number(value):
        return numeric.scalar_constant(value, dtype)
    raise error(DTypeError, f"{what}: the fill value must be a number or a scalar, got {value!r}")


@rule("full")
def full(shape, value, dtype):
    shape = validate_block_shape(shape_argument(shape, "tl.full"), "tl.full")
    dtype = _dtype_argument(dtype, "tl.full")
    fill = _fill_value(value, dtype, "tl.full")
    return Tensor(np.full(shape, fill, dtype=numeric.storage_dtype(dtype)), dtype)


@rule("zeros")
def zeros(shape, dtype):
    return full(shape, 0, dtype)


@rule("zeros_like")
def zeros_like(input):
    x = to_tensor(input, "the input of tl.zeros_like")
    return full(x.shape, 0, x.dtype)


@rule("full_like")
def full_like(input, value, dtype=None):
    x = to_tensor(input, "the input of tl.full_like")
    return full(x.shape, value, x.dtype if unwrap(dtype) is None else dtype)


@rule("to_tensor")
def to_tensor_(x):
    return to_tensor(x, "the input of tl.core.to_tensor")


# ---- memory -----------------------------------------------------------------------------------------------


def _no_block_pointer_options(boundary_check, padding_option, what: str):
    if unwrap(boundary_check) or unwrap(padding_option):
        raise error(CompileTimeError, f"{what}: boundary_check and padding_option apply to block pointers "
                    "(tl.make_block_ptr) only", hint="mask a block of pointers with mask= (and other=)")


@rule("load")
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    if isinstance(unwrap(pointer), block_pointers.BlockPointer):
        return block_pointers.load(unwrap(pointer), mask, other, boundary_check, padding_option)
    _no_block_pointer_options(boundary_check, padding_option, "tl.load")
    return pointers.load(pointer, mask, other)


@rule("store")
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    if isinstance(unwrap(pointer), block_pointers.BlockPointer):
        return block_pointers.store(unwrap(pointer), value, mask, boundary_check)
    _no_block_pointer_options(boundary_check, (), "tl.store")
    pointers.store(pointer, value, mask)


# ---- shape manipulation -----------------------------------------------------------------------------------


@rule("broadcast_to")
def broadcast_to(input, *shape):
    x = to_tensor(input, "the input of tl.broadcast_to")
    shape = validate_block_shape(shape_argument(shape, "tl.broadcast_to"), "tl.broadcast_to")
    return fit_to_shape(x, shape, "the input of tl.broadcast_to")


@rule("broadcast")
def broadcast(input, other):
    return broadcast_pair(to_tensor(input, "the input of tl.broadcast"), to_tensor(other, "the input of tl.broadcast"))


@rule("expand_dims")
def expand_dims(input, axis):
    x = to_tensor(input, "the input of tl.expand_dims")
    axes = unwrap(axis)
    axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    rank = len(x.shape) + len(axes)
    normalized = [normalize_axis(a, rank, "tl.expand_dims") for a in axes]
    if len(set(normalized)) != len(normalized):
        raise error(ShapeError, f"tl.expand_dims: repeated axis in {axes}")
    return x._with_data(np.expand_dims(x.data, tuple(sorted(normalized))))


def _reshape(input, shape, what: str):
    x = to_tensor(input, f"the input of {what}")
    shape = validate_block_shape(shape_argument(shape, what), what)
    if math.prod(shape) != x.data.size:
        raise error(ShapeError, f"{what}: cannot reshape a block of shape {x.shape} ({x.data.size} elements) "
                    f"to shape {shape} ({math.prod(shape)} elements)")
    return x._with_data(x.data.reshape(shape))  # row-major order


@rule("reshape")
def reshape(input, *shape, can_reorder=False):
    return _reshape(input, shape, "tl.reshape")


@rule("view")
def view(input, *shape):
    return _reshape(input, shape, "tl.view")


def _permute(input, dims, what: str):
    x = to_tensor(input, f"the input of {what}")
    dims = shape_argument(dims, what) if dims else ()
    if sorted(dims) != list(builtins.range(len(x.shape))):
        raise error(ShapeError, f"{what}: {dims} is not a permutation of the {len(x.shape)} axes of a block of "
                    f"shape {x.shape}")
    return x._with_data(np.transpose(x.data, dims))


@rule("trans")
def trans(input, *dims):
    # Without dims Triton transposes a 2-D block.
    return _permute(input, dims or (1, 0), "tl.trans")


@rule("permute")
def permute(input, *dims):
    return _permute(input, dims, "tl.permute")


# ---- iteration --------------------------------------------------------------------------------------------


def _loop_bound(value, what: str, runtime_ok: bool) -> int:
    value = unwrap(value)
    if isinstance(value, Tensor):
        if not runtime_ok:
            raise error(CompileTimeError, f"{what} bounds must be constexpr, got a runtime {value.dtype!r} value",
                        hint="use tl.range for runtime bounds")
        return value.__index__()
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise error(DTypeError, f"{what} bounds must be integers, got {value!r}")


def _python_range(what: str, arg1, arg2, step, runtime_ok: bool) -> range:
    start, end = (0, arg1) if unwrap(arg2) is None else (arg1, arg2)
    step = 1 if unwrap(step) is None else step
    start, end, step = (_loop_bound(v, what, runtime_ok) for v in (start, end, step))
    if step == 0:
        raise error(CompileTimeError, f"{what}: step must not be zero")
    return builtins.range(start, end, step)


@rule("range")
def range_(arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, disallow_acc_multi_buffer=False,
           flatten=False, warp_specialize=False):
    return _python_range("tl.range", arg1, arg2, step, runtime_ok=True)


@rule("static_range")
def static_range(arg1, arg2=None, step=None):
    return _python_range("tl.static_range", arg1, arg2, step, runtime_ok=False)


# ---- compiler hints: no effect on values -------------------------------------------------------------------


@rule("multiple_of")
def multiple_of(input, values):
    return input


@rule("max_contiguous")
def max_contiguous(input, values):
    return input


@rule("max_constancy")
def max_constancy(input, values):
    return input


@rule("assume")
def assume(cond):
    return None


# ---- debugging --------------------------------------------------------------------------------------------


@rule("static_assert")
def static_assert(cond, msg=""):
    cond = unwrap(cond)
    if isinstance(cond, Tensor):
        raise error(CompileTimeError, "tl.static_assert needs a constexpr condition, got a runtime block value",
                    hint="use tl.device_assert for runtime checks")
    if not cond:
        message = unwrap(msg)
        raise error(CompileTimeError, f"static_assert failed: {message}" if message else "static_assert failed")


@rule("static_print")
def static_print(*values, sep=" ", end="\n"):
    # The compiled path prints once, while compiling: print in the first program only.
    if _interpreter().program_id == (0, 0, 0):
        print(*(unwrap(v) for v in values), sep=sep, end=end)


def _format_value(value, as_hex: bool) -> str:
    value = unwrap(value)
    if not isinstance(value, Tensor):
        return str(value)
    if as_hex and value.dtype.is_int():
        bits = numeric.to_bits(value.data, value.dtype)
        return np.array2string(bits, formatter={"int": lambda v: f"0x{int(v):x}"})
    return str(value)


@rule("device_print")
def device_print(prefix, *args, hex=False):
    x, y, z = _interpreter().program_id
    head = f"pid ({x}, {y}, {z})"
    prefix = str(unwrap(prefix)).strip()
    for value in args or ("",):
        print(" ".join(part for part in (head, prefix, _format_value(value, unwrap(hex))) if part))


@rule("device_assert")
def device_assert(cond, msg="", mask=None):
    cond, mask = unwrap(cond), unwrap(mask)
    ok = cond.data != 0 if isinstance(cond, Tensor) else np.asarray(bool(cond))
    if mask is not None:             # elements outside the mask are not checked
        checked = mask.data != 0 if isinstance(mask, Tensor) else np.asarray(bool(mask))
        ok = ok | ~checked
    if ok.all():
        return
    lanes = [tuple(int(i) for i in lane) for lane in np.argwhere(~ok)[:5]] if ok.shape else []
    where = f" at lanes {lanes}" if lanes else ""
    raise error(InterpreterError, f"device_assert failed{program_text()}{where}: {unwrap(msg)}")


@rule("debug_barrier")
def debug_barrier():
    return None  # programs run one at a time, so every barrier is already satisfied

