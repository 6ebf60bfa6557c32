"""NumPy evaluation of every `libdevice` function (the catalogue `language/extra/libdevice.py`), for the
interpreter's evaluation of their ops (`interpreter/evaluate.py`) and for tests as a reference.

`FLOAT64` functions are computed in float64 and rounded once to the result type. `EXACT` functions get the
result dtype and the operand arrays and return the result array exactly: integer intrinsics (computed on
Python integers where 64-bit products need more bits), bit reinterpretations, conversions with their
saturation, and arithmetic in a named rounding mode (the nearest result corrected by exact rational
comparison, so `add_rd` is the largest value not above the exact sum). The Bessel functions are integrals
of smooth periodic functions (trapezoid rule, exact to float64 rounding for moderate arguments) and, for the
second kind, a Gauss-Legendre quadrature of the decaying part.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import dtypes as dt
from . import storage as numeric

_vec = np.vectorize


def _erfinv(y):
    """Inverse error function: a rough start refined by Newton steps on math.erf (float64 accurate)."""
    y = np.asarray(y, np.float64)
    a = 0.147
    ln = np.log1p(-y * y)
    t = 2 / (np.pi * a) + ln / 2
    x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
    for _ in range(4):
        x = x - (_erf(x) - y) / (2 / np.sqrt(np.pi) * np.exp(-x * x))
    return np.where(np.abs(y) == 1, np.sign(y) * np.inf, x)


_erf = _vec(math.erf, otypes=[np.float64])
_erfc = _vec(math.erfc, otypes=[np.float64])
_lgamma = _vec(lambda x: math.lgamma(x) if not (x <= 0 and x == int(x)) else math.inf, otypes=[np.float64])


def _tgamma(x):
    def one(v):
        try:
            return math.gamma(v)
        except (ValueError, OverflowError):
            return math.nan if v <= 0 and v == int(v) and v != 0 else math.copysign(math.inf, v) if v == 0 \
                else math.inf
    return _vec(one, otypes=[np.float64])(x)


# ---- Bessel functions -------------------------------------------------------------------------------------
_TAU = (np.arange(256) + 0.5) * (np.pi / 256)             # midpoints of [0, pi]: exact for periodic integrands
_GL_X, _GL_W = np.polynomial.legendre.leggauss(160)


def _jn(n, x):
    """J_n(x) = (1/pi) * integral_0^pi cos(n t - x sin t) dt."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    return np.cos(n[..., None] * _TAU - x[..., None] * np.sin(_TAU)).mean(axis=-1)


def _in(n, x):
    """I_n(x) = (1/pi) * integral_0^pi exp(x cos t) cos(n t) dt (n = 0, 1)."""
    x = np.asarray(x, np.float64)
    return (np.exp(x[..., None] * np.cos(_TAU)) * np.cos(n * _TAU)).mean(axis=-1)


