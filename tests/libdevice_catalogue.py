"""Every row of the libdevice catalogue as a kernel case, with independent references.

A *group* is the functions sharing one operand-type tuple and result type (`(("fp32", "fp32"), "fp32")`):
`group_kernel` computes all of them on the same operands, one output row each, so one NVRTC compile covers a
group. `one_kernel` computes one function and is written the way Triton users write it, so the GPU test can
run the same source under Triton. References are written apart from the interpreter's evaluation (Python's
`math` per element, series, exact rationals, bit loops), or, where no closed form is at hand (Bessel
functions of the second kind), as identities the results must satisfy.
"""
from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np

import transpiler
import transpiler.language as tl
from transpiler.language.extra import libdevice
# Loaded as Triton's twin (bench/twins.py), `libdevice` is Triton's, which has no SIGNATURES: the twin only needs
# the kernels below.
SIGNATURES = getattr(libdevice, "SIGNATURES", {})

NP = {"fp32": np.float32, "fp64": np.float64, "int32": np.int32, "int64": np.int64, "uint32": np.uint32,
      "uint64": np.uint64, "int1": np.bool_}


@transpiler.jit
def group_kernel(A, B, C, D, OUT, N, FNS: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m)
    b = tl.load(B + offs, mask=m) if ARITY > 1 else None
    c = tl.load(C + offs, mask=m) if ARITY > 2 else None
    d = tl.load(D + offs, mask=m) if ARITY > 3 else None
    for i in tl.static_range(len(FNS)):
        fn = FNS[i]
        if ARITY == 1:
            r = fn(a)
        elif ARITY == 2:
            r = fn(a, b)
        elif ARITY == 3:
            r = fn(a, b, c)
        else:
            r = fn(a, b, c, d)
        tl.store(OUT + i * N + offs, r, mask=m)


@transpiler.jit
def one_kernel(A, B, C, D, OUT, N, FN: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m)
    if ARITY == 1:
        r = FN(a)
    elif ARITY == 2:
        r = FN(a, tl.load(B + offs, mask=m))
    elif ARITY == 3:
        r = FN(a, tl.load(B + offs, mask=m), tl.load(C + offs, mask=m))
    else:
        r = FN(a, tl.load(B + offs, mask=m), tl.load(C + offs, mask=m), tl.load(D + offs, mask=m))
    tl.store(OUT + offs, r, mask=m)


def groups():
    """(operand type names, result type name, input domain) -> function names, in catalogue order."""
    out = defaultdict(list)
    for name, rows in SIGNATURES.items():
        for operands, (_call, result) in rows.items():
            out[(operands, result, _DOMAIN.get(name))].append(name)
    return dict(out)


def group_id(key):
    operands, result, domain = key
    suffix = "" if domain is None else "_" + "_".join(str(v) for v in domain)
    return "_".join(operands) + "_to_" + result + suffix


# ---- inputs -----------------------------------------------------------------------------------------------

_DOMAIN = {  # per function: (low, high) of the float operands, and whether negatives are flipped in
    "acosh": (1.1, 3.0, False), "erfinv": (-0.9, 0.9, False), "erfcinv": (0.1, 1.9, False),
    "normcdfinv": (0.05, 0.95, False), "log": (0.1, 3.0, False), "log2": (0.1, 3.0, False),
    "log10": (0.1, 3.0, False), "logb": (0.1, 30.0, True), "sqrt": (0.1, 3.0, False), "rsqrt": (0.1, 3.0, False),
    "rsqrt_rn": (0.1, 3.0, False), "fast_logf": (0.1, 3.0, False), "fast_log2f": (0.1, 3.0, False),
    "fast_log10f": (0.1, 3.0, False), "pow": (0.1, 2.0, False), "fast_powf": (0.1, 2.0, False),
    "y0": (0.5, 8.0, False), "y1": (0.5, 8.0, False), "yn": (0.5, 8.0, False), "lgamma": (0.3, 6.0, False),
    "tgamma": (0.3, 6.0, False), "asin": (-0.9, 0.9, False), "acos": (-0.9, 0.9, False),
    "atanh": (-0.9, 0.9, False), "saturatef": (-0.5, 1.5, False),
}
for _r in ("rn", "rz", "rd", "ru"):
    for _op in ("sqrt", "rcp", "div"):
        _DOMAIN[f"{_op}_{_r}"] = (0.1, 3.0, _op != "sqrt")


