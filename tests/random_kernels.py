"""Kernels that draw random numbers (`tl.randint`, `tl.rand`, `tl.randn`, their 4x forms, `tl.philox`), and an
independent NumPy Philox to check them against.

Shared by the CPU tests (the interpreter against NumPy, NVRTC and PTX checks), the GPU tests (compiled against
NumPy, and against Triton's own build of this very file, which `bench/twins.py` loads a second time with
`transpiler` standing for Triton) and the feature cases of `tests/feature_kernels.py`. So it uses only the
Triton dialect: the kernels compile unchanged under `triton.jit`.

The reference follows the Philox-4x32 / 4x64 definition (Salmon et al., SC'11; checked against Random123's
known-answer vectors in tests/test_random.py) and Triton's documented use of it: the key is the seed's low and
high 32 bits, the counter is (offset low 32 bits, offset high 32 bits or 0, 0, 0), a uniform float is the
32 random bits read as int32, folded onto [0, 2**31) and scaled, and normals come from Box-Muller.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def randint_kernel(OFFSETS, OUT, seed, N, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """OUT[i] = (randint, randint4x's four) for the offset OFFSETS[i]."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    offsets = tl.load(OFFSETS + i, mask=m, other=0)
    tl.store(OUT + i * 5, tl.randint(seed, offsets, N_ROUNDS), mask=m)
    r0, r1, r2, r3 = tl.randint4x(seed, offsets, N_ROUNDS)
    tl.store(OUT + i * 5 + 1, r0, mask=m)
    tl.store(OUT + i * 5 + 2, r1, mask=m)
    tl.store(OUT + i * 5 + 3, r2, mask=m)
    tl.store(OUT + i * 5 + 4, r3, mask=m)


@transpiler.jit
def uniform_kernel(OFFSETS, OUT, seed, N, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """OUT[i] = (rand, rand4x's four) for the offset OFFSETS[i]."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    offsets = tl.load(OFFSETS + i, mask=m, other=0)
    tl.store(OUT + i * 5, tl.rand(seed, offsets, N_ROUNDS), mask=m)
    u0, u1, u2, u3 = tl.rand4x(seed, offsets, N_ROUNDS)
    tl.store(OUT + i * 5 + 1, u0, mask=m)
    tl.store(OUT + i * 5 + 2, u1, mask=m)
    tl.store(OUT + i * 5 + 3, u2, mask=m)
    tl.store(OUT + i * 5 + 4, u3, mask=m)


@transpiler.jit
def normal_kernel(OFFSETS, OUT, seed, N, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """OUT[i] = (randn, randn4x's four) for the offset OFFSETS[i]."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    offsets = tl.load(OFFSETS + i, mask=m, other=0)
    tl.store(OUT + i * 5, tl.randn(seed, offsets, N_ROUNDS), mask=m)
    n0, n1, n2, n3 = tl.randn4x(seed, offsets, N_ROUNDS)
    tl.store(OUT + i * 5 + 1, n0, mask=m)
    tl.store(OUT + i * 5 + 2, n1, mask=m)
    tl.store(OUT + i * 5 + 3, n2, mask=m)
    tl.store(OUT + i * 5 + 4, n3, mask=m)


@transpiler.jit
def scalar_offset_kernel(BITS, UNIFORM, NORMAL, seed):
    """One number of each kind per program, the program id as a scalar offset."""
    pid = tl.program_id(0)
    tl.store(BITS + pid, tl.randint(seed, pid))
    tl.store(UNIFORM + pid, tl.rand(seed, pid))
    tl.store(NORMAL + pid, tl.randn(seed, pid))


@transpiler.jit
def constexpr_seed_kernel(OUT, N, SEED: tl.constexpr, BLOCK: tl.constexpr):
    """tl.rand with a compile-time seed and the element index as offset."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(OUT + offsets, tl.rand(SEED, offsets), mask=offsets < N)


@transpiler.jit
def philox_impl_kernel(COUNTERS, KEYS, OUT, N, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """OUT[i] = philox_impl(COUNTERS[i], KEYS[i]) (four and two words per row, uint32 or uint64)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    c0 = tl.load(COUNTERS + i * 4, mask=m)
    c1 = tl.load(COUNTERS + i * 4 + 1, mask=m)
    c2 = tl.load(COUNTERS + i * 4 + 2, mask=m)
    c3 = tl.load(COUNTERS + i * 4 + 3, mask=m)
    k0 = tl.load(KEYS + i * 2, mask=m)
    k1 = tl.load(KEYS + i * 2 + 1, mask=m)
    r0, r1, r2, r3 = tl.philox_impl(c0, c1, c2, c3, k0, k1, N_ROUNDS)
    tl.store(OUT + i * 4, r0, mask=m)
    tl.store(OUT + i * 4 + 1, r1, mask=m)
    tl.store(OUT + i * 4 + 2, r2, mask=m)
    tl.store(OUT + i * 4 + 3, r3, mask=m)


@transpiler.jit
def philox_kernel(COUNTERS, OUT, seed, N, BLOCK: tl.constexpr):
    """OUT[i] = philox(seed, COUNTERS[i]) for counters of any 32- or 64-bit integer type."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    c0 = tl.load(COUNTERS + i * 4, mask=m)
    c1 = tl.load(COUNTERS + i * 4 + 1, mask=m)
    c2 = tl.load(COUNTERS + i * 4 + 2, mask=m)
    c3 = tl.load(COUNTERS + i * 4 + 3, mask=m)
    r0, r1, r2, r3 = tl.philox(seed, c0, c1, c2, c3)
    tl.store(OUT + i * 4, r0, mask=m)
    tl.store(OUT + i * 4 + 1, r1, mask=m)
    tl.store(OUT + i * 4 + 2, r2, mask=m)
    tl.store(OUT + i * 4 + 3, r3, mask=m)


@transpiler.jit
def dropout_kernel(X, OUT, N, p, seed, BLOCK: tl.constexpr):
    """Triton's low-memory dropout tutorial: the mask is regenerated from (seed, offset), never stored."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < N
    x = tl.load(X + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    keep = random > p
    out = tl.where(keep, x / (1 - p), 0.0)
    tl.store(OUT + offsets, out, mask=mask)


# ---------------------------------------------------------------------------------------------------------
# The NumPy reference
# ---------------------------------------------------------------------------------------------------------

# Counter width -> (key increments, round multipliers) of Philox (Random123's PHILOX_W*/PHILOX_M* constants).
PHILOX_CONSTANTS = {
    32: ((0x9E3779B9, 0xBB67AE85), (0xD2511F53, 0xCD9E8D57)),
    64: ((0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B), (0xD2E7470EE14C6C93, 0xCA5A826395121157)),
}


def philox_reference(counters, keys, n_rounds=10, bits=32):
    """Philox-4xW of each row of `counters` (shape [n, 4]) with the key in the same row of `keys` ([n, 2]), as
    unsigned integers of `bits` bits; returns an [n, 4] array of uint32 or uint64. Python integers, so the
    products are exact before they are split into halves."""
    mask = (1 << bits) - 1
    (w0, w1), (m0, m1) = PHILOX_CONSTANTS[bits]
    out = []
    for (c0, c1, c2, c3), (k0, k1) in zip(_rows(counters), _rows(keys)):
        c0, c1, c2, c3, k0, k1 = (int(v) & mask for v in (c0, c1, c2, c3, k0, k1))
        for _ in range(n_rounds):
            p0, p1 = m0 * c0, m1 * c2
            c0, c1, c2, c3 = (p1 >> bits) ^ c1 ^ k0, p1 & mask, (p0 >> bits) ^ c3 ^ k1, p0 & mask
            k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
        out.append((c0, c1, c2, c3))
    return np.array(out, dtype=np.uint32 if bits == 32 else np.uint64).reshape(-1, 4)


def _rows(table):
    """Rows of Python ints (NumPy would turn a list mixing ints below and above 2**63 into floats)."""
    return table.tolist() if isinstance(table, np.ndarray) else [list(row) for row in table]


def randint4x_reference(seed, offsets, n_rounds=10):
    """The four uint32 words `tl.randint4x(seed, offsets)` gives, as an [n, 4] array."""
    offsets = np.asarray(offsets).reshape(-1)
    wide = offsets.dtype.itemsize > 4
    as_int = [int(o) for o in offsets.tolist()]
    counters = [(o & 0xFFFFFFFF, (o >> 32) & 0xFFFFFFFF if wide else 0, 0, 0) for o in as_int]
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    keys = [(seed & 0xFFFFFFFF, seed >> 32)] * len(as_int)
    return philox_reference(counters, keys, n_rounds, 32)


def uniform_reference(words):
    """uint32 words to float32 in [0, 1): read as int32, negative x becomes -x - 1, times 4.6566127342e-10."""
    x = np.asarray(words, dtype=np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def normal_reference(u1, u2):
    """Box-Muller of two float32 uniform arrays, in float64 from the float32 angle the kernel computes."""
    u1 = np.maximum(np.float32(1e-7), np.asarray(u1, np.float32)).astype(np.float64)
    theta = (np.float32(6.283185307179586) * np.asarray(u2, np.float32)).astype(np.float64)
    radius = np.sqrt(-2.0 * np.log(u1))
    return radius * np.cos(theta), radius * np.sin(theta)


def expected_columns(kind, seed, offsets, n_rounds=10):
    """The [n, 5] array randint_kernel / uniform_kernel / normal_kernel should write."""
    words = randint4x_reference(seed, offsets, n_rounds)
    if kind == "randint":
        return np.concatenate([words[:, :1], words], axis=1)
    uniform = uniform_reference(words)
    if kind == "uniform":
        return np.concatenate([uniform[:, :1], uniform], axis=1)
    n0, n1 = normal_reference(uniform[:, 0], uniform[:, 1])
    n2, n3 = normal_reference(uniform[:, 2], uniform[:, 3])
    return np.stack([n0, n0, n1, n2, n3], axis=1)


def random_offsets(rng, n, np_dtype):
    """`n` offsets spread over the whole range of `np_dtype` (negative ones and ones above 2**32 included)."""
    info = np.iinfo(np_dtype)
    return rng.integers(info.min, info.max, n, dtype=np_dtype, endpoint=True)


# ---------------------------------------------------------------------------------------------------------
# Feature cases (see tests/feature_kernels.py for the format)
# ---------------------------------------------------------------------------------------------------------

_KERNELS = {"randint": (randint_kernel, np.uint32), "uniform": (uniform_kernel, np.float32),
            "normal": (normal_kernel, np.float32)}


def case_random(rng, kind, offset_dtype=np.int32, n=1000, block=256, n_rounds=10):
    """`kind` numbers for random offsets of `offset_dtype` and a random seed; bits and uniforms exactly."""
    kernel, out_dtype = _KERNELS[kind]
    offsets = random_offsets(rng, n, offset_dtype)
    seed = int(rng.integers(-2**31, 2**31))
    out = np.full((n, 5), np.nan if out_dtype == np.float32 else 0xDEADBEEF, dtype=out_dtype)

    def ref(offsets, out, seed, n):
        return [expected_columns(kind, seed, offsets, n_rounds)]
    exact = kind != "normal"
    return dict(kernel=kernel, grid=(-(-n // block),), args=[offsets, out, seed, n],
                constexprs=dict(N_ROUNDS=n_rounds, BLOCK=block), outputs=[1], reference=ref,
                rtol=0 if exact else 1e-5, atol=0 if exact else 1e-6)


def case_dropout(rng, n=3001, block=1024, p=0.3):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    seed = int(rng.integers(0, 2**31))

    def ref(x, out, n, p, seed):
        keep = uniform_reference(randint4x_reference(seed, np.arange(n, dtype=np.int32))[:, 0]) > np.float32(p)
        return [np.where(keep, x.astype(np.float64) / np.float64(np.float32(1) - np.float32(p)), 0.0)]
    return dict(kernel=dropout_kernel, grid=(-(-n // block),), args=[x, out, n, p, seed],
                constexprs=dict(BLOCK=block), outputs=[1], reference=ref, rtol=2e-6, atol=0)


def random_cases(rng):
    return [("random_randint_int32", case_random(rng, "randint")),
            ("random_randint_int64", case_random(rng, "randint", np.int64, n=777, block=128)),
            ("random_uniform_uint64", case_random(rng, "uniform", np.uint64)),
            ("random_normal_int32", case_random(rng, "normal", n=1500, block=512)),
            ("random_randint_7_rounds", case_random(rng, "randint", np.uint32, n=300, block=128, n_rounds=7)),
            ("random_dropout", case_dropout(rng))]
