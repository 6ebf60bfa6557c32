"""fp8 values on NumPy: the two formats CUDA has (E4M3 without infinities, `tl.float8e4nv`; E5M2, `tl.float8e5`).

Decoding is a table of the 256 codes. Encoding rounds the exact value to the nearest code, ties to the even
code, and saturates: magnitudes past the largest finite value (infinities included) become it, NaN stays NaN,
which is what CUDA's `__nv_fp8_e4m3(x)` / `__nv_fp8_e5m2(x)` constructors (`__NV_SATFINITE`) and Triton's
`cvt.rn.satfinite` conversions do.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from ..errors import NOT_YET, TypeRefusal

_FORMATS = {"fp8e4nv": (4, 3, 7, False), "fp8e5": (5, 2, 15, True)}   # exponent bits, mantissa bits, bias, has inf


@functools.lru_cache(maxsize=None)
def _table(name):
    """(value of every code as float64, sorted non-negative finite values, their codes)."""
    exp_bits, man_bits, bias, has_inf = _FORMATS[name]
    values = np.empty(256, np.float64)
    top = (1 << exp_bits) - 1
    for code in range(256):
        sign = -1.0 if code >> 7 else 1.0
        e, f = (code >> man_bits) & top, code & ((1 << man_bits) - 1)
        if has_inf and e == top:
            values[code] = sign * np.inf if f == 0 else np.nan
        elif not has_inf and e == top and f == (1 << man_bits) - 1:
            values[code] = np.nan
        elif e == 0:
            values[code] = sign * f * 2.0 ** (1 - bias - man_bits)
        else:
            values[code] = sign * (1 + f / (1 << man_bits)) * 2.0 ** (e - bias)
    positive = [c for c in range(128) if np.isfinite(values[c])]
    return values, values[positive], np.array(positive, np.uint8)


def decode(codes, dtype: dt.dtype) -> np.ndarray:
    """float32 values of the fp8 bit patterns `codes`."""
    values, _, _ = _table(_checked(dtype))
    return values[np.asarray(codes).astype(np.uint8)].astype(np.float32)


def encode(values, dtype: dt.dtype) -> np.ndarray:
    """The fp8 codes (uint8) nearest to `values` (ties to even), saturating to the largest finite value."""
    _, finite, codes = _table(_checked(dtype))
    x = np.asarray(values, np.float64)
    magnitude = np.minimum(np.abs(x), finite[-1])
    above = np.clip(np.searchsorted(finite, magnitude), 0, len(finite) - 1)
    below = np.maximum(above - 1, 0)
    d_above, d_below = finite[above] - magnitude, magnitude - finite[below]
    tie_to_below = (d_below == d_above) & (codes[below] % 2 == 0)
    pick = np.where((d_below < d_above) | tie_to_below, below, above)
    out = codes[pick] | np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))
    return np.where(np.isnan(x), np.uint8(0x7F), out).astype(np.uint8)


def round_to(values, dtype: dt.dtype) -> np.ndarray:
    """`values` rounded to `dtype` (as float32 holding fp8 values)."""
    return decode(encode(values, dtype), dtype)


def _checked(dtype):
    if dtype.name not in _FORMATS:
        raise TypeRefusal(f"converting {dtype!r} values (CUDA has no such type); only its bits can be loaded, "
                          "stored and bitcast", NOT_YET)
    return dtype.name
