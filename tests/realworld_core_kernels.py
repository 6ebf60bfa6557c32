"""Small kernels, written as Triton users write them, that reduce defects found by running public real-world
Triton kernels (issue 13's core-language part) through both paths. Each case uses the format of
`tests/feature_kernels.py` (`kernel`, `grid`, `args`, `constexprs`, `outputs`, `reference`, `rtol`, `atol`);
`tests/test_realworld_core.py` interprets and compiles them, `tests/test_gpu_realworld_core.py` runs them on the
GPU against NumPy and against Triton on this same source.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl
import transpiler.language.core as core
from feature_kernels import _poison


def _cdiv(a, b):
    return (a + b - 1) // b


# ---- a combine function that branches on its scalar arguments, reached through `tl.core` -----------------

@transpiler.jit
def _smaller(a, b):
    if a <= b:
        return a
    else:
        return b


@transpiler.jit
@core._add_scan_docstr("running_min")
def running_min(x, axis=0):
    x = core._promote_reduction_input(x)
    return core.associative_scan(x, axis, _smaller)


@transpiler.jit
def _larger_then_index(v1, i1, v2, i2):
    if v1 > v2:
        return v1, i1
    elif v1 == v2:
        return v1, tl.minimum(i1, i2)
    return v2, i2


@transpiler.jit
def running_min_3d_kernel(X, Y, ROWMAX, ROWARG, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    offsets = rows[:, None, None] * N * K + cols[None, :, None] * K + pid_k
    mask = rows[:, None, None] < M and cols[None, :, None] < N          # `and` of blocks is elementwise
    x = tl.load(X + offsets, mask=mask, other=float("inf")).to(tl.float32)
    tl.store(Y + offsets, running_min(x, axis=1), mask=mask)
    # a tuple tl.reduce whose combine_fn returns from several branches
    index = tl.broadcast_to(cols[None, :, None], (BLOCK_M, BLOCK_N, 1))
    big, arg = tl.reduce((tl.where(mask, x, -float("inf")), index), 1, _larger_then_index)
    out = rows[:, None] * K + pid_k
    outside = rows[:, None] >= M or pid_k >= K          # `or` and `not` of blocks too
    keep = not outside
    tl.store(ROWMAX + out, big, mask=keep)
    tl.store(ROWARG + out, arg, mask=keep)


def case_running_min_3d(rng, m=5, n=37, k=3, block_m=4, dtype=np.float16):
    x = rng.standard_normal((m, n, k)).astype(dtype)
    x[1, 7, :] = x[1, 20, :]                 # ties: the first index wins
    x[1, 20, :] = np.float16(9.0)
    x[2, 3, :] = x[2, 30, :] = np.float16(9.0)

    def reference(x, y, rowmax, rowarg, *_):
        xf = x.astype(np.float32)
        return [np.minimum.accumulate(xf, axis=1), xf.max(axis=1), xf.argmax(axis=1).astype(np.int32)]
    return dict(kernel=running_min_3d_kernel, grid=(_cdiv(m, block_m), k),
                args=[x, _poison((m, n, k), np.float32), _poison((m, k), np.float32), _poison((m, k), np.int32),
                      m, n, k],
                constexprs=dict(BLOCK_M=block_m, BLOCK_N=64), outputs=[1, 2, 3], reference=reference,
                rtol=0, atol=0)


# ---- `.value` of a helper's compile-time arguments (Triton wraps them in tl.constexpr) ----------------------

@transpiler.jit
def _lowest(dtype):
    dtype_ = dtype.value
    if dtype_.is_floating():
        value: tl.constexpr = float("-inf")
        return value
    if dtype_.is_int_signed():
        width: tl.constexpr = dtype_.int_bitwidth
        value: tl.constexpr = -1 * 2 ** (width - 1)
        return value
    value: tl.constexpr = 0
    return value


@transpiler.jit
def _scaled_block(x, scale):
    return x * scale.value


@transpiler.jit
def block_max_kernel(X, OUT_MAX, OUT_ARG, N, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=_lowest(X.type.element_ty))
    big, arg = tl.max(x, axis=0, return_indices=True)
    tl.store(OUT_MAX + pid, _scaled_block(big, SCALE))
    tl.store(OUT_ARG + pid, arg + pid * BLOCK)


def case_block_max(rng, dtype, n=1000, block=128):
    if np.dtype(dtype).kind == "f":
        x = (-np.abs(rng.standard_normal(n)) - 1).astype(dtype)     # all below zero: `other` must be -inf
    else:
        x = rng.integers(np.iinfo(dtype).min, 0, n).astype(dtype)
    programs = _cdiv(n, block)

    def reference(x, *_):
        padded = np.full(programs * block, x.min(), x.dtype)
        padded[:n] = x
        rows = padded.reshape(programs, block)
        return [rows.max(1) * 3, (rows.argmax(1) + np.arange(programs) * block).astype(np.int32)]
    return dict(kernel=block_max_kernel, grid=(programs,),
                args=[x, _poison(programs, dtype), _poison(programs, np.int32), n],
                constexprs=dict(SCALE=3, BLOCK=block), outputs=[1, 2], reference=reference, rtol=0, atol=0)


# ---- tl.sort, tl.topk, tl.gather, tl.histogram ------------------------------------------------------------

@transpiler.jit
def sort_rows_kernel(X, SORTED, ROWS, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, DESCENDING: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < ROWS) & (cols[None, :] < N)
    pad = -float("inf") if DESCENDING else float("inf")     # padding sorts to the end of each row
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=mask, other=pad)
    tl.store(SORTED + rows[:, None] * N + cols[None, :], tl.sort(x, descending=DESCENDING), mask=mask)


def case_sort_rows(rng, descending, dtype=np.float32, rows=6, n=50, block_r=4):
    x = rng.standard_normal((rows, n)).astype(dtype)
    x[0, :10] = x[0, 10:20]                  # ties

    def reference(x, *_):
        up = np.sort(x.astype(np.float64), axis=1)
        return [up[:, ::-1] if descending else up]
    return dict(kernel=sort_rows_kernel, grid=(_cdiv(rows, block_r),), args=[x, _poison((rows, n), dtype), rows, n],
                constexprs=dict(BLOCK_R=block_r, BLOCK_N=64, DESCENDING=descending), outputs=[1],
                reference=reference, rtol=0, atol=0)


@transpiler.jit
def top_rows_kernel(X, TOP, ROWS, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < ROWS) & (cols[None, :] < N),
                other=-float("inf"))
    tl.store(TOP + rows[:, None] * K + tl.arange(0, K)[None, :], x.topk(K), mask=rows[:, None] < ROWS)


def case_top_rows(rng, rows=6, n=50, block_r=4, k=8):
    x = rng.standard_normal((rows, n)).astype(np.float32)
    x[1, :5] = x[1, 5]                       # ties among the largest

    def reference(x, *_):
        return [np.sort(x.astype(np.float64), axis=1)[:, ::-1][:, :k]]
    # tl.topk is in Triton's recent releases only (standard.py's sort_impl with k): comparing needs it there
    return dict(kernel=top_rows_kernel, grid=(_cdiv(rows, block_r),), args=[x, _poison((rows, k), np.float32), rows, n],
                constexprs=dict(BLOCK_R=block_r, BLOCK_N=64, K=k), outputs=[1], reference=reference, rtol=0, atol=0,
                triton_needs=("topk",))


@transpiler.jit
def sort_keys_kernel(KEYS, OUT, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    keys = tl.load(KEYS + offs, mask=offs < N, other=2147483647)
    tl.store(OUT + offs, tl.sort(keys), mask=offs < N)


def case_sort_keys(rng, n=200, block=256):
    keys = rng.integers(-1000, 1000, n).astype(np.int32)
    return dict(kernel=sort_keys_kernel, grid=(1,), args=[keys, _poison(n, np.int32), n],
                constexprs=dict(BLOCK=block), outputs=[1], reference=lambda k, *_: [np.sort(k)], rtol=0, atol=0)


@transpiler.jit
def expert_histogram_kernel(TOPK_IDS, COUNTS, n, NUM_EXPERTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ids = tl.load(TOPK_IDS + offs, mask=offs < n, other=0)
    counts = tl.histogram(ids, NUM_EXPERTS, mask=offs < n)
    tl.atomic_add(COUNTS + tl.arange(0, NUM_EXPERTS), counts)


def case_expert_histogram(rng, n=700, experts=16, block=256):
    ids = rng.integers(0, experts, n).astype(np.int64)
    return dict(kernel=expert_histogram_kernel, grid=(_cdiv(n, block),), args=[ids, np.zeros(experts, np.int32), n],
                constexprs=dict(NUM_EXPERTS=experts, BLOCK=block), outputs=[1],
                reference=lambda ids, *_: [np.bincount(ids, minlength=experts)], rtol=0, atol=0)


@transpiler.jit
def gather_rows_kernel(X, PERM, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N))
    perm = tl.load(PERM + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N),
                   other=0)
    down = tl.gather(x, perm, axis=0)                           # y[i, j] = x[perm[i, j], j]
    across = tl.gather(x, tl.flip(cols)[None, :].broadcast_to(BLOCK_M, BLOCK_N), 1)
    tl.store(Y + rows[:, None] * N + cols[None, :], down + across, mask=(rows[:, None] < M) & (cols[None, :] < N))


def case_gather_rows(rng, m=16, n=32):
    x = rng.standard_normal((m, n)).astype(np.float16)
    perm = rng.integers(0, m, (m, n)).astype(np.int32)

    def reference(x, perm, *_):
        xf = x.astype(np.float32)
        return [(np.take_along_axis(xf, perm, 0) + xf[:, ::-1]).astype(np.float16)]
    return dict(kernel=gather_rows_kernel, grid=(1,), args=[x, perm, _poison((m, n), np.float16), m, n],
                constexprs=dict(BLOCK_M=m, BLOCK_N=n), outputs=[2], reference=reference, rtol=1e-3, atol=1e-3)


# ---- tl.umulhi with a Python number wider than int32 (Triton makes it a uint32 tensor first) ---------------

@transpiler.jit
def multiplicative_hash_kernel(KEYS, HI, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keys = tl.load(KEYS + offs, mask=offs < N)
    high = tl.umulhi(keys, 0x9E3779B9)             # int32 x uint32 -> uint32
    tl.store(HI + offs, high.to(tl.int64), mask=offs < N)


def case_multiplicative_hash(rng, n=300, block=128):
    keys = rng.integers(-2 ** 31, 2 ** 31, n).astype(np.int32)

    def reference(keys, *_):
        return [(keys.view(np.uint32).astype(np.uint64) * np.uint64(0x9E3779B9)) >> np.uint64(32)]
    return dict(kernel=multiplicative_hash_kernel, grid=(_cdiv(n, block),), args=[keys, _poison(n, np.int64), n],
                constexprs=dict(BLOCK=block), outputs=[1], reference=reference, rtol=0, atol=0)


# ---- a variable a loop assigns only under a false constexpr condition (mamba's state passing) -------------

@transpiler.jit
def decayed_states_kernel(STATES, DECAY, SEGMENT, OUT, n_chunks, dim, HAS_SEGMENTS: tl.constexpr,
                          BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    states = tl.zeros((BLOCK,), dtype=tl.float32)
    segment = 0
    for c in range(n_chunks):
        scale = tl.exp(tl.load(DECAY + c))
        if HAS_SEGMENTS:
            new_segment = tl.load(SEGMENT + c)
            scale = tl.where(new_segment == segment, scale, 0.0)
            segment = new_segment
        states = scale * states + tl.load(STATES + c * dim + offs, mask=offs < dim, other=0.0)
        tl.store(OUT + c * dim + offs, states, mask=offs < dim)


def case_decayed_states(rng, has_segments, chunks=6, dim=100, block=64):
    states = rng.standard_normal((chunks, dim)).astype(np.float32)
    decay = -rng.random(chunks).astype(np.float32)
    segment = np.array([0, 0, 1, 1, 1, 2], np.int32)

    def reference(states, decay, segment, *_):
        out, h, seg = np.zeros((chunks, dim)), np.zeros(dim), 0
        for c in range(chunks):
            scale = np.exp(np.float64(decay[c]))
            if has_segments:
                scale, seg = (scale if segment[c] == seg else 0.0), segment[c]
            h = scale * h + states[c]
            out[c] = h
        return [out]
    return dict(kernel=decayed_states_kernel, grid=(_cdiv(dim, block),),
                args=[states, decay, segment, _poison((chunks, dim), np.float32), chunks, dim],
                constexprs=dict(HAS_SEGMENTS=has_segments, BLOCK=block), outputs=[3], reference=reference,
                rtol=1e-5, atol=1e-5)


# ---- batched (3-D) tl.dot ----------------------------------------------------------------------------------

@transpiler.jit
def batched_matmul_kernel(A, B, C, n_batch, M, N, K, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    ob = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    om = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    on = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_B, BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ok = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + ob[:, None, None] * M * K + om[None, :, None] * K + ok[None, None, :],
                    mask=(ob[:, None, None] < n_batch) & (om[None, :, None] < M) & (ok[None, None, :] < K),
                    other=0.0)
        b = tl.load(B + ob[:, None, None] * K * N + ok[None, :, None] * N + on[None, None, :],
                    mask=(ob[:, None, None] < n_batch) & (ok[None, :, None] < K) & (on[None, None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    c = (acc * 0.5).to(C.dtype.element_ty)
    tl.store(C + ob[:, None, None] * M * N + om[None, :, None] * N + on[None, None, :], c,
             mask=(ob[:, None, None] < n_batch) & (om[None, :, None] < M) & (on[None, None, :] < N))


def case_batched_matmul(rng, batch=5, m=40, n=24, k=70, block_b=2, block_m=32, block_k=32):
    a = rng.standard_normal((batch, m, k)).astype(np.float16)
    b = rng.standard_normal((batch, k, n)).astype(np.float16)

    def reference(a, b, *_):
        return [np.matmul(a.astype(np.float64), b.astype(np.float64)) * 0.5]
    return dict(kernel=batched_matmul_kernel, grid=(_cdiv(batch, block_b), _cdiv(m, block_m)),
                args=[a, b, _poison((batch, m, n), np.float16), batch, m, n, k],
                constexprs=dict(BLOCK_B=block_b, BLOCK_M=block_m, BLOCK_N=32, BLOCK_K=block_k), outputs=[2],
                reference=reference, rtol=2e-2, atol=5e-2)


def all_cases(rng):
    """Every case with an id."""
    return [("batched_matmul", case_batched_matmul(rng)),
            ("decayed_states", case_decayed_states(rng, False)),
            ("decayed_states_segments", case_decayed_states(rng, True)),
            ("multiplicative_hash", case_multiplicative_hash(rng)),
            ("sort_rows_up", case_sort_rows(rng, False)), ("sort_rows_down", case_sort_rows(rng, True)),
            ("sort_rows_fp16", case_sort_rows(rng, True, np.float16)), ("sort_keys", case_sort_keys(rng)),
            ("expert_histogram", case_expert_histogram(rng)), ("gather_rows", case_gather_rows(rng)),
            ("running_min_3d", case_running_min_3d(rng)), ("block_max_f32", case_block_max(rng, np.float32)),
            ("block_max_i16", case_block_max(rng, np.int16))]


# ---- tl.inline_asm_elementwise (compiled kernels only: the interpreter cannot run PTX) ---------------------

@transpiler.jit
def inline_asm_kernel(X, K, B, Y, Z, S, D, C, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    k = tl.load(K + offs, mask=offs < N, other=0)
    b = tl.load(B + offs, mask=offs < N, other=0)
    # one fp32 register in, one out; and a scoped temporary with two integer operands (one a literal)
    y = tl.inline_asm_elementwise("sqrt.rn.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    z = tl.inline_asm_elementwise("{\n .reg .u32 t;\n shl.b32 t, $1, 3;\n add.u32 $0, t, $2;\n}", "=r,r,r", [k, 5],
                                  dtype=tl.int32, is_pure=True, pack=1)
    # two outputs
    s, d = tl.inline_asm_elementwise("add.s32 $0, $2, $3;\n sub.s32 $1, $2, $3;", "=r,=r,r,r", [k, k * 3],
                                     dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    # four uint8 lanes to a 32-bit register (Triton's test's asm: each lane on its own)
    c = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [b], dtype=tl.uint8,
                                  is_pure=True, pack=4)
    # (pointer operands are refused as not supported yet: tests/test_inline_asm.py)
    tl.store(Y + offs, y, mask=offs < N)
    tl.store(Z + offs, z, mask=offs < N)
    tl.store(S + offs, s, mask=offs < N)
    tl.store(D + offs, d, mask=offs < N)
    tl.store(C + offs, c, mask=offs < N)


def case_inline_asm(rng, n=1300, block=512):     # pack=4: four elements a thread at 4 warps
    x = rng.random(n).astype(np.float32) * 100
    k = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(0, 256, n).astype(np.uint8)

    def reference(x, k, b, *_):
        k64 = k.astype(np.int64)
        return [np.sqrt(x), (k64 * 8 + 5).astype(np.int32), (k64 * 4).astype(np.int32), (-2 * k64).astype(np.int32),
                ((b & 0x1F).astype(np.int64) << 3).astype(np.uint8)]
    return dict(kernel=inline_asm_kernel, grid=(_cdiv(n, block),),
                args=[x, k, b, _poison(n, np.float32), _poison(n, np.int32), _poison(n, np.int32),
                      _poison(n, np.int32), _poison(n, np.uint8), n], constexprs=dict(BLOCK=block),
                outputs=[3, 4, 5, 6, 7], reference=reference, rtol=0, atol=0)


def compiled_only_cases(rng):
    """Cases the interpreter cannot run (inline PTX), with an id: compiled on the CPU, run on the GPU."""
    return [("inline_asm", case_inline_asm(rng))]

