"""Kernels that use atomics, each with a case builder and a check against a NumPy float64 reference.

Shared by the CPU tests (NVRTC compile of every kernel, the interpreter against NumPy) and the GPU tests
(compiled results against NumPy on fresh random inputs). A case is a dict: `kernel`, `grid`, `args` (NumPy
arrays and scalars; memory the atomics update starts from random values, plain outputs are poisoned),
`constexprs`, `num_warps`, and `check(args_before, args_after)`, which raises AssertionError. Results that
depend on the order in which programs run (which program wins a compare-and-swap, the old values a program
sees) are checked by what every order must give: one winner, the old values a permutation of the counts.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

# ---------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def histogram_kernel(X, HIST, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    bins = tl.load(X + offs, mask=m)
    tl.atomic_add(HIST + bins, 1, mask=m)


@transpiler.jit
def split_sum_kernel(X, TOTAL, COUNT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    tl.atomic_add(TOTAL, tl.sum(x, axis=0))
    tl.atomic_add(COUNT, 1, sem="relaxed")       # a scalar atomic: once per program, whatever num_warps


@transpiler.jit
def minmax_kernel(X, MAX, MIN, N, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.atomic_max(MAX + offs % SLOTS, x, mask=m)
    tl.atomic_min(MIN + offs % SLOTS, x, mask=m, sem="relaxed", scope="gpu")


@transpiler.jit
def first_writer_kernel(OWNER, WON, SLOTS: tl.constexpr):
    pid = tl.program_id(0)
    slots = tl.arange(0, SLOTS)
    # Every program claims every slot; a slot keeps the first claim (EMPTY = -1).
    old = tl.atomic_cas(OWNER + slots, -1, pid)
    tl.store(WON + pid * SLOTS + slots, (old == -1).to(tl.int32))
    first = tl.atomic_cas(OWNER + SLOTS, -1, pid, sem="acquire")
    tl.store(WON + tl.num_programs(0) * SLOTS + pid, (first == -1).to(tl.int32))


@transpiler.jit
def xchg_kernel(P, X, OLD, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    old = tl.atomic_xchg(P + offs, tl.load(X + offs, mask=m), mask=m)
    tl.store(OLD + offs, old, mask=m)


@transpiler.jit
def add_kernel(P, X, N, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.atomic_add(P + offs % SLOTS, tl.load(X + offs, mask=m), mask=m, sem="relaxed")


@transpiler.jit
def bitwise_kernel(AND, OR, XOR, X, N, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    slot = offs % SLOTS
    tl.atomic_and(AND + slot, x, mask=m)
    tl.atomic_or(OR + slot, x, mask=m, scope="cta")
    (XOR + slot).atomic_xor(x, mask=m)


@transpiler.jit
def tickets_kernel(COUNTER, ROWS, CTR, SLOTS_OLD, BLOCK: tl.constexpr, SLOTS: tl.constexpr):
    pid = tl.program_id(0)
    # A scalar atomic whose old value every thread uses: row `ticket` of ROWS gets this program's row.
    ticket = tl.atomic_add(COUNTER, 1)
    cols = tl.arange(0, BLOCK)
    tl.store(ROWS + ticket * BLOCK + cols, pid * BLOCK + cols)
    # A block smaller than the program (lanes and warps hold copies): each counter moves by one per program,
    # and every thread sees the old values, here broadcast over a [SLOTS, BLOCK] block.
    old = tl.atomic_add(CTR + tl.arange(0, SLOTS), 1)
    grid = old[:, None] + tl.zeros([SLOTS, BLOCK], tl.int32)
    tl.store(SLOTS_OLD + pid * SLOTS * BLOCK + tl.arange(0, SLOTS)[:, None] * BLOCK + cols[None, :], grid)


@transpiler.jit
def loop_counter_kernel(COUNTER, SEEN, STEPS):
    pid = tl.program_id(0)
    total = 0
    for i in range(STEPS):
        total += tl.atomic_add(COUNTER, 1, sem="acq_rel", scope="gpu")
    tl.store(SEEN + pid, total)


@transpiler.jit
def spin_lock_kernel(LOCK, COUNTER, ORDER):
    # A critical section: plain loads and stores under a lock taken by compare-and-swap (acquire) and given
    # back by exchange (release); the count is exact only if one program at a time is inside.
    while tl.atomic_cas(LOCK, 0, 1, sem="acquire") != 0:
        pass
    count = tl.load(COUNTER)
    tl.store(ORDER + count, tl.program_id(0))
    tl.store(COUNTER, count + 1)
    tl.atomic_xchg(LOCK, 0, sem="release")


# ---------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------

def _poison(shape, dtype):
    out = np.empty(shape, dtype)
    if np.dtype(dtype).kind == "f":
        out.fill(np.nan)
    else:
        out.fill(np.iinfo(dtype).min + 7)
    return out


def case_histogram(rng, n=3001, bins=37, block=1024, num_warps=4):
    x = rng.integers(0, bins, n).astype(np.int32)
    hist = rng.integers(1, 100, bins).astype(np.int32)

    def check(before, after):
        np.testing.assert_array_equal(after[1], before[1] + np.bincount(before[0], minlength=bins))
    return dict(kernel=histogram_kernel, grid=(transpiler.cdiv(n, block),), args=[x, hist, n],
                constexprs=dict(BLOCK=block), num_warps=num_warps, check=check)


def case_split_sum(rng, dtype=np.float32, n=5000, block=512, num_warps=4):
    x = rng.standard_normal(n).astype(dtype)
    total = np.array([rng.standard_normal()], dtype)
    count = np.array([rng.integers(1, 1000)], np.int32)
    programs = transpiler.cdiv(n, block)
    tol = 1e-4 if dtype == np.float32 else 1e-11

    def check(before, after):
        expected = before[1].astype(np.float64) + before[0].astype(np.float64).sum()
        np.testing.assert_allclose(after[1].astype(np.float64), expected, rtol=tol, atol=tol * np.sqrt(n))
        np.testing.assert_array_equal(after[2], before[2] + programs)
    return dict(kernel=split_sum_kernel, grid=(programs,), args=[x, total, count, n],
                constexprs=dict(BLOCK=block), num_warps=num_warps, check=check)


def case_minmax(rng, dtype=np.int32, n=2000, slots=16, block=256, num_warps=4):
    if np.dtype(dtype).kind == "f":
        x = (rng.standard_normal(n) * 100).astype(dtype)
        start = (rng.standard_normal((2, slots)) * 10).astype(dtype)
    else:
        x = rng.integers(-1000, 1000, n).astype(dtype)
        start = rng.integers(-100, 100, (2, slots)).astype(dtype)
    mx, mn = start[0].copy(), start[1].copy()

    def check(before, after):
        x, mx, mn = before[0], before[1], before[2]
        cols = x[:n // slots * slots].reshape(-1, slots)
        tail = x[n // slots * slots:]
        ref_max, ref_min = np.maximum(mx, cols.max(0)), np.minimum(mn, cols.min(0))
        ref_max[:len(tail)] = np.maximum(ref_max[:len(tail)], tail)
        ref_min[:len(tail)] = np.minimum(ref_min[:len(tail)], tail)
        np.testing.assert_array_equal(after[1], ref_max)
        np.testing.assert_array_equal(after[2], ref_min)
    return dict(kernel=minmax_kernel, grid=(transpiler.cdiv(n, block),), args=[x, mx, mn, n],
                constexprs=dict(SLOTS=slots, BLOCK=block), num_warps=num_warps, check=check)


def case_first_writer(rng, programs=40, slots=64, num_warps=4):
    owner = np.full(slots + 1, -1, np.int32)
    won = _poison(programs * slots + programs, np.int32)

    def check(before, after):
        owner, won = after[0], after[1]
        per_slot = won[:programs * slots].reshape(programs, slots)
        np.testing.assert_array_equal(per_slot.sum(0), np.ones(slots))       # one winner per slot
        np.testing.assert_array_equal(per_slot.argmax(0), owner[:slots])     # ... the one recorded
        first = won[programs * slots:]
        assert first.sum() == 1 and first.argmax() == owner[slots], (first, owner[slots])
    return dict(kernel=first_writer_kernel, grid=(programs,), args=[owner, won], constexprs=dict(SLOTS=slots),
                num_warps=num_warps, check=check)


def case_xchg(rng, dtype=np.float32, n=1500, block=256, num_warps=4):
    p = rng.standard_normal(n + 5).astype(dtype)
    x = rng.standard_normal(n).astype(dtype)
    old = _poison(n, dtype)

    def check(before, after):
        np.testing.assert_array_equal(after[0][:n], before[1])
        np.testing.assert_array_equal(after[0][n:], before[0][n:])    # past N, masked off: untouched
        np.testing.assert_array_equal(after[2], before[0][:n])
    return dict(kernel=xchg_kernel, grid=(transpiler.cdiv(n, block),), args=[p, x, old, n],
                constexprs=dict(BLOCK=block), num_warps=num_warps, check=check)


def case_add(rng, dtype=np.float16, n=3000, slots=32, block=512, num_warps=4):
    # Small integers: every partial sum is exact in fp16, so the order of the additions does not matter.
    x = rng.integers(-4, 5, n).astype(dtype)
    p = rng.integers(-50, 50, slots).astype(dtype)
    # (unsigned types wrap the negative numbers; their sums wrap alike)

    def check(before, after):
        ref = before[0].copy()
        np.add.at(ref, np.arange(n) % slots, before[1])     # in the element type: integers wrap alike
        np.testing.assert_array_equal(after[0], ref)
    return dict(kernel=add_kernel, grid=(transpiler.cdiv(n, block),), args=[p, x, n],
                constexprs=dict(SLOTS=slots, BLOCK=block), num_warps=num_warps, check=check)


def case_bitwise(rng, dtype=np.uint32, n=1000, slots=8, block=128, num_warps=4):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    starts = rng.integers(info.min, info.max, (3, slots), dtype=dtype, endpoint=True)
    # AND starts with most bits set and OR with few, so neither saturates.
    a, o, xr = starts[0] | dtype(0x7FFF0000), starts[1] & dtype(0x00FF), starts[2].copy()

    def check(before, after):
        a, o, xr, x = (v.copy() for v in before[:4])
        for i in range(n):
            a[i % slots] &= x[i]
            o[i % slots] |= x[i]
            xr[i % slots] ^= x[i]
        for got, exp in zip(after[:3], (a, o, xr)):
            np.testing.assert_array_equal(got, exp)
    return dict(kernel=bitwise_kernel, grid=(transpiler.cdiv(n, block),), args=[a, o, xr, x, n],
                constexprs=dict(SLOTS=slots, BLOCK=block), num_warps=num_warps, check=check)


def case_tickets(rng, programs=24, block=512, slots=16, num_warps=4):
    counter = np.array([rng.integers(0, 5)], np.int32)
    start = int(counter[0])
    rows = _poison((start + programs) * block, np.int32)
    ctr = rng.integers(0, 1000, slots).astype(np.int32)
    slots_old = _poison(programs * slots * block, np.int32)

    def check(before, after):
        assert after[0][0] == start + programs
        got = after[1].reshape(-1, block)[start:]
        np.testing.assert_array_equal(got - got[:, :1], np.arange(block)[None, :].repeat(programs, 0))
        np.testing.assert_array_equal(np.sort(got[:, 0]), np.arange(programs) * block)   # one ticket each
        np.testing.assert_array_equal(after[2], before[2] + programs)
        seen = after[3].reshape(programs, slots, block)
        assert (seen == seen[:, :, :1]).all(), "threads saw different old values"
        expected = before[2][None, :] + np.arange(programs)[:, None]
        np.testing.assert_array_equal(np.sort(seen[:, :, 0], axis=0), expected)
    return dict(kernel=tickets_kernel, grid=(programs,), args=[counter, rows, ctr, slots_old],
                constexprs=dict(BLOCK=block, SLOTS=slots), num_warps=num_warps, check=check)


def case_loop_counter(rng, programs=12, steps=5, num_warps=4):
    counter = np.array([rng.integers(0, 100)], np.int32)
    seen = _poison(programs, np.int32)
    c0 = int(counter[0])

    def check(before, after):
        assert after[0][0] == c0 + programs * steps
        # Every ticket c0 .. c0 + programs * steps - 1 went to exactly one step: the totals add up.
        assert after[1].sum() == sum(range(c0, c0 + programs * steps))
    return dict(kernel=loop_counter_kernel, grid=(programs,), args=[counter, seen, steps], constexprs={},
                num_warps=num_warps, check=check)


def case_spin_lock(rng, programs=64, num_warps=4):
    lock = np.zeros(1, np.int32)
    counter = np.array([rng.integers(1, 50)], np.int32)
    c0 = int(counter[0])
    order = _poison(c0 + programs, np.int32)

    def check(before, after):
        assert after[0][0] == 0 and after[1][0] == c0 + programs, (after[0], after[1])
        np.testing.assert_array_equal(np.sort(after[2][c0:]), np.arange(programs))
    return dict(kernel=spin_lock_kernel, grid=(programs,), args=[lock, counter, order], constexprs={},
                num_warps=num_warps, check=check)


def all_cases(rng):
    """Every atomic case, with an id."""
    return [
        ("histogram", case_histogram(rng)), ("histogram_8warps", case_histogram(rng, block=256, num_warps=8)),
        ("split_sum_fp32", case_split_sum(rng)), ("split_sum_fp64_8warps", case_split_sum(rng, np.float64,
                                                                                         num_warps=8)),
        ("split_sum_1warp", case_split_sum(rng, num_warps=1)),
        ("minmax_int32", case_minmax(rng)), ("minmax_fp32", case_minmax(rng, np.float32)),
        ("minmax_uint32", case_minmax(rng, np.uint32)), ("minmax_int64", case_minmax(rng, np.int64)),
        ("minmax_fp64", case_minmax(rng, np.float64)),
        ("first_writer", case_first_writer(rng)), ("first_writer_8warps", case_first_writer(rng, num_warps=8)),
        ("xchg_fp32", case_xchg(rng)), ("xchg_int64", case_xchg(rng, np.int64)),
        ("add_fp16", case_add(rng)), ("add_fp32", case_add(rng, np.float32)), ("add_fp64", case_add(rng, np.float64)),
        ("add_int32", case_add(rng, np.int32)), ("add_uint64", case_add(rng, np.uint64)),
        ("bitwise_uint32", case_bitwise(rng)), ("bitwise_int64", case_bitwise(rng, np.int64)),
        ("tickets", case_tickets(rng)), ("tickets_8warps", case_tickets(rng, block=1024, num_warps=8)),
        ("loop_counter", case_loop_counter(rng)), ("spin_lock", case_spin_lock(rng)),
    ]
