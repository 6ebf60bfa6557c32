"""Random numbers: Triton's counter-based Philox generator, written in the language itself.

As in Triton, these functions are not builtins but language code (`core.helper`): the compiler inlines them
like `@transpile` helpers and the interpreter runs them as Python, so they need no typing, lowering or
interpreter rules of their own. Philox is uint32 (or uint64) multiplies, high halves (`tl.umulhi`), xors and
wrapping additions; the numbers are Triton's, bit for bit, for the same seed, offsets and `n_rounds`:

- `philox_impl(c0, c1, c2, c3, k0, k1)`: `n_rounds` rounds of Philox-4x32 (uint32 counters and key) or
  Philox-4x64 (uint64);
- `philox(seed, c0, c1, c2, c3)`: the key from an integer seed (its low and high 32 bits for 32-bit counters,
  the seed itself and 0 for 64-bit ones), counters reinterpreted as unsigned;
- `randint4x(seed, offset)`: four uint32 blocks from the counter (offset's low 32 bits, its high 32 bits or 0,
  0, 0); `randint` is the first of them;
- `uint_to_uniform_float(x)`: a uniform float32 in [0, 1) from 32 or 64 random bits; `rand`, `rand4x`;
- `pair_uniform_to_normal(u1, u2)`: two standard normal float32 from two uniforms (Box-Muller); `randn`,
  `randn4x`.

A seed is an integer (a kernel argument, a constexpr, a Python int, or a block of them); offsets are an
integer block or scalar, and each distinct (seed, offset) gives an independent stream.
"""
from __future__ import annotations

import transpiler.language as tl

from .core import constexpr, helper

N_ROUNDS_DEFAULT = constexpr(10)

# Counter width -> (the two key increments, the two round multipliers), from Salmon et al., "Parallel random
# numbers: as easy as 1, 2, 3" (SC'11): the increments are the golden ratio and sqrt(3) - 1 in fixed point.
_PHILOX_CONSTANTS = {
    32: (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57),
    64: (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157),
}

# Word width -> the largest scale whose product with the largest folded word, 2**(bits - 1) - 1, rounds below 1
# in float32 (the result is float32 for both widths).
_UNIFORM_SCALE = {32: 4.6566127342e-10, 64: 1.0842020432385337e-19}


@helper
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) with the key (k0, k1): all uint32 or all
    uint64. Returns the four mixed words."""
    tl.static_assert(c0.dtype == tl.uint32 or c0.dtype == tl.uint64,
                     "philox_impl needs uint32 or uint64 counters; use tl.philox for other integer types")
    KEY_STEP_0, KEY_STEP_1, MUL_0, MUL_1 = _PHILOX_CONSTANTS[c0.dtype.primitive_bitwidth]
    for _ in tl.static_range(n_rounds):
        # Each multiply gives its low half to one word and its high half, xored with the key, to another.
        c0, c1, c2, c3 = (tl.umulhi(MUL_1, c2) ^ c1 ^ k0, MUL_1 * c2,
                          tl.umulhi(MUL_0, c0) ^ c3 ^ k1, MUL_0 * c0)
        k0 = k0 + KEY_STEP_0
        k1 = k1 + KEY_STEP_1
    return c0, c1, c2, c3


@helper
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Philox of the counter (c0, c1, c2, c3), four integers of one width (32 or 64 bits, reinterpreted as
    unsigned), keyed by the integer `seed`."""
    seed = tl.core.to_tensor(seed)
    tl.static_assert(seed.dtype.is_int(), "the seed of a random stream must be an integer")
    seed = seed.to(tl.uint64)
    c0 = tl.core.to_tensor(c0)
    bits: tl.constexpr = c0.dtype.primitive_bitwidth
    if bits == 32:
        counter = tl.uint32
        k0 = seed.to(tl.uint32)
        k1 = (seed >> 32).to(tl.uint32)
    else:
        tl.static_assert(bits == 64, "Philox counters must be 32- or 64-bit integers")
        counter = tl.uint64
        k0 = seed
        k1 = tl.full((1,), 0, tl.uint64)
    c0 = c0.to(counter, bitcast=True)
    c1 = tl.core.to_tensor(c1).to(counter, bitcast=True)
    c2 = tl.core.to_tensor(c2).to(counter, bitcast=True)
    c3 = tl.core.to_tensor(c3).to(counter, bitcast=True)
    return philox_impl(c0, c1, c2, c3, k0, k1, n_rounds)


@helper
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for the integer `seed` and the integer `offset` block (or scalar)."""
    offset = tl.core.to_tensor(offset)
    low = offset.to(tl.uint32)
    zero = tl.zeros_like(low)
    if offset.dtype.primitive_bitwidth > 32:
        high = (offset >> 32).to(tl.uint32)
    else:
        high = zero
    return philox(seed, low, high, zero, zero, n_rounds)


@helper
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of random uint32 for the integer `seed` and the integer `offset` block (or scalar); the first
    of `randint4x`'s four."""
    r0, _, _, _ = randint4x(seed, offset, n_rounds)
    return r0


@helper
def uint_to_uniform_float(x):
    """Random 32- or 64-bit integers (any signedness) to float32 uniform in [0, 1)."""
    tl.static_assert(x.dtype.is_int() and (x.dtype.primitive_bitwidth == 32 or x.dtype.primitive_bitwidth == 64),
                     "uint_to_uniform_float needs 32- or 64-bit integers")
    if x.dtype.primitive_bitwidth == 32:
        x = x.to(tl.int32, bitcast=True)
    else:
        x = x.to(tl.int64, bitcast=True)
    # Fold the negative half onto the non-negative one (~x == -x - 1), then scale [0, 2**(bits-1)) into [0, 1).
    x = tl.where(x < 0, ~x, x)
    return x * _UNIFORM_SCALE[x.dtype.primitive_bitwidth]


@helper
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of random float32, uniform in [0, 1), for the integer `seed` and `offset` block (or scalar)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@helper
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random float32, uniform in [0, 1), from one Philox call."""
    r0, r1, r2, r3 = randint4x(seed, offsets, n_rounds)
    u0 = uint_to_uniform_float(r0)
    u1 = uint_to_uniform_float(r1)
    u2 = uint_to_uniform_float(r2)
    u3 = uint_to_uniform_float(r3)
    return u0, u1, u2, u3


@helper
def pair_uniform_to_normal(u1, u2):
    """Two independent standard normal float32 blocks from two uniform ones (Box-Muller)."""
    u1 = tl.maximum(1.0e-7, u1)     # log(0) would be -inf
    theta = 6.283185307179586 * u2
    radius = tl.sqrt(-2.0 * tl.log(u1))
    return radius * tl.cos(theta), radius * tl.sin(theta)


@helper
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of random float32, standard normal, for the integer `seed` and `offset` block (or scalar)."""
    r0, r1, _, _ = randint4x(seed, offset, n_rounds)
    n0, _ = pair_uniform_to_normal(uint_to_uniform_float(r0), uint_to_uniform_float(r1))
    return n0


@helper
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random float32, standard normal, from one Philox call."""
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3
