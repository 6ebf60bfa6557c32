"""`tl.dot_scaled` as Triton 3.6 computes it on Hopper and older GPUs, written once for both paths.

Triton has no microscaled tensor-core instruction below Blackwell; its `DecomposeScaledBlocked` rewrite turns
the op into ordinary block operations and a `tl.dot`, and this module builds exactly those:

1. each operand is upcast to the compute type, bf16 (fp16 when either format is "fp16"): e4m3 / e5m2 codes
   (uint8, or already fp8) convert exactly; bf16 / fp16 blocks (or their uint16 bits) convert as `.to` does;
   e2m1 (two 4-bit values a byte, the first in the low nibble, packed along K, or along M / N when
   `*_k_pack=False`) is decoded by building each value's fp32 bits from its sign, exponent and mantissa;
2. a scale block (uint8 e8m0 codes, one per 32 elements of K; the rhs scale is given as [N, K // 32]) becomes
   2 ** (code - 127) by putting the code in the exponent field (bf16: `code << 7`; fp16: the fp32 bits
   `code << 23` rounded to fp16), an fp8 e4m3 scale (one per 16) converts; it is repeated along K;
3. value * scale in the compute type, and NaN where the scale code is 0xFF (unless `fast_math`);
4. `tl.dot(a, b, acc)` with an fp32 result.

`ops` supplies the block operations: the typing rules (`parse/semantic_dot.py`), so the IR is what a user writing
the composition would get; the interpreter runs the same rules (`interpreter/eager.py`), so it rounds as compiled
code does.
"""
from __future__ import annotations

from . import dtypes
from .errors import NOT_YET

FORMATS = {"e2m1": None, "e4m3": dtypes.float8e4nv, "e5m2": dtypes.float8e5, "bf16": dtypes.bfloat16,
           "fp16": dtypes.float16}
_BITS_OF = {"e4m3": dtypes.uint8, "e5m2": dtypes.uint8, "bf16": dtypes.uint16, "fp16": dtypes.uint16}


def dot_scaled(ops, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=dtypes.float32):
    for name, fmt in (("lhs_format", lhs_format), ("rhs_format", rhs_format)):
        if fmt not in FORMATS:
            ops.fail("dtype", f"tl.dot_scaled: {name} must be one of {', '.join(map(repr, FORMATS))}, not {fmt!r}")
    if out_dtype is not dtypes.float32:
        ops.fail("dtype", f"tl.dot_scaled computes float32 results only (as Triton), not {out_dtype!r}")
    for k_pack, fmt in ((lhs_k_pack, lhs_format), (rhs_k_pack, rhs_format)):
        if not k_pack and fmt != "e2m1":
            ops.fail("shape", "tl.dot_scaled: only e2m1 inputs can be packed along a dimension other than K")
    ranks = (len(ops.shape(lhs)), len(ops.shape(rhs)))
    if ranks == (3, 3):
        ops.fail("shape", "a batched (3-D) tl.dot_scaled", refusal=NOT_YET)
    if ranks != (2, 2):
        ops.fail("shape", f"tl.dot_scaled needs two 2-D (or two 3-D) blocks, got ranks {ranks[0]} and {ranks[1]}")
    compute = dtypes.float16 if "fp16" in (lhs_format, rhs_format) else dtypes.bfloat16
    a = _upcast(ops, lhs, lhs_format, 1 if lhs_k_pack else 0, compute)
    b = _upcast(ops, rhs, rhs_format, 0 if rhs_k_pack else 1, compute)
    (m, k), (k2, n) = ops.shape(a), ops.shape(b)
    if k != k2:
        ops.fail("shape", f"tl.dot_scaled: the operands pack different numbers of K elements ({k} and {k2})")
    if lhs_scale is not None:
        a = _scaled(ops, a, _scale_along_k(ops, lhs_scale, m, k, "lhs_scale"), fast_math, compute, k_axis=1)
    if rhs_scale is not None:
        scale = ops.permute(_scale_along_k(ops, rhs_scale, n, k, "rhs_scale"), (1, 0))
        b = _scaled(ops, b, scale, fast_math, compute, k_axis=0)
    return ops.dot(a, b, acc)


