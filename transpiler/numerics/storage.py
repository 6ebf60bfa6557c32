"""The language's element types on NumPy arrays: storage types, bf16 rounding, value casts and bit reinterpretation.

Every block value is a NumPy array in the *storage type* of its language dtype: the dtype's own NumPy type,
except bfloat16, which NumPy lacks and which is stored as float32 holding values already rounded to bf16.
Every function here that produces an array of some dtype returns it normalised (`finish`), so bf16 values
are always representable in bf16 and integer values have wrapped to their width.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, type_error_parts
from . import fp8

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def storage_dtype(dtype: dt.dtype) -> np.dtype:
    """The NumPy type that holds values of `dtype` in the interpreter."""
    if dtype is dt.bfloat16 or dtype.is_fp8():
        return _F32
    if dtype.numpy is None:
        raise TypeError(f"{dtype!r} has no array representation")
    return dtype.numpy


def _elementwise_flat(values: np.ndarray, fn) -> np.ndarray:
    """Apply `fn` to a contiguous 1-D copy of `values` and restore the shape (views need contiguity)."""
    flat = np.ascontiguousarray(values).reshape(-1)
    return np.asarray(fn(flat)).reshape(np.shape(values))


def round_to_bf16(values) -> np.ndarray:
    """Round float32 values to the nearest bf16 (ties to even), returned as float32. NaN stays NaN."""
    f32 = np.asarray(values, dtype=_F32)

    def rnd(flat):
        bits = flat.view(np.uint32)
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
        # The carry of a NaN payload could turn it into an infinity: keep NaNs as they are.
        return np.where(np.isnan(flat), flat, rounded.view(_F32))

    return _elementwise_flat(f32, rnd)


def truncate_to_bf16(values) -> np.ndarray:
    """Round float32 values toward zero to bf16 (drop the low 16 bits), for `fp_downcast_rounding='rtz'`."""
    f32 = np.asarray(values, dtype=_F32)
    return _elementwise_flat(f32, lambda flat: np.where(
        np.isnan(flat), flat, (flat.view(np.uint32) & np.uint32(0xFFFF0000)).view(_F32)))


def finish(values, dtype: dt.dtype) -> np.ndarray:
    """Convert computed `values` to the storage of `dtype`, rounding floats once (bf16 from float32)."""
    if dtype is dt.bfloat16:
        return round_to_bf16(np.asarray(values).astype(_F32))
    if dtype.is_fp8():
        return _fp8_round(values, dtype)
    return np.asarray(np.asarray(values).astype(storage_dtype(dtype), copy=False))


def round_from_wide(values, dtype: dt.dtype) -> np.ndarray:
    """float64 results to `dtype`: one rounding to float32 (fp64 stays), then to fp16/bf16 if needed."""
    values = np.asarray(values, dtype=_F64)
    if dtype is dt.float64:
        return values
    return finish(values.astype(_F32), dtype)


def _fp8_round(values, dtype):
    try:
        return fp8.round_to(values, dtype)
    except TypeError as exc:      # (the interpreter's rules give it the kernel line: interpreter/eager.py)
        raise DTypeError(**type_error_parts(exc)) from None


def int_range(dtype: dt.dtype) -> tuple[int, int]:
    """Smallest and largest value of an integer (or bool) dtype."""
    if dtype is dt.int1:
        return 0, 1
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def wrap_int(value: int, dtype: dt.dtype) -> int:
    """A Python int reduced modulo 2**bits into `dtype`'s range (C's conversion to a narrower int)."""
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.signed and dtype.kind is not dt.Kind.BOOL and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def scalar_constant(value, dtype: dt.dtype) -> np.ndarray:
    """A 0-d storage array holding the Python number `value` converted to `dtype`."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if dtype is dt.int1:
        return np.asarray(bool(value))
    if dtype.is_floating():
        return finish(np.asarray(float(value), dtype=_F64), dtype)
    if isinstance(value, (float, np.floating)):
        return cast(np.asarray(float(value), dtype=_F64), dt.float64, dtype)
    return np.asarray(wrap_int(int(value), dtype), dtype=dtype.numpy)


# ---- value casts ------------------------------------------------------------------------------------------


def _float_to_int(values: np.ndarray, dst: dt.dtype) -> np.ndarray:
    """Truncate toward zero like C; out-of-range saturates and NaN becomes 0 (what the GPU's cvt.rzi does)."""
    lo, hi = int_range(dst)
    whole = np.trunc(values.astype(_F64))
    converted = whole.astype(dst.numpy)  # garbage where out of range; fixed just below
    converted = np.where(whole >= float(hi), np.asarray(hi, dst.numpy), converted)
    converted = np.where(whole <= float(lo), np.asarray(lo, dst.numpy), converted)
    converted = np.where(np.isnan(whole), np.asarray(0, dst.numpy), converted)
    return np.asarray(converted, dtype=dst.numpy)