def _yn(n, x):
    """Y_n(x) = (1/pi) int_0^pi sin(x sin t - n t) dt - (1/pi) int_0^inf (e^{nt} + (-1)^n e^{-nt}) e^{-x sinh t} dt."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    tau = (_GL_X + 1) * (np.pi / 2)                    # not periodic: Gauss-Legendre, not the midpoint rule
    first = (np.sin(x[..., None] * np.sin(tau) - n[..., None] * tau) * _GL_W).sum(axis=-1) / 2
    with np.errstate(all="ignore"):
        top = np.arcsinh(800.0 / np.maximum(x, 1e-300)) + 1.0        # e^{-x sinh t} is below e^-800 past it
        t = (top[..., None] / 2) * (_GL_X + 1)
        f = (np.exp(n[..., None] * t) + np.cos(np.pi * n)[..., None] * np.exp(-n[..., None] * t)) \
            * np.exp(-x[..., None] * np.sinh(t))
        second = (f * _GL_W).sum(axis=-1) * top / 2 / np.pi
    out = first - second
    return np.where(x == 0, -np.inf, np.where(x < 0, np.nan, out))


def _erfcx(x):
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        direct = np.exp(x * x) * _erfc(x)
        # asymptotic series where exp(x^2) overflows: 1/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4))
        asym = (1 - 1 / (2 * x * x) + 3 / (4 * x ** 4)) / (x * np.sqrt(np.pi))
    return np.where(x > 25, asym, direct)


def _rhypot(x, y):
    return 1 / np.hypot(x, y)


def _remainder(x, y):
    def one(a, b):
        try:
            return math.remainder(a, b)
        except ValueError:          # remainder(inf, y) and remainder(x, 0) are NaN in C
            return math.nan
    return np.vectorize(one, otypes=[np.float64])(x, y)


FLOAT64 = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt, "rcbrt": lambda x: 1 / np.cbrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinpi": lambda x: np.sin(np.pi * np.fmod(x, 2.0)), "cospi": lambda x: np.cos(np.pi * np.fmod(x, 2.0)),
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf, "erfc": _erfc,
    "erfinv": _erfinv, "erfcinv": lambda y: _erfinv(1 - y), "erfcx": _erfcx,
    "normcdf": lambda x: 0.5 * _erfc(-x / np.sqrt(2)), "normcdfinv": lambda p: -np.sqrt(2) * _erfinv(1 - 2 * p),
    "lgamma": _lgamma, "tgamma": _tgamma, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "rint": np.rint, "nearbyint": np.rint,
    "logb": lambda x: np.where(x == 0, -np.inf, np.floor(np.log2(np.abs(x)))), "fabs": np.abs, "abs": np.abs,
    "j0": lambda x: _jn(0, x), "j1": lambda x: _jn(1, x), "y0": lambda x: _yn(0, x), "y1": lambda x: _yn(1, x),
    "jn": _jn, "yn": _yn, "cyl_bessel_i0": lambda x: _in(0, x), "cyl_bessel_i1": lambda x: _in(1, x),
    "atan2": np.arctan2, "hypot": np.hypot, "rhypot": _rhypot, "fmod": np.fmod, "remainder": _remainder,
    "copysign": np.copysign, "fdim": lambda x, y: np.where(x > y, x - y, np.where(np.isnan(x - y), x - y, 0.0)),
    "fmax": np.fmax, "fmin": np.fmin, "fma": lambda x, y, z: x * y + z, "pow": np.power,
    "norm3d": lambda a, b, c: np.sqrt(a * a + b * b + c * c), "rnorm3d": lambda a, b, c: 1 / np.sqrt(a * a + b * b + c * c),
    "norm4d": lambda a, b, c, d: np.sqrt(a * a + b * b + c * c + d * d),
    "rnorm4d": lambda a, b, c, d: 1 / np.sqrt(a * a + b * b + c * c + d * d),
    "ldexp": lambda x, e: np.ldexp(x, e.astype(np.int64).clip(-10000, 10000)),
    "scalbn": lambda x, e: np.ldexp(x, e.astype(np.int64).clip(-10000, 10000)),
    "saturatef": lambda x: np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)),
    "rsqrt_rn": lambda x: 1 / np.sqrt(x),
    "fast_expf": np.exp, "fast_logf": np.log, "fast_log2f": np.log2, "fast_log10f": np.log10,
    "fast_exp10f": lambda x: np.power(10.0, x), "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan,
    "fast_dividef": np.divide, "fast_powf": np.power,
}


# ---- exact results --------------------------------------------------------------------------------------

def _directed(exact, mode: str, np_type):
    """The value of `np_type` that rounding `mode` gives for the exact (rational) value `exact`."""
    up, down = np_type(np.inf), np_type(-np.inf)
    lo = np_type(float(exact))
    if not np.isfinite(lo):
        return lo
    while Fraction(float(lo)) > exact:
        lo = np.nextafter(lo, down)
    while np.isfinite(np.nextafter(lo, up)) and Fraction(float(np.nextafter(lo, up))) <= exact:
        lo = np.nextafter(lo, up)
    if Fraction(float(lo)) == exact:
        return lo
    hi = np.nextafter(lo, up)                   # lo < exact < hi
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return lo if exact > 0 else hi
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    if exact < mid:
        return lo
    if exact > mid:
        return hi
    return lo if int(np.array(lo).view(_UINT[np_type])) % 2 == 0 else hi      # a tie goes to the even one


_UINT = {np.float32: np.uint32, np.float64: np.uint64}


def _rounded(op, mode, result: dt.dtype, *arrays):
    """`op` in rounding `mode` to `result`, elementwise: `op.exact` on Fractions (None where undefined),
    `op.nearest` on floats for non-finite operands and undefined cases."""
    np_type = result.numpy.type

    def one(*xs):
        xs = [float(x) for x in xs]
        exact = op.exact(*[Fraction(x) for x in xs]) if all(math.isfinite(x) for x in xs) else None
        if exact is None:
            return np_type(op.nearest(*[np.float64(x) for x in xs]))
        return _directed(exact, mode, np_type)
    if not arrays[0].size:
        return arrays[0].astype(result.numpy)
    return np.vectorize(one, otypes=[result.numpy])(*arrays)


class _Op:
    def __init__(self, exact, nearest):
        self.exact, self.nearest = exact, nearest


class _Root(Fraction):
    """The square root of a rational `square`, compared with rationals exactly (it is rarely one itself)."""

    def __new__(cls, square):
        self = super().__new__(cls, Fraction(math.sqrt(square)))
        self.square = square
        return self

    def _cmp(self, other):
        other = Fraction(other)
        if other < 0:
            return 1
        return (self.square > other * other) - (self.square < other * other)

    def __lt__(self, other):
        return self._cmp(other) < 0

    def __gt__(self, other):
        return self._cmp(other) > 0

    def __le__(self, other):
        return self._cmp(other) <= 0

    def __ge__(self, other):
        return self._cmp(other) >= 0

    def __eq__(self, other):
        return self._cmp(other) == 0

    __hash__ = Fraction.__hash__


_ARITH = {
    "add": _Op(lambda a, b: a + b, lambda a, b: a + b),
    "sub": _Op(lambda a, b: a - b, lambda a, b: a - b),
    "mul": _Op(lambda a, b: a * b, lambda a, b: a * b),
    "div": _Op(lambda a, b: a / b if b != 0 else None, np.divide),
    "rcp": _Op(lambda a: 1 / a if a != 0 else None, lambda a: np.divide(1.0, a)),
    "sqrt": _Op(lambda a: _Root(a) if a >= 0 else None, np.sqrt),
    "fma": _Op(lambda a, b, c: a * b + c, lambda a, b, c: a * b + c),
}
_IDENTITY = _Op(lambda a: a, lambda a: a)


def _convert_float_to_int(values, mode, target_bits, signed):
    """CUDA's float-to-integer intrinsics: round by `mode`, saturate to the range, NaN to 0."""
    rounding = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode]
    lo, hi = (-2 ** (target_bits - 1), 2 ** (target_bits - 1) - 1) if signed else (0, 2 ** target_bits - 1)
    v = rounding(values.astype(np.float64))
    out = [0 if math.isnan(x) else min(max(int(x) if math.isfinite(x) else (hi if x > 0 else lo), lo), hi)
           for x in v.ravel()]
    return np.array(out, dtype=object).reshape(v.shape)


