"""Interpreter rule for `tl.dot`: the matrix product of two blocks, with Triton's type and precision rules.

fp16/bf16/fp32 inputs give an fp32 result (or `out_dtype`); int8 inputs give int32; fp8 (e4nv, e5) inputs,
whose values the interpreter holds as float32, give fp32. With fp32 inputs and
`input_precision` "tf32" (the default, unless `allow_tf32=False`), both inputs are first rounded to tf32
(10 mantissa bits; round to nearest, ties away from zero, like CUDA's cvt.rna.tf32.f32) as tensor cores do;
"ieee" and "tf32x3" multiply the exact fp32 values. Products are summed in float64 (int64 for int8) and
rounded once, then `acc` is added. `tl.dot_scaled` is the composition of `transpiler/scaled_dot.py` over the
interpreter's builtins.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as dt
from ..language import core
from ..scaled_dot import dot_scaled
from ..errors import CompileTimeError, DTypeError, ShapeError
from . import numeric
from .location import error
from .registry import rule
from .tensor import Tensor, to_tensor, unwrap

_tl = core.BUILTINS
MIN_DOT_SIZE = 16
_PRECISIONS = ("tf32", "tf32x3", "ieee")
_FLOAT_INPUTS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
_FP8_INPUTS = (dt.float8e4nv, dt.float8e5)   # held as float32 copies of their values (interpreter/fp8.py)


def round_to_tf32(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to 10 mantissa bits (nearest, ties away from zero); NaN/inf unchanged."""
    f32 = np.ascontiguousarray(values, dtype=np.float32)
    bits = f32.view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(f32), rounded, f32)


def _check_shapes(a: Tensor, b: Tensor):
    if len(a.shape) not in (2, 3) or len(a.shape) != len(b.shape):
        raise error(ShapeError, "tl.dot needs two 2-D (or two 3-D batched) blocks, "
                    f"got shapes {a.shape} and {b.shape}")
    (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
    if k != k2 or a.shape[:-2] != b.shape[:-2]:
        raise error(ShapeError, f"tl.dot: shapes {a.shape} and {b.shape} do not multiply (inner dimensions {k} and {k2})")
    if min(m, n, k) < MIN_DOT_SIZE:
        raise error(ShapeError, f"tl.dot needs M, N and K of at least {MIN_DOT_SIZE}, got M={m}, N={n}, K={k} "
                    f"(shapes {a.shape} and {b.shape})")


def _precision(input_precision, allow_tf32) -> str:
    precision = unwrap(input_precision)
    if precision is None:
        precision = "ieee" if unwrap(allow_tf32) is False else "tf32"
    if precision not in _PRECISIONS:
        raise error(CompileTimeError, f"tl.dot: input_precision must be one of {_PRECISIONS}, got {precision!r}")
    return precision


def _result_type(in_dtype: dt.dtype, out_dtype) -> dt.dtype:
    if in_dtype.is_int():
        if in_dtype is not dt.int8:
            raise error(DTypeError, f"tl.dot supports int8 integer inputs only, got {in_dtype!r}")
        return dt.int32
    if in_dtype.is_fp8() and in_dtype not in _FP8_INPUTS:
        raise error(DTypeError, f"tl.dot on {in_dtype!r} inputs is not supported yet (CUDA has no such type)",
                    hint="convert the operands to tl.float16 first")
    if in_dtype not in _FLOAT_INPUTS + _FP8_INPUTS:
        raise error(DTypeError, f"tl.dot does not support {in_dtype!r} inputs")
    if in_dtype is dt.float64:
        return dt.float64
    out = unwrap(out_dtype)
    if out not in (dt.float32, dt.float16) or (out is dt.float16 and in_dtype is not dt.float16):
        if in_dtype.is_fp8() and out is dt.float16:
            raise error(DTypeError, "tl.dot: out_dtype=tl.float16 for fp8 inputs is not supported yet")
        raise error(DTypeError, f"tl.dot: out_dtype {out!r} is not allowed for {in_dtype!r} inputs")
    return out


@rule("dot")
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=dt.float32):
    a, b = to_tensor(input, "the first input of tl.dot"), to_tensor(other, "the second input of tl.dot")
    if a.dtype is not b.dtype:
        raise error(DTypeError, f"tl.dot needs inputs of one type, got {a.dtype!r} and {b.dtype!r}")
    _check_shapes(a, b)
    result_type = _result_type(a.dtype, out_dtype)
    precision = _precision(input_precision, allow_tf32)
    if result_type is dt.int32:
        product = np.matmul(a.data.astype(np.int64), b.data.astype(np.int64))
    else:
        lhs, rhs = a.data, b.data
        if a.dtype is dt.float32 and precision == "tf32":
            lhs, rhs = round_to_tf32(lhs), round_to_tf32(rhs)
        product = np.matmul(lhs.astype(np.float64), rhs.astype(np.float64))
    acc = unwrap(acc)
    if acc is not None:
        acc = to_tensor(acc, "the accumulator of tl.dot")
        expected = product.shape
        if acc.shape != expected or acc.dtype is not result_type:
            raise error(DTypeError if acc.shape == expected else ShapeError,
                        f"tl.dot: acc must be a {result_type!r} block of shape {expected}, got {acc.dtype!r} "
                        f"of shape {acc.shape}")
        product = product + acc.data.astype(product.dtype)
    return Tensor(numeric.finish(product, result_type), result_type)


class _ScaledDotOps:
    """The block operations `scaled_dot.dot_scaled` is made of, as the interpreter's builtins (so values round
    as the compiled composition's do)."""
    _ERRORS = {"dtype": DTypeError, "shape": ShapeError, "unsupported": ShapeError}
    _OPERATORS = {"and_": operator.and_, "or_": operator.or_, "rshift": operator.rshift, "lshift": operator.lshift,
                  "add": operator.add, "mul": operator.mul, "eq": operator.eq, "ne": operator.ne}

    shape = staticmethod(lambda x: list(to_tensor(x, "an operand of tl.dot_scaled").shape))
    dtype = staticmethod(lambda x: to_tensor(x, "an operand of tl.dot_scaled").dtype)
    cast = staticmethod(lambda x, d, bitcast=False: _tl["cast"](x, d, bitcast=bitcast))
    where = staticmethod(lambda c, x, y: _tl["where"](c, x, y))
    full = staticmethod(lambda shape, value, d: _tl["full"](list(shape), value, d))
    join = staticmethod(lambda x, y: _tl["join"](x, y))
    reshape = staticmethod(lambda x, shape: _tl["reshape"](x, *shape))
    permute = staticmethod(lambda x, dims: _tl["permute"](x, *dims))
    expand_dims = staticmethod(lambda x, axis: _tl["expand_dims"](x, axis))
    broadcast_to = staticmethod(lambda x, shape: _tl["broadcast_to"](x, *shape))
    dot = staticmethod(lambda a, w, acc: _tl["dot"](a, w, acc))

    def fail(self, kind, message):
        raise error(self._ERRORS[kind], message)

    def op(self, name, x, y):
        return self._OPERATORS[name](x, y)


@rule("dot_scaled")
def dot_scaled_rule(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
                    lhs_k_pack=True, rhs_k_pack=True, out_dtype=dt.float32):
    return dot_scaled(_ScaledDotOps(), lhs, unwrap(lhs_scale), unwrap(lhs_format), rhs, unwrap(rhs_scale),
                      unwrap(rhs_format), unwrap(acc), bool(unwrap(fast_math)), bool(unwrap(lhs_k_pack)),
                      bool(unwrap(rhs_k_pack)), unwrap(out_dtype))
