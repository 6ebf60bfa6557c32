"""The fuzzer's model of Triton 3.6's types: dtype names, promotion, and what is known of a value (`Facts`).

Written from Triton's `semantic.py` rules (computation_type_impl, integer_promote_impl, to_tensor) and kept
apart from `transpiler.dtypes` on purpose: the fuzzer must not inherit the compiler's mistakes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32,
            "uint64": 64}
MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
BOOL = "int1"
# The relative error an inexact value of each float type may carry against the float64 evaluation (rounding
# order, fast division and math functions, contraction into fma), the basis of the runner's tolerances.
NOISE = {"float16": 2.0**-7, "bfloat16": 2.0**-4, "float32": 2.0**-14, "float64": 2.0**-30}
# Magnitudes the generator lets a value of each float type reach (far from overflow, so no inf appears).
FLOAT_LIMIT = {"float16": 2.0e3, "bfloat16": 1.0e6, "float32": 1.0e8, "float64": 1.0e12}


def is_int(d):
    return d in INT_BITS


def is_float(d):
    return d in MANTISSA


def is_signed(d):
    return d in INT_BITS and d.startswith("int")


def int_range(d):
    if d == BOOL:
        return 0, 1
    bits = INT_BITS[d]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(d) else (0, (1 << bits) - 1)


def _kind(d):
    """Triton's dtype kinds, ordered: bool < integer (either signedness) < float."""
    if d == BOOL:
        return 0
    return 2 if is_float(d) else 1


def _width(d):
    return 1 if d == BOOL else INT_BITS[d]


def _int_signed(d):
    return is_signed(d)      # Triton lists int1 with the unsigned types (width 1)


def integer_promote(a, b):
    if _int_signed(a) == _int_signed(b):
        return a if _width(a) > _width(b) else b
    if not _int_signed(a):
        return a if _width(a) >= _width(b) else b
    return b if _width(b) >= _width(a) else a


class Untypeable(Exception):
    """Triton would refuse this combination (the generator then picks something else)."""


def computation_type(a, a_weak, b, b_weak, div_or_mod=False):
    """The type both operands convert to; `*_weak` marks a Python number (which does not promote upward)."""
    if a_weak != b_weak:
        scalar, tensor = (a, b) if a_weak else (b, a)
        if _kind(scalar) <= _kind(tensor):
            if div_or_mod and tensor in ("float16", "bfloat16"):
                return "float32"
            return tensor
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if a == b == "bfloat16":
        return "float32" if div_or_mod else "bfloat16"
    if "bfloat16" in (a, b):
        return "float32"
    if div_or_mod and _int_signed(a) != _int_signed(b):
        raise Untypeable("/, // and % need operands of one signedness")
    return integer_promote(a, b)


def literal_type(value):
    """Triton's to_tensor: the type a Python number gets when it becomes a tensor."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return "int32"
        if 2**31 <= value < 2**32:
            return "uint32"
        return "int64" if value < 2**63 else "uint64"
    magnitude = abs(value)
    if magnitude == 0.0 or 2.0**-126 <= magnitude <= (2 - 2**-23) * 2.0**127:
        return "float32"
    return "float64"


def sum_type(d):
    """tl.sum / tl.cumsum: integers narrower than 32 bits accumulate in (u)int32 of the same signedness."""
    if is_int(d) and INT_BITS[d] < 32:
        return "int32" if is_signed(d) else "uint32"
    return d


def minmax_reduce_type(d):
    """tl.max / tl.min (without indices): narrower than 32 bits computed as int32 or fp32."""
    if is_float(d):
        return "float32" if MANTISSA[d] < 24 else d
    return "int32" if INT_BITS[d] < 32 else d


@dataclass(frozen=True)
class Facts:
    """What the generator knows of a value: every element lies in [lo, hi]; for floats, `exact` says it was
    computed without any rounding (so comparisons, floor and casts to integers are safe) and `scale` that it is
    a multiple of 2**-scale (None: any mantissa); `peak` is the largest magnitude met on the way (it sets the
    absolute tolerance of an inexact result)."""

    lo: float
    hi: float
    exact: bool = True
    scale: int | None = 0
    peak: float = 0.0
    noise: float = 0.0     # the relative rounding error it may carry: the NOISE of the narrowest float it was
    #                        rounded in (an fp32 erf converted to fp64 is still only fp32-accurate)

    @property
    def magnitude(self):
        return max(abs(self.lo), abs(self.hi))


def float_facts(lo, hi, dtype, exact, scale, peak=0.0, noise=0.0):
    """Facts of a float result, with exactness kept only while the values fit the mantissa, or None when the
    range leaves what the generator allows for `dtype`."""
    magnitude = max(abs(lo), abs(hi))
    if not math.isfinite(magnitude) or magnitude > FLOAT_LIMIT[dtype]:
        return None
    if exact and scale is not None and (scale > 60 or magnitude * 2.0**scale >= 2.0**MANTISSA[dtype]):
        exact, scale = False, None
    if not exact:
        scale = None
        noise = max(noise, NOISE[dtype])
    return Facts(lo, hi, exact, scale, max(peak, magnitude), noise)


def int_facts(lo, hi, dtype):
    """Facts of an integer result in `dtype`, or None when a signed result could overflow (undefined in C++);
    unsigned results wrap, as in Triton."""
    tlo, thi = int_range(dtype)
    if tlo <= lo and hi <= thi:
        return Facts(int(lo), int(hi))
    if is_signed(dtype) or dtype == BOOL:
        return None
    return Facts(tlo, thi)


def convert(f: Facts, src, dst):
    """Facts after converting a `src` value to `dst`, or None when the conversion is not well defined here."""
    if src == dst:
        return f
    if is_float(dst):
        if is_float(src):
            exact = f.exact and (f.scale is not None or MANTISSA[dst] >= MANTISSA[src])
            return float_facts(f.lo, f.hi, dst, exact, f.scale, f.peak, f.noise)
        return float_facts(float(f.lo), float(f.hi), dst, True, 0, f.peak)
    if dst == BOOL:
        return None
    if is_float(src):
        # fptosi / fptoui: undefined out of range; truncation of an inexact value is not reproducible
        if not f.exact:
            return None
        lo, hi = math.trunc(f.lo), math.trunc(f.hi)
        tlo, thi = int_range(dst)
        return Facts(lo, hi) if tlo <= lo and hi <= thi else None
    tlo, thi = int_range(dst)
    if tlo <= f.lo and f.hi <= thi:
        return Facts(f.lo, f.hi)
    return Facts(tlo, thi)        # wraps (integer truncation / reinterpretation is defined in Triton and C)
