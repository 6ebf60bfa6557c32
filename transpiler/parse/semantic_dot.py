"""Typing rule of `tl.dot`: shapes, input and accumulator dtypes, and the precision the product is computed in.

Follows Triton: two 2-D blocks [M, K] @ [K, N] with K >= 16 (M and N of any size, as Triton's CUDA back end); both inputs of one dtype; fp16 and bf16
accumulate in fp32; fp32 inputs are rounded to tf32 unless `input_precision="ieee"` (or `allow_tf32=False`);
int8 accumulates in int32; fp64 stays fp64; fp8 (`tl.float8e4nv`, `tl.float8e5`, one of them for both inputs)
accumulates in fp32. `acc` must already be [M, N] of the result dtype. The op is
`dot(a, b, acc)` with the precision as an attribute; which hardware instruction computes it is decided by
the tensor-core pass (`analysis/tensor_cores.py`), not here. A batched dot ([B, M, K] @ [B, K, N], `acc`
[B, M, N]) is one op of the same kind with the batch as the leading dimension (the interpreter runs this rule
too). `tl.dot_scaled` is Triton's decomposition into block operations and
a `tl.dot` (`transpiler/scaled_dot.py`).
"""
from __future__ import annotations

from .. import dtypes
from ..errors import NOT_YET, CompileTimeError, DTypeError, ShapeError
from .ir import OpKind, Type
from ..scaled_dot import dot_scaled
from .semantic import (RULES, binary_op, broadcast_to_shape, cast, const_value, constant, expand_dims, is_const, rule,
                       splat, to_value)

MIN_DOT_K = 16     # Triton's CUDA back end (its `min_dot_size`): M and N of any size (padded), K of 16 or more
PRECISIONS = ("tf32", "tf32x3", "ieee")
_FLOAT_INPUTS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
FP8_INPUTS = (dtypes.float8e4nv, dtypes.float8e5)     # CUDA's e4m3 and e5m2: an fp32 product (sm_89+)


def _precision(b, a_dtype, input_precision, allow_tf32):
    precision = const_value(b, input_precision, "input_precision")
    allow = const_value(b, allow_tf32, "allow_tf32")
    if precision is None:
        precision = "ieee" if allow is False else "tf32"
    if precision not in PRECISIONS:
        raise b.error(CompileTimeError, f"tl.dot: input_precision must be one of {list(PRECISIONS)}, "
                      f"not {precision!r}")
    if a_dtype is not dtypes.float32:
        return "ieee" if a_dtype is dtypes.float64 else "native"
    # tf32x3 (three tf32 products) exists to approximate ieee; ieee is exact and what we compute for it.
    return "tf32" if precision == "tf32" else "ieee"


def _result_dtype(b, a_dtype, out_dtype):
    if a_dtype is dtypes.int8:
        return dtypes.int32
    if a_dtype is dtypes.float64:
        return dtypes.float64
    out = const_value(b, out_dtype, "out_dtype")
    if out not in (dtypes.float32, dtypes.float16):
        raise b.error(DTypeError, f"tl.dot: out_dtype must be tl.float32 or tl.float16, not {out!r}")
    if out is dtypes.float16 and a_dtype.is_fp8():
        raise b.error(DTypeError, "tl.dot: out_dtype=tl.float16 for fp8 inputs (the product is fp32)",
                      refusal=NOT_YET)
    if a_dtype in (dtypes.float32, dtypes.bfloat16):     # Triton's front end ignores out_dtype for these
        return dtypes.float32
    return out