def operands(rng, key, names, n):
    """Random operand arrays for group `key`: floats in the group's domain, integers as each function needs."""
    types, _, domain = key
    lo, hi, flip = domain or (0.1, 0.9, True)
    arrays = []
    for i, t in enumerate(types):
        if t in ("fp32", "fp64"):
            x = rng.uniform(lo, hi, n).astype(NP[t])
            if flip:
                x[::7] *= -1
            if names[0] in ("ldexp", "scalbn") and i == 0:
                x *= 3
        elif names[0] in ("jn", "yn") and i == 0:
            x = rng.integers(0, 5, n).astype(NP[t])
        elif names[0] in ("ldexp", "scalbn", "pow") and i == 1:
            x = rng.integers(-8, 9, n).astype(NP[t])
        elif names[0] == "hiloint2double":
            x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(NP[t])
            if i == 0:
                x = (x & 0x3FEFFFFF) | 0x3F000000          # a moderate, finite double
        elif t in ("int64", "uint64") and any(nm.startswith(("ll2", "ull2")) for nm in names):
            x = rng.integers(0, 2**62, n, dtype=np.int64).astype(NP[t]) * (1 if t == "uint64" else 1)
            if t == "int64":
                x[::3] *= -1
        else:
            info = np.iinfo(NP[t])
            x = rng.integers(max(info.min, -2**40), min(info.max, 2**40), n, dtype=np.int64).astype(NP[t]) \
                if t in ("int64", "uint64") else rng.integers(info.min, info.max, n, dtype=np.int64).astype(NP[t])
        arrays.append(x)
    while len(arrays) < 4:
        arrays.append(np.ones(n, np.float32))
    return arrays


def poisoned(shape, type_name):
    if type_name in ("fp32", "fp64"):
        return np.full(shape, np.nan, NP[type_name])
    if type_name == "int1":
        return np.zeros(shape, np.bool_)
    return np.full(shape, 0x5A, NP[type_name])


# ---- references -------------------------------------------------------------------------------------------

def _each(fn):
    return lambda *xs: np.array([fn(*(v.item() for v in vs)) for vs in zip(*xs)], dtype=object)


def _bessel_j(n, x):
    total, k = 0.0, 0
    term = (x / 2) ** n / math.factorial(n)
    while k < 200:
        total += term
        k += 1
        term *= -(x / 2) ** 2 / (k * (k + n))
        if abs(term) < 1e-18 * max(1.0, abs(total)):
            break
    return total


def _bessel_i(n, x):
    return sum((x / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n)) for k in range(60))


FLOAT_REFERENCE = {
    "exp": math.exp, "exp2": lambda x: 2.0 ** x, "exp10": lambda x: 10.0 ** x, "expm1": math.expm1,
    "log": math.log, "log2": math.log2, "log10": math.log10, "log1p": math.log1p, "sqrt": math.sqrt,
    "rsqrt": lambda x: 1 / math.sqrt(x), "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "rcbrt": lambda x: 1 / math.copysign(abs(x) ** (1 / 3), x), "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "sinpi": lambda x: math.sin(math.pi * x), "cospi": lambda x: math.cos(math.pi * x), "asin": math.asin,
    "acos": math.acos, "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh, "erf": math.erf, "erfc": math.erfc,
    "erfcx": lambda x: math.exp(x * x) * math.erfc(x), "normcdf": lambda x: 0.5 * math.erfc(-x / math.sqrt(2)),
    "lgamma": math.lgamma, "tgamma": math.gamma, "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc,
    "round": lambda x: math.copysign(math.floor(abs(x) + 0.5), x), "rint": lambda x: float(round(x)),
    "nearbyint": lambda x: float(round(x)), "logb": lambda x: float(math.frexp(x)[1] - 1), "fabs": abs,
    "j0": lambda x: _bessel_j(0, x), "j1": lambda x: _bessel_j(1, x), "cyl_bessel_i0": lambda x: _bessel_i(0, x),
    "cyl_bessel_i1": lambda x: _bessel_i(1, x), "atan2": math.atan2, "hypot": math.hypot,
    "rhypot": lambda x, y: 1 / math.hypot(x, y), "fmod": math.fmod, "remainder": math.remainder,
    "copysign": math.copysign, "fdim": lambda x, y: max(x - y, 0.0), "nextafter": math.nextafter,
    "fmax": max, "fmin": min, "fma": lambda x, y, z: x * y + z, "norm3d": lambda a, b, c: math.hypot(a, b, c),
    "rnorm3d": lambda a, b, c: 1 / math.hypot(a, b, c), "norm4d": lambda a, b, c, d: math.hypot(a, b, c, d),
    "rnorm4d": lambda a, b, c, d: 1 / math.hypot(a, b, c, d), "pow": math.pow, "ldexp": math.ldexp,
    "scalbn": math.ldexp, "jn": lambda n, x: _bessel_j(int(n), x), "abs": abs,
    "saturatef": lambda x: min(max(x, 0.0), 1.0), "rsqrt_rn": lambda x: 1 / math.sqrt(x),
    "erfinv": None, "erfcinv": None, "normcdfinv": None,        # checked through their inverses
    "fast_expf": math.exp, "fast_logf": math.log, "fast_log2f": math.log2, "fast_log10f": math.log10,
    "fast_exp10f": lambda x: 10.0 ** x, "fast_sinf": math.sin, "fast_cosf": math.cos, "fast_tanf": math.tan,
    "fast_dividef": lambda x, y: x / y, "fast_powf": math.pow,
}
INVERSES = {"erfinv": math.erf, "erfcinv": math.erfc, "normcdfinv": lambda x: 0.5 * math.erfc(-x / math.sqrt(2))}