def _upcast(ops, v, fmt, packed_axis, compute):
    """The operand's values in the compute type."""
    dt = ops.dtype(v)
    if fmt == "e2m1":
        if dt is not dtypes.uint8:
            ops.fail("dtype", f"tl.dot_scaled: e2m1 values must be packed as uint8, got {dt!r}")
        return _unpack_e2m1(ops, v, packed_axis, compute)
    if dt is not FORMATS[fmt]:
        if dt is not _BITS_OF[fmt]:
            ops.fail("dtype", f"tl.dot_scaled: {fmt} values must be {FORMATS[fmt]!r} or {_BITS_OF[fmt]!r} bits, "
                              f"got {dt!r}")
        v = ops.cast(v, FORMATS[fmt], bitcast=True)
    return ops.cast(v, compute)


def _unpack_e2m1(ops, packed, axis, compute):
    """Two e2m1 values a byte (low nibble first) along `axis`, as compute-type values: the fp32 bits are
    sign << 31 | (e + 126) << 23 | m << 22 for exponent e >= 1, and 0.5 * m for e == 0 (subnormal)."""
    halves = []
    for nibble in (ops.op("and_", packed, 15), ops.op("rshift", packed, 4)):
        n = ops.cast(nibble, dtypes.uint32)
        e, m = ops.op("and_", ops.op("rshift", n, 1), 3), ops.op("and_", n, 1)
        sign = ops.op("lshift", ops.op("rshift", n, 3), 31)
        normal = ops.op("or_", ops.op("lshift", ops.op("add", e, 126), 23), ops.op("lshift", m, 22))
        magnitude = ops.where(ops.op("eq", e, 0), ops.op("mul", m, 0x3F000000), normal)   # 0x3F000000 is 0.5
        halves.append(ops.cast(ops.cast(ops.op("or_", magnitude, sign), dtypes.float32, bitcast=True), compute))
    rows, cols = ops.shape(packed)
    pairs = ops.join(*halves)                                     # [rows, cols, 2]: low nibble first
    if axis == 1:
        return ops.reshape(pairs, (rows, cols * 2))
    return ops.reshape(ops.permute(pairs, (0, 2, 1)), (rows * 2, cols))


def _scale_along_k(ops, scale, rows, k, name):
    """The scale block checked against Triton's shape rule ([rows, K // group], group 32 for e8m0 codes and
    16 for e4m3 scales), repeated to [rows, K]."""
    dt, shape = ops.dtype(scale), tuple(ops.shape(scale))
    if dt not in (dtypes.uint8, dtypes.float8e4nv):
        ops.fail("dtype", f"tl.dot_scaled: {name} must be uint8 (e8m0 codes) or float8e4nv, got {dt!r}")
    group = 16 if dt is dtypes.float8e4nv else 32
    if shape != (rows, k // group) or k % group:
        ops.fail("shape", f"tl.dot_scaled: {name} must have shape [{rows}, {k // group}], got {list(shape)}")
    repeated = ops.broadcast_to(ops.expand_dims(scale, 2), (rows, k // group, group))
    return ops.reshape(repeated, (rows, k))


def _scaled(ops, v, scale, fast_math, compute, k_axis):
    """v * 2 ** (scale - 127) in the compute type, NaN where the scale code is 0xFF unless `fast_math`."""
    if ops.dtype(scale) is dtypes.float8e4nv:
        factor = ops.cast(scale, compute)
        is_nan = ops.op("ne", factor, factor)
    elif compute is dtypes.bfloat16:
        factor = ops.cast(ops.op("lshift", ops.cast(scale, dtypes.uint16), 7), dtypes.bfloat16, bitcast=True)
        is_nan = ops.op("eq", scale, 0xFF)
    else:
        wide = ops.cast(ops.op("lshift", ops.cast(scale, dtypes.uint32), 23), dtypes.float32, bitcast=True)
        factor = ops.cast(wide, dtypes.float16)
        is_nan = ops.op("eq", scale, 0xFF)
    product = ops.op("mul", v, factor)
    if fast_math:
        return product
    return ops.where(is_nan, ops.full(ops.shape(v), float("nan"), compute), product)
