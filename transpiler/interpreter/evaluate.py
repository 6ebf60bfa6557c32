"""The interpreter's evaluation of IR ops: what each op the typing rules make computes, on NumPy arrays.

`EVALUATE[kind](attrs, result_type, operands)` gives the result's array (and, for a pointer, its buffer) of one
op of `kind` (`parse/ir.py` `OpKind`) whose operands are `eager.Evaluated` values. The op was made, checked and
typed by the one semantics (`parse/semantic*.py`), so nothing here checks types or broadcasts: it only computes
with the GPU's arithmetic, the elementwise functions' of `numerics/operators.py` (with which the compiler folds
constants too) and libdevice's of `numerics/libdevice.py`. An elementwise `fn` neither has is refused as not
supported yet, never guessed.
"""
from __future__ import annotations

import numpy as np

from ..errors import NOT_YET, DTypeError, InterpreterError, UnsupportedSyntaxError
from ..language import core
from ..numerics import libdevice, operators, storage as numeric
from ..parse.ir import OpKind
from .location import error


def _inline_asm(out, dtype, attrs, *operands):
    raise error(UnsupportedSyntaxError, "tl.inline_asm_elementwise runs PTX, which the interpreter cannot (Triton's "
                "interpreter cannot either)", hint="compile the kernel (launch it on a GPU, or kernel.cuda_source)",
                refusal=NOT_YET)


ELEMENTWISE = {**operators.ELEMENTWISE, "inline_asm": _inline_asm}


def _same_buffer(a, b, what):
    if a.buffer is not b.buffer:
        raise error(InterpreterError, f"{what}: the interpreter cannot combine pointers into two different arrays "
                    f"('{a.buffer.name}' and '{b.buffer.name}') in one block", refusal=NOT_YET)
    return a.buffer


def _elementwise(attrs, result_type, operands):
    fn = attrs["fn"]
    rule = ELEMENTWISE.get(fn)
    if rule is not None:
        return rule(result_type.dtype, operands[-1].dtype, attrs, *(v.data for v in operands)), None
    if fn == "select":
        cond, a, b = operands
        chosen = np.where(cond.data, a.data, b.data)
        return chosen, (_same_buffer(a, b, "tl.where") if a.buffer is not None else None)
    if fn.startswith("libdevice."):
        return libdevice.evaluate(fn[len("libdevice."):], result_type.dtype, [v.data for v in operands]), None
    raise error(UnsupportedSyntaxError, f"the interpreter cannot evaluate the elementwise '{fn}' yet",
                refusal=NOT_YET)


# ---- values, shapes, casts, pointers ----------------------------------------------------------------------

def _cast(attrs, result_type, operands):
    (v,) = operands
    src, dst = v.dtype, result_type.dtype
    if src.is_ptr() or dst.is_ptr():
        if src.is_ptr() and dst.is_ptr() and v.buffer is not None:
            return _reinterpret(v, dst.element_ty)
        raise error(DTypeError, f"the interpreter cannot convert {src!r} to {dst!r}", refusal=NOT_YET)
    return numeric.cast(v.data, src, dst, attrs.get("rounding")), None


def _bitcast(attrs, result_type, operands):
    (v,) = operands
    if v.dtype.is_ptr():
        return _cast(attrs, result_type, operands)
    return numeric.from_bits(numeric.to_bits(v.data, v.dtype), result_type.dtype), None


def _reinterpret(v, element_ty):
    """A pointer cast: the same addresses read as another element type, as Triton's pointer bitcast; offsets
    rescale by the widths and must land on whole elements of the new type."""
    buffer = v.buffer
    if element_ty is buffer.element_ty:
        return v.data, buffer
    for t in (buffer.element_ty, element_ty):
        if t.numpy is None or buffer.values.dtype != buffer.element_ty.numpy:
            raise error(DTypeError, f"a pointer cast from {v.dtype!r} to pointer<{element_ty!r}> in the interpreter "
                        "(bf16 and fp8 elements are held as float32 copies)", refusal=NOT_YET)
    old, new = buffer.element_ty.numpy.itemsize, element_ty.numpy.itemsize
    byte_offsets = v.data * old
    if np.any(byte_offsets % new):
        raise error(InterpreterError, f"a pointer cast to pointer<{element_ty!r}> of addresses that are not "
                    f"multiples of its {new}-byte elements, in the interpreter", refusal=NOT_YET)
    return byte_offsets // new, buffer.viewed_as(element_ty)