def _to_typed(ints, result: dt.dtype):
    """Python integers to `result`'s array, wrapped to its width (Triton types unsigned results as signed)."""
    return numeric.cast(np.array([numeric.wrap_int(int(x), result) for x in np.ravel(ints)], dtype=np.int64 if
                                 result.signed else np.uint64).reshape(np.shape(ints)), dt.int64 if result.signed
                        else dt.uint64, result)


def _conversion(name, mode):
    source, target = name.split("2")
    int_targets = {"int": (32, True), "uint": (32, False), "ll": (64, True), "ull": (64, False)}

    def apply(result, x):
        if target in int_targets:
            bits, signed = int_targets[target]
            return _to_typed(_convert_float_to_int(x, mode, bits, signed), result)
        if source in ("double", "float"):
            return _rounded(_IDENTITY, mode, result, x)
        np_type = result.numpy.type       # from an integer: its exact value, rounded by `mode`
        return np.array([_directed(Fraction(int(v)), mode, np_type) for v in x.ravel()],
                        dtype=result.numpy).reshape(x.shape)
    return apply


def _bits(x):
    return x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)


def _clz(result, x):
    width = x.dtype.itemsize * 8
    return np.array([width - int(v).bit_length() for v in _bits(x).ravel()], np.int32).reshape(x.shape)


def _popc(result, x):
    return np.array([bin(int(v)).count("1") for v in _bits(x).ravel()], np.int32).reshape(x.shape)


def _ffs(result, x):
    return np.array([(int(v) & -int(v)).bit_length() for v in _bits(x).ravel()], np.int32).reshape(x.shape)


def _brev(result, x):
    width = x.dtype.itemsize * 8
    out = [int(format(int(v), f"0{width}b")[::-1], 2) for v in _bits(x).ravel()]
    return np.array(out, dtype=_bits(x).dtype).reshape(x.shape).view(x.dtype)


def _byte_perm(result, x, y, s):
    def one(a, b, sel):
        src = (int(b) & 0xFFFFFFFF) << 32 | (int(a) & 0xFFFFFFFF)
        out = 0
        for i in range(4):
            pick = (int(sel) >> (4 * i)) & 7
            out |= ((src >> (8 * pick)) & 0xFF) << (8 * i)
        return numeric.wrap_int(out, dt.int32)
    return np.vectorize(one, otypes=[np.int32])(x, y, s)


