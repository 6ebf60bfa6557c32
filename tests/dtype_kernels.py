"""Kernels and cases over every element type: loads/stores, arithmetic with Triton's promotion, C integer
division and modulo with negative operands, wrap-around, shifts, comparisons, casts between all pairs, and
the reductions (sum, max, min, argmax).

Shared by the GPU test (`test_gpu_dtypes.py`: results against NumPy on fresh random inputs, outputs
poisoned) and the CPU test (`test_compile_dtypes.py`: every kernel compiles with NVRTC for sm_80 and sm_90a
without spills or warnings). References are independent of the compiler: integers exactly, with Python
integers wrapped to the result width; floats in float64 under a tolerance of the stored type.

NumPy has no bfloat16: a bf16 array lives on the host as float32 values already rounded to bf16
(`round_bf16`), listed in the case's `bf16` (argument indices). On the GPU it becomes a torch bf16 tensor;
for the CPU compile a float16 array of the same size stands in and the pointer's type is overridden.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
ALL = ["bool"] + INTS + FLOATS
TL = {"bool": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
      "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64, "float16": tl.float16,
      "bfloat16": tl.bfloat16, "float32": tl.float32, "float64": tl.float64}
# Relative precision of each float type (one rounding of an exact result is within half of this).
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}

# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def copy_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m), mask=m)


@transpiler.jit
def arith_kernel(A, B, OUT, DIV, CMP, n, IS_INT: tl.constexpr, NCOL: tl.constexpr, BLOCK: tl.constexpr):
    """OUT[i, :] in A's type: a+b, a-b, a*b, a%b, a+3, -a, max, min, then for integers a//b, &, |, ^, a<<3,
    a>>2, ~a. DIV: a/b (fp32 for integers). CMP[i, :]: <, <=, ==, !=, >, >=."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + offs, mask=m, other=1)
    b = tl.load(B + offs, mask=m, other=1)
    out = OUT + offs * NCOL
    tl.store(out + 0, a + b, mask=m)
    tl.store(out + 1, a - b, mask=m)
    tl.store(out + 2, a * b, mask=m)
    tl.store(out + 3, a % b, mask=m)
    tl.store(out + 4, a + 3, mask=m)
    tl.store(out + 5, -a, mask=m)
    tl.store(out + 6, tl.maximum(a, b), mask=m)
    tl.store(out + 7, tl.minimum(a, b), mask=m)
    if IS_INT:
        tl.store(out + 8, a // b, mask=m)
        tl.store(out + 9, a & b, mask=m)
        tl.store(out + 10, a | b, mask=m)
        tl.store(out + 11, a ^ b, mask=m)
        tl.store(out + 12, a << 3, mask=m)
        tl.store(out + 13, a >> 2, mask=m)
        tl.store(out + 14, ~a, mask=m)
    tl.store(DIV + offs, a / b, mask=m)
    cmp = CMP + offs * 6
    tl.store(cmp + 0, a < b, mask=m)
    tl.store(cmp + 1, a <= b, mask=m)
    tl.store(cmp + 2, a == b, mask=m)
    tl.store(cmp + 3, a != b, mask=m)
    tl.store(cmp + 4, a > b, mask=m)
    tl.store(cmp + 5, a >= b, mask=m)


@transpiler.jit
def bool_kernel(A, B, OUT, n, BLOCK: tl.constexpr):
    """OUT[i, :]: a & b, a | b, a ^ b, a == b, a != b, a < b, and the int32 sum a + b of bools (promoted)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + offs, mask=m, other=0)
    b = tl.load(B + offs, mask=m, other=0)
    out = OUT + offs * 7
    tl.store(out + 0, a & b, mask=m)
    tl.store(out + 1, a | b, mask=m)
    tl.store(out + 2, a ^ b, mask=m)
    tl.store(out + 3, a == b, mask=m)
    tl.store(out + 4, a != b, mask=m)
    tl.store(out + 5, a < b, mask=m)
    tl.store(out + 6, a.to(tl.int32) + b.to(tl.int32), mask=m)


@transpiler.jit
def mixed_add_kernel(A, B, OUT, n, BLOCK: tl.constexpr):
    """a + b for A and B of different types: the sum is computed in Triton's promoted type."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(OUT + offs, tl.load(A + offs, mask=m) + tl.load(B + offs, mask=m), mask=m)


@transpiler.jit
def cast_kernel(X, O_BOOL, O_I8, O_I16, O_I32, O_I64, O_U8, O_U16, O_U32, O_U64, O_F16, O_BF16, O_F32, O_F64, n,
                SRC_FLOAT: tl.constexpr, BLOCK: tl.constexpr):
    """X cast to every type; from floats, unsigned targets get |x| (a negative float to unsigned is undefined)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    if SRC_FLOAT:
        xu = tl.abs(x)
    else:
        xu = x
    tl.store(O_BOOL + offs, x.to(tl.int1), mask=m)
    tl.store(O_I8 + offs, x.to(tl.int8), mask=m)
    tl.store(O_I16 + offs, x.to(tl.int16), mask=m)
    tl.store(O_I32 + offs, x.to(tl.int32), mask=m)
    tl.store(O_I64 + offs, x.to(tl.int64), mask=m)
    tl.store(O_U8 + offs, xu.to(tl.uint8), mask=m)
    tl.store(O_U16 + offs, xu.to(tl.uint16), mask=m)
    tl.store(O_U32 + offs, xu.to(tl.uint32), mask=m)
    tl.store(O_U64 + offs, xu.to(tl.uint64), mask=m)
    tl.store(O_F16 + offs, x.to(tl.float16), mask=m)
    tl.store(O_BF16 + offs, x.to(tl.bfloat16), mask=m)
    tl.store(O_F32 + offs, x.to(tl.float32), mask=m)
    tl.store(O_F64 + offs, x.to(tl.float64), mask=m)


@transpiler.jit
def reduce_kernel(X, SUM, MAX, MIN, ARGMAX, n, BLOCK: tl.constexpr):
    """Per row of n elements: sum, max, min, argmax. Lanes past the end read 0 for the sum and the row's
    first element for the others (neutral for max/min; argmax breaks ties towards the lower index)."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + row * n + offs, mask=m, other=0)
    xs = tl.where(m, x, tl.load(X + row * n))
    tl.store(SUM + row, tl.sum(x, axis=0))
    tl.store(MAX + row, tl.max(xs, axis=0))
    tl.store(MIN + row, tl.min(xs, axis=0))
    tl.store(ARGMAX + row, tl.argmax(xs, axis=0))


# ---------------------------------------------------------------------------------------------------------
# Host helpers
# ---------------------------------------------------------------------------------------------------------

def round_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bf16 (ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def host_dtype(name):
    """The NumPy dtype holding `name` on the host (bf16 as float32)."""
    return np.dtype("float32" if name == "bfloat16" else ("bool" if name == "bool" else name))


def poison(shape, name):
    out = np.empty(shape, host_dtype(name))
    if name == "bool":
        out.fill(True)
    elif name in FLOATS:
        out.fill(np.nan)
    else:
        out.fill(np.iinfo(out.dtype).min + 7)
    return out


def wrap(values, name) -> np.ndarray:
    """Python integers wrapped to `name`'s width (two's complement), as an array of that type."""
    dt = np.dtype(name)
    bits = dt.itemsize * 8
    lo = int(np.iinfo(dt).min)
    # Iterate without letting NumPy convert the list first (it would turn integers past 64 bits into floats).
    flat = values if isinstance(values, list) else np.ravel(values).tolist()
    return np.array([((int(v) - lo) % (1 << bits)) + lo for v in flat], dt)


def as_ints(a):
    return [int(v) for v in np.ravel(a)]


def random_values(rng, name, n, low=None, high=None):
    """Fresh random inputs: integers over their whole range (or [low, high)), floats standard normal * 3."""
    if name == "bool":
        return rng.random(n) < 0.5
    if name in FLOATS:
        x = (rng.standard_normal(n) * 3).astype(np.float64)
        x[rng.random(n) < 0.05] = 0.0
        return round_bf16(x) if name == "bfloat16" else x.astype(name)
    info = np.iinfo(name)
    lo = info.min if low is None else max(low, info.min)
    hi = info.max if high is None else min(high, info.max + 1) - 1
    # rng.integers cannot draw uint64 above int64's range directly: draw the two halves.
    if name == "uint64" and low is None:
        return (rng.integers(0, 2**32, n, dtype=np.uint64) << np.uint64(32)) | rng.integers(0, 2**32, n,
                                                                                          dtype=np.uint64)
    return rng.integers(lo, hi, n, dtype=name, endpoint=True)


def _result_float(name):
    return name if name in FLOATS else "float32"


def _tol(name):
    """(rtol, atol) for a result stored in `name` after one or two roundings."""
    if name in FLOATS:
        return 2 * EPS[name], 4 * EPS[name] * (1e-3 if name in ("float32", "float64") else 1.0)
    return 0, 0


# ---------------------------------------------------------------------------------------------------------
# Cases. A case: kernel, grid, args (host arrays, outputs poisoned), constexprs, outputs (argument indices),
# dtypes (per argument: element type name or None for scalars), reference (inputs -> expected per output),
# tol (per output: (rtol, atol)), bf16 (argument indices holding bf16), num_warps.
# ---------------------------------------------------------------------------------------------------------

def case_copy(rng, name, n=3001, block=512):
    x = random_values(rng, name, n)
    y = poison(n, name)
    return dict(kernel=copy_kernel, grid=(transpiler.cdiv(n, block),), args=[x, y, n], dtypes=[name, name, None],
                constexprs=dict(BLOCK=block), outputs=[1], reference=lambda x, y, n: [x], tol=[(0, 0)])


def _int_reference(name, a, b):
    ai, bi = as_ints(a), as_ints(b)

    def cdiv(x, y):                    # C: quotient truncated towards zero
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    bits = np.dtype(name).itemsize * 8
    cols = [
        [x + y for x, y in zip(ai, bi)],
        [x - y for x, y in zip(ai, bi)],
        [x * y for x, y in zip(ai, bi)],
        [x - cdiv(x, y) * y for x, y in zip(ai, bi)],          # C remainder: the sign of the dividend
        [x + 3 for x in ai],
        [-x for x in ai],
        [max(x, y) for x, y in zip(ai, bi)],
        [min(x, y) for x, y in zip(ai, bi)],
        [cdiv(x, y) for x, y in zip(ai, bi)],
        [x & y for x, y in zip(ai, bi)],
        [x | y for x, y in zip(ai, bi)],
        [x ^ y for x, y in zip(ai, bi)],
        [x << 3 for x in ai],
        [x >> 2 for x in ai],                                   # arithmetic for signed, logical for unsigned
        [~x if np.iinfo(name).min < 0 else (1 << bits) - 1 - x for x in ai],
    ]
    out = np.stack([wrap(c, name) for c in cols], axis=1).reshape(-1)
    div = np.array(ai, np.float64) / np.array(bi, np.float64)
    return out, div


def case_arith(rng, name, n=2999, block=256):
    is_int = name in INTS
    if is_int:
        a = random_values(rng, name, n)
        b = random_values(rng, name, n)
        b[b == 0] = 1
        info = np.iinfo(name)
        if info.min < 0:                          # MIN // -1 overflows (undefined in C): keep it out
            a[(a == info.min) & (b == -1)] = info.min + 1
            b[: n // 4] = random_values(rng, name, n // 4, -9, 10)       # small divisors, both signs
            b[b == 0] = -3
        else:
            b[: n // 4] = random_values(rng, name, n // 4, 1, 10)
    else:
        a, b = random_values(rng, name, n), random_values(rng, name, n)
        # No divisor near 0: a / b beyond fp16's range (a tiny b: one run in 40 at this n) rounds to
        # inf in the kernel where the float64 reference stays finite.
        b[np.abs(b.astype(np.float64)) < 0.125] = 0.5
    ncol = 15 if is_int else 8
    out, div, cmp = poison(n * ncol, name), poison(n, _result_float(name)), poison(n * 6, "bool")

    def ref(a, b, out, div, cmp, n):
        compare = np.stack([a < b, a <= b, a == b, a != b, a > b, a >= b], axis=1).reshape(-1)
        if is_int:
            o, d = _int_reference(name, a, b)
            return [o, d, compare]
        x, y = a.astype(np.float64), b.astype(np.float64)
        cols = [x + y, x - y, x * y, np.fmod(x, y), x + 3, -x, np.maximum(x, y), np.minimum(x, y)]
        return [np.stack(cols, axis=1).reshape(-1), x / y, compare]
    div_tol = (2 * EPS["float32"], 0) if is_int else _tol(name)
    return dict(kernel=arith_kernel, grid=(transpiler.cdiv(n, block),), args=[a, b, out, div, cmp, n],
                dtypes=[name, name, name, _result_float(name), "bool", None],
                constexprs=dict(IS_INT=is_int, NCOL=ncol, BLOCK=block), outputs=[2, 3, 4], reference=ref,
                tol=[_tol(name), div_tol, (0, 0)])


def case_bool(rng, n=1001, block=256):
    a, b = random_values(rng, "bool", n), random_values(rng, "bool", n)
    out = poison(n * 7, "int32")

    def ref(a, b, out, n):
        ai, bi = a.astype(np.int64), b.astype(np.int64)
        return [np.stack([ai & bi, ai | bi, ai ^ bi, ai == bi, ai != bi, ai < bi, ai + bi], axis=1).reshape(-1)]
    return dict(kernel=bool_kernel, grid=(transpiler.cdiv(n, block),), args=[a, b, out, n],
                dtypes=["bool", "bool", "int32", None], constexprs=dict(BLOCK=block), outputs=[2], reference=ref,
                tol=[(0, 0)])


# (a, b, Triton's type of a + b): C's rules on integer width and signedness; fp16 wins over anything but
# fp32/fp64 (bf16 too); bf16 stays bf16 only with bf16, else fp32.
PROMOTIONS = [
    ("int8", "int16", "int16"), ("int8", "uint8", "uint8"), ("int16", "uint8", "int16"),
    ("int32", "uint16", "int32"), ("uint32", "int32", "uint32"), ("int64", "uint32", "int64"),
    ("uint64", "int64", "uint64"), ("bool", "int8", "int8"), ("bool", "float16", "float16"),
    ("int32", "float16", "float16"), ("int64", "bfloat16", "float32"), ("float16", "bfloat16", "float16"),
    ("bfloat16", "bfloat16", "bfloat16"), ("float16", "float32", "float32"), ("float32", "float64", "float64"),
    ("uint8", "float64", "float64"), ("int16", "float32", "float32"),
]


def case_mixed(rng, a_name, b_name, out_name, n=1537, block=256):
    if a_name in FLOATS or b_name in FLOATS:
        # Integers small enough to be exact in any float type; the float operand random.
        a = random_values(rng, a_name, n, -60, 60) if a_name in INTS else random_values(rng, a_name, n)
        b = random_values(rng, b_name, n, -60, 60) if b_name in INTS else random_values(rng, b_name, n)
    else:
        a, b = random_values(rng, a_name, n), random_values(rng, b_name, n)
    out = poison(n, out_name)

    def ref(a, b, out, n):
        if out_name in FLOATS:
            return [a.astype(np.float64) + b.astype(np.float64)]
        return [wrap([x + y for x, y in zip(as_ints(a), as_ints(b))], out_name)]
    return dict(kernel=mixed_add_kernel, grid=(transpiler.cdiv(n, block),), args=[a, b, out, n],
                dtypes=[a_name, b_name, out_name, None], constexprs=dict(BLOCK=block), outputs=[2], reference=ref,
                tol=[_tol(out_name)], result_dtype=out_name)


def _cast_reference(x, src, dst):
    """x (host array of type src) converted to dst with C / Triton semantics, as float64 or exact ints."""
    if dst == "bool":
        return x != 0
    if dst in INTS:
        if src in FLOATS:
            v = np.trunc(np.abs(x) if dst.startswith("u") else x.astype(np.float64))
            return v.astype(dst)                                    # in range by construction: exact
        return wrap(as_ints(x), dst)                                # integer narrowing / sign change wraps
    exact = np.array(as_ints(x), np.float64) if src in INTS else x.astype(np.float64)
    if src in INTS and src.endswith("64"):
        exact = np.array([float(v) for v in as_ints(x)])            # nearest double of a 64-bit integer
    if dst == "bfloat16":
        with np.errstate(over="ignore"):
            return round_bf16(exact.astype(np.float32)).astype(np.float64)
    with np.errstate(over="ignore"):
        return exact.astype(dst).astype(np.float64)


def case_cast(rng, src, n=1025, block=256):
    if src in FLOATS:
        x = random_values(rng, src, n) * 10        # |x| < 100 or so: fits every integer type
        x = np.clip(x, -120, 120)
        x = round_bf16(x) if src == "bfloat16" else x.astype(src)
    else:
        x = random_values(rng, src, n)
    outs = [poison(n, d) for d in ALL]

    def ref(x, *rest):
        return [_cast_reference(x, src, d) for d in ALL]
    tols = []
    for d in ALL:
        if d in FLOATS:
            # Integers wider than the mantissa round once to float, then may round again (fp16/bf16).
            tols.append((2.5 * EPS[d], 0))
        else:
            tols.append((0, 0))
    return dict(kernel=cast_kernel, grid=(transpiler.cdiv(n, block),), args=[x] + outs + [n],
                dtypes=[src] + ALL + [None], constexprs=dict(SRC_FLOAT=src in FLOATS, BLOCK=block),
                outputs=list(range(1, 1 + len(ALL))), reference=ref, tol=tols)


def reduce_types(name):
    """Triton's result types of sum and of max/min: narrow integers sum in 32 bits (int1 counts as unsigned,
    as in Triton, so bools sum to uint32) and max/min widen narrow inputs to int32 / float32."""
    if name == "bool" or (name in INTS and np.dtype(name).itemsize < 4):
        sum_t = "uint32" if name == "bool" or name.startswith("u") else "int32"
    else:
        sum_t = name
    if name in FLOATS:
        minmax_t = "float32" if name in ("float16", "bfloat16") else name
    else:
        minmax_t = "int32" if name == "bool" or np.dtype(name).itemsize < 4 else name
    return sum_t, minmax_t


def case_reduce(rng, name, rows=7, n=1000, block=1024, num_warps=4):
    x = random_values(rng, name, rows * n)
    sum_t, mm_t = reduce_types(name)
    outs = [poison(rows, sum_t), poison(rows, mm_t), poison(rows, mm_t), poison(rows, "int32")]

    def ref(x, *rest):
        xr = x.reshape(rows, n)
        if name in FLOATS:
            s = xr.astype(np.float64).sum(1)
        else:
            s = wrap([sum(as_ints(r)) for r in xr], sum_t)
        mx = xr.max(1) if name != "bool" else xr.any(1)
        mn = xr.min(1) if name != "bool" else xr.all(1)
        return [s, mx, mn, np.argmax(xr, axis=1)]
    if name in FLOATS:
        # A sum of n terms: the accumulation error grows with n (fp32 accumulator for 16-bit floats).
        scale = float(np.abs(x.astype(np.float64)).reshape(rows, n).sum(1).max())
        acc_eps = EPS["float64" if name == "float64" else "float32"]
        sum_tol = (2 * EPS[sum_t], 2 * n * acc_eps * scale + 2 * EPS[sum_t])
    else:
        sum_tol = (0, 0)
    return dict(kernel=reduce_kernel, grid=(rows,), args=[x] + outs + [n],
                dtypes=[name, sum_t, mm_t, mm_t, "int32", None], constexprs=dict(BLOCK=block),
                outputs=[1, 2, 3, 4], reference=ref, tol=[sum_tol, (0, 0), (0, 0), (0, 0)], num_warps=num_warps)


def all_cases(rng):
    """[(id, case)] over every element type."""
    cases = [(f"copy_{d}", case_copy(rng, d)) for d in ALL]
    cases += [(f"arith_{d}", case_arith(rng, d)) for d in INTS + FLOATS]
    cases += [("logic_bool", case_bool(rng))]
    cases += [(f"add_{a}_{b}", case_mixed(rng, a, b, o)) for a, b, o in PROMOTIONS]
    cases += [(f"cast_from_{d}", case_cast(rng, d)) for d in ALL]
    cases += [(f"reduce_{d}", case_reduce(rng, d)) for d in ALL]
    cases += [("reduce_float32_8warps_rows4093", case_reduce(rng, "float32", rows=3, n=4093, block=4096,
                                                             num_warps=8)),
              ("reduce_int8_1warp_rows77", case_reduce(rng, "int8", rows=5, n=77, block=128, num_warps=1))]
    for _, case in cases:
        case["bf16"] = [i for i, d in enumerate(case["dtypes"]) if d == "bfloat16"]
    return cases


# ---------------------------------------------------------------------------------------------------------
# Running and checking
# ---------------------------------------------------------------------------------------------------------

def stand_in_args(case):
    """Host arguments for `cuda_source`: bf16 arrays replaced by float16 arrays of the same size."""
    return [a.astype(np.float16) if i in case["bf16"] else a for i, a in enumerate(case["args"])]


def bf16_override(case):
    names = case["kernel"].arg_names
    return {names[i]: "bf16" for i in case["bf16"]}


def check(case, outputs):
    """Compare outputs (host arrays: float64 for floats) with the reference; NaN means never written."""
    expected = case["reference"](*case["args"])
    for idx, exp, (rtol, atol) in zip(case["outputs"], expected, case["tol"]):
        got = np.asarray(outputs[idx])
        exp = np.asarray(exp).reshape(got.shape)
        what = f"output {case['kernel'].arg_names[idx]} ({case['dtypes'][idx]})"
        if got.dtype.kind == "f":
            assert not (np.isnan(got) & ~np.isnan(exp.astype(np.float64))).any(), f"{what}: unwritten elements"
            np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=what)
        else:
            bad = got != exp.astype(got.dtype)
            if bad.any():
                i = int(np.argmax(bad))
                raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} differ; at {i}: got {got.flat[i]}, "
                                     f"expected {exp.flat[i]}")