def _float_to_float(values: np.ndarray, src: dt.dtype, dst: dt.dtype, rounding: str | None) -> np.ndarray:
    if dst.is_fp8() or src.is_fp8():
        if src.is_fp8():
            _fp8_round(values, src)     # refuses the fp8 types that have no conversions
        return finish(values.astype(_F64), dst)     # exact source value, rounded once
    if dst is dt.bfloat16:
        f32 = values.astype(_F32)
        return truncate_to_bf16(f32) if rounding == "rtz" else round_to_bf16(f32)
    out = values.astype(storage_dtype(dst))
    if rounding == "rtz" and dst.bits < src.bits:
        # Round to nearest, then step one ulp toward zero wherever that rounded away from zero.
        wide = values.astype(_F64)
        away = np.abs(out.astype(_F64)) > np.abs(wide)
        toward_zero = np.nextafter(out, np.zeros_like(out))
        out = np.where(away & np.isfinite(wide), toward_zero, out)
    return np.asarray(out)


def cast(values: np.ndarray, src: dt.dtype, dst: dt.dtype, rounding: str | None = None) -> np.ndarray:
    """Convert `values` (storage of `src`) to the storage of `dst` with C/CUDA conversion semantics."""
    values = np.asarray(values)
    if src is dst:
        return values
    if dst is dt.int1:
        return np.asarray(values != 0)
    if src is dt.int1:
        return finish(values.astype(np.uint8), dst)
    if src.is_floating() and dst.is_floating():
        return _float_to_float(values, src, dst, rounding)
    if src.is_floating():
        return _float_to_int(values, dst)
    if dst is dt.bfloat16:
        return round_to_bf16(values.astype(_F64).astype(_F32))
    if dst.is_fp8():
        return finish(values.astype(_F64), dst)
    # int -> int wraps (NumPy's astype keeps the low bits); int -> float rounds to nearest.
    return np.asarray(values.astype(storage_dtype(dst)))


# ---- bit reinterpretation ---------------------------------------------------------------------------------


def unsigned_storage(bits: int) -> np.dtype:
    return np.dtype({1: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits])


def to_bits(values: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """The bit patterns of `values` as unsigned integers of `dtype`'s width (bool: 0/1 in uint8)."""
    values = np.asarray(values)
    if dtype is dt.int1:
        return values.astype(np.uint8)
    if dtype is dt.bfloat16:
        return _elementwise_flat(values.astype(_F32), lambda f: (f.view(np.uint32) >> np.uint32(16))
                                 .astype(np.uint16))
    if dtype.is_fp8():
        return _fp8_bits(values, dtype, fp8.encode)
    return _elementwise_flat(values, lambda f: f.view(unsigned_storage(dtype.bits)))


def from_bits(bits: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """Values of `dtype` whose bit patterns are the unsigned integers `bits`."""
    bits = np.asarray(bits)
    if dtype is dt.int1:
        return np.asarray(bits != 0)
    if dtype is dt.bfloat16:
        return _elementwise_flat(bits.astype(np.uint32) << np.uint32(16), lambda f: f.view(_F32))
    if dtype.is_fp8():
        return _fp8_bits(bits, dtype, fp8.decode)
    return _elementwise_flat(bits.astype(unsigned_storage(dtype.bits)), lambda f: f.view(dtype.numpy))


def _fp8_bits(values, dtype, convert):
    """fp8 bits to values or back; the fp8 types CUDA lacks keep their bits in a uint8 "value"."""
    if dtype in dt.FP8_CONVERTIBLE:
        return convert(values, dtype)
    return np.asarray(values).astype(np.uint8 if convert is fp8.encode else _F32)


def signed_view(values: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """Integer values of `dtype` reinterpreted as the signed type of the same width."""
    if dtype is dt.int1:
        return values.astype(np.int8)
    return to_bits(values, dtype).view(np.dtype(f"i{dtype.itemsize}"))


def unsigned_view(values: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """Integer values of `dtype` reinterpreted as the unsigned type of the same width."""
    return to_bits(values, dtype)


def arithmetic_view(values: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """An array NumPy can do integer arithmetic on: bools become uint8 (1-bit arithmetic wraps via `& 1`)."""
    return values.astype(np.uint8) if dtype is dt.int1 else values


def finish_arithmetic(values, dtype: dt.dtype) -> np.ndarray:
    """Like `finish`, but for results of integer arithmetic: a 1-bit result keeps only its low bit."""
    if dtype is dt.int1:
        return np.asarray((np.asarray(values) & 1) != 0)
    return finish(values, dtype)