def _mulhi(result, x, y):
    bits = x.dtype.itemsize * 8
    return _to_typed([(int(a) * int(b)) >> bits for a, b in zip(x.ravel(), y.ravel())], result).reshape(x.shape)


def _mul24(result, x, y):
    def low24(v):
        v = int(v) & 0xFFFFFF
        return v - (1 << 24) if result.signed and v & 0x800000 else v
    return _to_typed([low24(a) * low24(b) for a, b in zip(x.ravel(), y.ravel())], result).reshape(x.shape)


def _sad(result, x, y, z):
    return _to_typed([abs(int(a) - int(b)) + int(c) for a, b, c in zip(x.ravel(), y.ravel(), z.ravel())],
                     result).reshape(x.shape)


def _halving(rounding_up):
    def apply(result, x, y):
        return _to_typed([(int(a) + int(b) + rounding_up) >> 1 for a, b in zip(x.ravel(), y.ravel())],
                         result).reshape(x.shape)
    return apply


def _float_to_int_result(fn):
    """Float functions with an integer result (ilogb, llrint, llround)."""
    def apply(result, x):
        lo, hi = numeric.int_range(result)
        values = fn(x.astype(np.float64))
        out = [lo if not math.isfinite(v) else min(max(int(v), lo), hi) for v in values.ravel()]
        return np.array(out, dtype=result.numpy).reshape(x.shape)
    return apply


def _ilogb(x):
    with np.errstate(all="ignore"):
        return np.where(x == 0, -2 ** 31, np.where(np.isnan(x), -2 ** 31, np.where(np.isinf(x), 2 ** 31 - 1,
                                                                                        np.floor(np.log2(np.abs(x))))))


def _reinterpret(result, x):
    return x.view(result.numpy)


EXACT = {
    "clz": _clz, "popc": _popc, "ffs": _ffs, "brev": _brev, "byte_perm": _byte_perm, "mulhi": _mulhi,
    "mul24": _mul24, "sad": _sad, "hadd": _halving(0), "rhadd": _halving(1),
    "abs_int": lambda result, x: _to_typed([abs(int(v)) for v in x.ravel()], result).reshape(x.shape),
    "ilogb": _float_to_int_result(_ilogb), "llrint": _float_to_int_result(np.rint),
    "llround": _float_to_int_result(lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
    "isnan": lambda result, x: np.isnan(x), "isinf": lambda result, x: np.isinf(x),
    "finitef": lambda result, x: np.isfinite(x), "isfinited": lambda result, x: np.isfinite(x),
    "signbit": lambda result, x: np.signbit(x).astype(np.int32),
    "int_as_float": _reinterpret, "uint_as_float": _reinterpret, "float_as_int": _reinterpret,
    "float_as_uint": _reinterpret, "longlong_as_double": _reinterpret, "double_as_longlong": _reinterpret,
    "double2loint": lambda result, x: (x.view(np.uint64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32),
    "double2hiint": lambda result, x: (x.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32),
    "hiloint2double": lambda result, hi, lo: ((hi.astype(np.int64).astype(np.uint64) << np.uint64(32))
                                              | lo.view(np.uint32).astype(np.uint64)).view(np.float64),
    "nextafter": lambda result, x, y: np.nextafter(x, y),
    "int2double_rn": lambda result, x: x.astype(np.float64), "uint2double_rn": lambda result, x: x.astype(np.float64),
}
for _mode in ("rn", "rz", "rd", "ru"):
    for _op in ("add", "sub", "mul", "div", "rcp", "sqrt", "fma"):
        EXACT[f"{_op}_{_mode}"] = (lambda op, mode: lambda result, *xs: _rounded(_ARITH[op], mode, result, *xs))(
            _op, _mode)
    for _name in ("double2float", "double2int", "double2uint", "float2int", "float2uint", "int2float", "uint2float",
                  "float2ll", "float2ull", "double2ll", "double2ull", "ll2float", "ull2float", "ll2double",
                  "ull2double"):
        EXACT[f"{_name}_{_mode}"] = _conversion(_name, _mode)


def evaluate(name, result: dt.dtype, arrays) -> np.ndarray:
    """Function `name` of the catalogue on operand arrays: float functions in float64 rounded once to `result`,
    the rest exactly."""
    if name == "abs" and result.is_int():
        data = EXACT["abs_int"](result, *arrays)
    elif name in EXACT:
        data = EXACT[name](result, *arrays)
    else:
        data = numeric.round_from_wide(FLOAT64[name](*[a.astype(np.float64) for a in arrays]), result)
    return np.asarray(data).astype(result.numpy, copy=False)