@rule("dot")
def _dot(b, input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
         out_dtype=dtypes.float32):
    a, w = to_value(b, input), to_value(b, other)
    batch = _batch_dims(b, a, w)
    (m, k), (k2, n) = a.shape[-2:], w.shape[-2:]
    if k != k2:
        raise b.error(ShapeError, f"tl.dot: shapes {list(a.shape)} and {list(w.shape)} do not multiply "
                      f"(inner dimensions {k} and {k2})")
    if k < MIN_DOT_K:
        raise b.error(ShapeError, f"tl.dot needs K of at least {MIN_DOT_K}, got M={m}, N={n}, K={k}",
                      hint="make the K block 16 or more (pad with masked loads)")
    if a.dtype is not w.dtype:
        raise b.error(DTypeError, f"tl.dot inputs must have one dtype, not {a.dtype!r} and {w.dtype!r}",
                      hint="cast one of them with .to(...)")
    if a.dtype.is_fp8() and a.dtype not in FP8_INPUTS:
        raise b.error(DTypeError, f"tl.dot on {a.dtype!r} inputs (CUDA has no such type; tl.float8e4nv and "
                      "tl.float8e5 are)", hint="convert the operands to tl.float16 first", refusal=NOT_YET)
    if a.dtype not in _FLOAT_INPUTS + FP8_INPUTS and a.dtype is not dtypes.int8:
        raise b.error(DTypeError, f"tl.dot supports fp16, bf16, fp32, fp64 and int8 inputs, not {a.dtype!r}")
    precision = _precision(b, a.dtype, input_precision, allow_tf32)
    out = _result_dtype(b, a.dtype, out_dtype)
    # fp16 results are accumulated in fp32 and rounded once (see docs/language.md).
    compute = dtypes.float32 if out is dtypes.float16 else out
    shape = batch + (m, n)
    if acc is None:
        acc_v = splat(b, constant(b, 0, compute), shape)
    else:
        acc_v = to_value(b, acc)
        if acc_v.shape != shape:
            raise b.error(ShapeError, f"tl.dot: acc has shape {list(acc_v.shape)}, the product is {list(shape)}")
        if acc_v.dtype is not out:
            raise b.error(DTypeError, f"tl.dot: acc is {acc_v.dtype!r} but the product is {out!r}",
                          hint=f"create the accumulator as {out!r} (tl.zeros(..., dtype=tl.{out.name}))"
                          if out.name != "fp32" else "create the accumulator with tl.zeros(..., dtype=tl.float32)")
        acc_v = cast(b, acc_v, compute)
    result = b.emit(OpKind.DOT, [a, w, acc_v], Type(compute, shape), precision=precision)
    return cast(b, result, out)


def _batch_dims(b, a, w) -> tuple:
    """() for a 2-D product, (B,) for a batched one ([B, M, K] @ [B, K, N]), as Triton's front end takes them."""
    if len(a.shape) != len(w.shape) or len(a.shape) not in (2, 3):
        raise b.error(ShapeError, f"tl.dot needs two 2-D blocks (or two 3-D ones, batched), not shapes "
                      f"{list(a.shape)} and {list(w.shape)}")
    if a.shape[:-2] != w.shape[:-2]:
        raise b.error(ShapeError, f"tl.dot: the batch sizes of shapes {list(a.shape)} and {list(w.shape)} differ")
    return tuple(a.shape[:-2])


class _ScaledDotOps:
    """The block operations `scaled_dot.dot_scaled` is made of, as the compiler's typing rules."""
    _ERRORS = {"dtype": DTypeError, "shape": ShapeError}

    def __init__(self, b):
        self.b = b

    def shape(self, x):
        return list(to_value(self.b, x).shape)

    def dtype(self, x):
        return to_value(self.b, x).dtype

    def fail(self, kind, message, refusal=None):
        raise self.b.error(self._ERRORS[kind], message, refusal=refusal)

    def cast(self, x, dt, bitcast=False):
        return cast(self.b, to_value(self.b, x), dt, bitcast=bitcast)

    def op(self, name, x, y):
        return binary_op(self.b, name, x, y)

    def where(self, c, x, y):
        return RULES["where"](self.b, c, x, y)

    def full(self, shape, value, dt):
        return RULES["full"](self.b, list(shape), value, dt)

    def join(self, x, y):
        return RULES["join"](self.b, x, y)

    def reshape(self, x, shape):
        return RULES["reshape"](self.b, x, *shape)

    def permute(self, x, dims):
        return RULES["permute"](self.b, x, *dims)

    def expand_dims(self, x, axis):
        return expand_dims(self.b, to_value(self.b, x), axis)

    def broadcast_to(self, x, shape):
        return broadcast_to_shape(self.b, to_value(self.b, x), list(shape))

    def dot(self, a, w, acc):
        return RULES["dot"](self.b, a, w, acc)


@rule("dot_scaled")
def _dot_scaled(b, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
                lhs_k_pack=True, rhs_k_pack=True, out_dtype=dtypes.float32):
    """Triton's decomposition on GPUs without microscaled MMA (`transpiler/scaled_dot.py`)."""
    def none_or(x):
        return None if x is None or is_const(x) and const_value(b, x, "a scale") is None else x
    return dot_scaled(_ScaledDotOps(b), lhs, none_or(lhs_scale), const_value(b, lhs_format, "lhs_format"), rhs,
                      none_or(rhs_scale), const_value(b, rhs_format, "rhs_format"), none_or(acc),
                      bool(const_value(b, fast_math, "fast_math")), bool(const_value(b, lhs_k_pack, "lhs_k_pack")),
                      bool(const_value(b, rhs_k_pack, "rhs_k_pack")), const_value(b, out_dtype, "out_dtype"))