def _bits_of(v, width):
    return int(v) & ((1 << width) - 1)


def _clz(v, width):
    v = _bits_of(v, width)
    count = 0
    for bit in reversed(range(width)):
        if v >> bit & 1:
            break
        count += 1
    return count


def _ffs(v, width):
    v = _bits_of(v, width)
    for bit in range(width):
        if v >> bit & 1:
            return bit + 1
    return 0


def _signed(v, width):
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def _mul24(types, x, y):
    low = [(_signed(_bits_of(v, 24), 24) if t == "int32" else _bits_of(v, 24)) for v, t in ((x, types[0]), (y, types[1]))]
    return low[0] * low[1]


INT_REFERENCE = {  # (operand type names, operands as Python numbers) -> the exact result as a Python number
    "clz": lambda t, x: _clz(x, _WIDTH[t[0]]), "popc": lambda t, x: bin(_bits_of(x, _WIDTH[t[0]])).count("1"),
    "ffs": lambda t, x: _ffs(x, _WIDTH[t[0]]),
    "brev": lambda t, x: int(format(_bits_of(x, _WIDTH[t[0]]), f"0{_WIDTH[t[0]]}b")[::-1], 2),
    "mulhi": lambda t, x, y: (int(x) * int(y)) >> _WIDTH[t[0]], "mul24": _mul24,
    "hadd": lambda t, x, y: (int(x) + int(y)) // 2, "rhadd": lambda t, x, y: (int(x) + int(y) + 1) // 2,
    "sad": lambda t, x, y, z: abs(int(x) - int(y)) + int(z), "abs": lambda t, x: abs(int(x)),
    "isnan": lambda t, x: math.isnan(x), "isinf": lambda t, x: math.isinf(x),
    "finitef": lambda t, x: math.isfinite(x), "isfinited": lambda t, x: math.isfinite(x),
    "signbit": lambda t, x: int(math.copysign(1, x) < 0), "ilogb": lambda t, x: math.frexp(x)[1] - 1,
    "llrint": lambda t, x: round(x), "llround": lambda t, x: int(math.copysign(math.floor(abs(x) + 0.5), x)),
    "byte_perm": lambda t, x, y, s: _byte_perm(x, y, s),
}
_WIDTH = {"int32": 32, "uint32": 32, "int64": 64, "uint64": 64}


def _byte_perm(x, y, s):
    source = _bits_of(y, 32) << 32 | _bits_of(x, 32)
    return sum(((source >> (8 * ((int(s) >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def exact_rounded_ok(name, types, xs, got):
    """Whether `got` is the rounding its mode (`_rn`/`_rz`/`_rd`/`_ru`) gives for the exact value."""
    op, mode = name.rsplit("_", 1)
    q = [Fraction(float(x)) if not isinstance(x, (int, np.integer)) else Fraction(int(x)) for x in xs]
    if op == "sqrt":
        if q[0] < 0:
            return math.isnan(got)
        below, above = Fraction(float(got)) ** 2 <= q[0], Fraction(float(got)) ** 2 >= q[0]
        lo_n, hi_n = Fraction(float(np.nextafter(got, -np.inf))), Fraction(float(np.nextafter(got, np.inf)))
        return {"rd": below and hi_n ** 2 > q[0], "rz": below and hi_n ** 2 > q[0],
                "ru": above and lo_n ** 2 < q[0],
                "rn": (Fraction(float(got)) ** 2 - q[0]) ** 0 == 1 and ((lo_n + Fraction(float(got))) / 2) ** 2 <= q[0]
                <= ((hi_n + Fraction(float(got))) / 2) ** 2}[mode]
    exact = {"add": lambda: q[0] + q[1], "sub": lambda: q[0] - q[1], "mul": lambda: q[0] * q[1],
             "div": lambda: q[0] / q[1], "rcp": lambda: 1 / q[0], "fma": lambda: q[0] * q[1] + q[2]}.get(op, lambda: q[0])()
    g = Fraction(float(got))
    lo_n, hi_n = Fraction(float(np.nextafter(got, -np.inf))), Fraction(float(np.nextafter(got, np.inf)))
    if mode == "rd":
        return g <= exact < hi_n
    if mode == "ru":
        return lo_n < exact <= g
    if mode == "rz":
        return (g <= exact < hi_n) if exact >= 0 else (lo_n < exact <= g)
    return abs(g - exact) <= (hi_n - g) / 2 and abs(g - exact) <= (g - lo_n) / 2