def _addptr(attrs, result_type, operands):
    ptr, offsets = operands    # unsigned offsets are zero-extended, as Triton's addptr does
    return ptr.data + offsets.data.astype(np.int64), ptr.buffer


def _stretched(attrs, result_type, operands):
    """A splat or broadcast changes no element: the array stays as it is, NumPy's broadcasting in the ops that
    read it stretches it (a value's array is always broadcastable to its type's shape; `eager.from_ir` gives it
    that shape when it leaves the rule)."""
    (v,) = operands
    return v.data, v.buffer


def _expand_dims(attrs, result_type, operands):
    (v,) = operands
    return np.expand_dims(materialized(v), attrs["axis"]), v.buffer


def materialized(v):
    """`v`'s array at its type's shape (a splat or broadcast left as it was gets its shape here)."""
    return v.data if v.data.shape == v.type.shape else np.broadcast_to(v.data, v.type.shape)


def _load(attrs, result_type, operands):
    from .pointers import gather      # here: pointers.py imports tensor.py, which imports this module's user
    ptr = operands[0]
    if len(operands) == 1:
        return gather(ptr.buffer, ptr.data, None, None), None
    mask, other = operands[1:]     # broadcast by NumPy as they are (a splat `other` stays one number)
    return gather(ptr.buffer, ptr.data, mask.data, other.data), None


def _store(attrs, result_type, operands):
    from .pointers import scatter
    ptr, value = operands[:2]
    mask = materialized(operands[2]) if len(operands) > 2 else None
    scatter(ptr.buffer, materialized(ptr), materialized(value), mask)
    return None, None


def _grid_value(field):
    """`program_id` / `num_programs` of the program being interpreted."""
    def apply(attrs, result_type, operands):
        return np.int32(getattr(core.current_interpreter(), field)[attrs["axis"]]), None
    return apply


def _device_print(attrs, result_type, operands):
    """One line per value: the program, the prefix and the value (its bits in hex for integers, with `hex`)."""
    from .eager import from_ir
    x, y, z = core.current_interpreter().program_id
    for value in operands or [None]:
        text = "" if value is None else str(from_ir(value))
        if value is not None and attrs["hex"] and value.dtype.is_int():
            bits = numeric.to_bits(materialized(value), value.dtype)
            text = np.array2string(bits, formatter={"int": lambda v: f"0x{int(v):x}"})
        print(" ".join(part for part in (f"pid ({x}, {y}, {z})", attrs["prefix"].strip(), text) if part))
    return None, None


EVALUATE = {
    OpKind.CONSTANT: lambda attrs, t, ops: (numeric.scalar_constant(attrs["value"], t.dtype), None),
    OpKind.SPLAT: _stretched,
    OpKind.BROADCAST: _stretched,
    OpKind.EXPAND_DIMS: _expand_dims,
    OpKind.RESHAPE: lambda attrs, t, ops: (materialized(ops[0]).reshape(t.shape), ops[0].buffer),  # row-major
    OpKind.PERMUTE: lambda attrs, t, ops: (np.transpose(materialized(ops[0]), attrs["order"]), ops[0].buffer),
    OpKind.HINT: lambda attrs, t, ops: (ops[0].data, ops[0].buffer),     # hints change no value
    OpKind.ARANGE: lambda attrs, t, ops: (np.arange(attrs["start"], attrs["start"] + t.shape[0], dtype=np.int32),
                                          None),
    OpKind.LOAD: _load,
    OpKind.STORE: _store,
    OpKind.PROGRAM_ID: _grid_value("program_id"),
    OpKind.NUM_PROGRAMS: _grid_value("grid"),
    OpKind.CAST: _cast,
    OpKind.BITCAST: _bitcast,
    OpKind.ADDPTR: _addptr,
    OpKind.ELEMENTWISE: _elementwise,
    OpKind.BARRIER: lambda attrs, t, ops: (None, None),     # programs run one at a time: always satisfied
    OpKind.DEVICE_PRINT: _device_print,
}
