"""Kernels using language features real Triton kernels use and that once were refused here, written as Triton
users write them, each with a case builder and a NumPy float64 reference.

Shared by the CPU tests (`test_triton_frontend.py`: interpreter against NumPy, NVRTC compile) and the GPU tests
(`test_gpu_triton_frontend.py`: compiled against NumPy and, where `triton` is importable, against Triton running
the same source: this module is loaded a second time under Triton by `bench/twins.py`). Only host code that
Triton also accepts goes here; what is ours alone is in the test files.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl

libdevice = tl.extra.cuda.libdevice


def _poison(shape, dtype):
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else 0x5A, dtype=dtype)


# ---- a helper whose tl.constexpr parameters receive blocks (Triton's fused-attention tutorial) -----------------

@transpiler.jit
def _attn_inner(acc, l_i, m_i, q, K_ptr, V_ptr, stride_k, start, offs_m: tl.constexpr, offs_n: tl.constexpr,
                N_CTX, BLOCK_N: tl.constexpr, HEAD: tl.constexpr, CAUSAL: tl.constexpr):
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K_ptr + cols[:, None] * stride_k + tl.arange(0, HEAD)[None, :], mask=cols[:, None] < N_CTX,
                    other=0.0)
        qk = tl.sum(q[:, None, :] * k[None, :, :], axis=2)
        valid = cols[None, :] < N_CTX
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        v = tl.load(V_ptr + cols[:, None] * stride_k + tl.arange(0, HEAD)[None, :], mask=cols[:, None] < N_CTX,
                    other=0.0)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    return acc, l_i, m_i


@transpiler.jit
def attention_kernel(Q, K, V, Out, stride, N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     HEAD: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(Q + offs_m[:, None] * stride + tl.arange(0, HEAD)[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    acc = tl.zeros([BLOCK_M, HEAD], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1e-30
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, K, V, stride, 0, offs_m, offs_n, N_CTX, BLOCK_N, HEAD, CAUSAL)
    tl.store(Out + offs_m[:, None] * stride + tl.arange(0, HEAD)[None, :], acc / l_i[:, None],
             mask=offs_m[:, None] < N_CTX)


def attention_reference(q, k, v, causal):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.T
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def case_attention(rng, causal, n=50, head=16):
    q, k, v = (rng.standard_normal((n, head)).astype(np.float32) for _ in range(3))
    out = _poison((n, head), np.float32)
    return dict(kernel=attention_kernel, grid=(transpiler.cdiv(n, 16),), args=[q, k, v, out, head, n],
                constexprs=dict(BLOCK_M=16, BLOCK_N=16, HEAD=head, CAUSAL=causal), outputs=[3],
                reference=lambda q, k, v, *rest: [attention_reference(q, k, v, causal)],
                # fp32 operands of tl.dot are multiplied as tf32 (Triton's default input_precision), on both paths
                rtol=1e-2, atol=5e-3)


# ---- types asked of values: .dtype, .dtype.element_ty, .type of pointers, blocks and block pointers ------------

@transpiler.jit
def typed_copy_kernel(X, Y, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(X, (M, N), (stride, 1), (pid * BLOCK_M, 0), (BLOCK_M, BLOCK_N), (1, 0))
    dst = tl.make_block_ptr(Y, (M, N), (stride, 1), (pid * BLOCK_M, 0), (BLOCK_M, BLOCK_N), (1, 0))
    x = tl.load(src, boundary_check=(0, 1))
    # A block pointer is a pointer to a block: its element type is a block type whose scalar is X's element type.
    tl.static_assert(src.dtype.element_ty.element_ty == X.dtype.element_ty)
    tl.static_assert(src.type.element_ty.shape[0] == BLOCK_M)
    tl.static_assert(x.type.scalar == X.dtype.element_ty)
    tl.static_assert(x.dtype == x.type.element_ty)
    if X.dtype.element_ty == tl.float16:
        y = x.to(tl.float32) * 2.0
    elif x.dtype == tl.float32:
        y = x * 3.0
    else:
        y = x * 4.0
    tl.store(dst, y.to(dst.dtype.element_ty.element_ty), boundary_check=(0, 1))


_TYPED_FACTOR = {np.float16: 2.0, np.float32: 3.0, np.float64: 4.0}


def case_typed_copy(rng, dtype, m=37, n=24):
    x = rng.standard_normal((m, n)).astype(dtype)
    y = _poison((m, n), dtype)
    factor = _TYPED_FACTOR[dtype]
    tol = 2e-3 if dtype == np.float16 else 1e-6
    return dict(kernel=typed_copy_kernel, grid=(transpiler.cdiv(m, 16),), args=[x, y, m, n, n],
                constexprs=dict(BLOCK_M=16, BLOCK_N=32), outputs=[1],
                reference=lambda x, *rest: [x.astype(np.float64) * factor], rtol=tol, atol=tol)


# ---- f-strings in messages ----------------------------------------------------------------------------------------

@transpiler.jit
def fstring_kernel(X, Y, N, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, f"BLOCK={BLOCK} must be a multiple of 16")
    tl.static_assert(SCALE > 0, f"SCALE must be positive, got {SCALE!r} for {X.dtype.element_ty}")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    tl.device_assert(x == x, f"NaN in a block of {BLOCK}")
    tl.store(Y + offs, x * SCALE, mask=m)


def case_fstring(rng, n=300):
    x = rng.standard_normal(n).astype(np.float32)
    return dict(kernel=fstring_kernel, grid=(transpiler.cdiv(n, 128),), args=[x, _poison(n, np.float32), n],
                constexprs=dict(BLOCK=128, SCALE=1.5), outputs=[1],
                reference=lambda x, *rest: [x.astype(np.float64) * 1.5], rtol=1e-6, atol=1e-6)


# ---- tuples and None as arguments ---------------------------------------------------------------------------------

@transpiler.jit
def tuple_sum_kernel(Xs, weights, Bias, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(len(Xs)):
        acc += tl.load(Xs[i] + offs, mask=m, other=0.0) * weights[i]
    if Bias is not None:
        acc += tl.load(Bias + offs, mask=m, other=0.0)
    tl.store(Y + offs, acc, mask=m)


def case_tuple_sum(rng, count=3, with_bias=True, n=333):
    xs = tuple(rng.standard_normal(n).astype(np.float32) for _ in range(count))
    weights = tuple(float(w) for w in rng.uniform(-2, 2, count))
    bias = rng.standard_normal(n).astype(np.float32) if with_bias else None

    def reference(*args):
        total = sum(x.astype(np.float64) * w for x, w in zip(xs, weights))
        return [total + (bias.astype(np.float64) if with_bias else 0.0)]
    return dict(kernel=tuple_sum_kernel, grid=(transpiler.cdiv(n, 128),),
                args=[xs, weights, bias, _poison(n, np.float32), n], constexprs=dict(BLOCK=128), outputs=[3],
                reference=reference, rtol=1e-5, atol=1e-5)


# ---- expand_dims on every axis form -------------------------------------------------------------------------------

@transpiler.jit
def outer_kernel(X, Y, Out, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + rows, mask=rows < M, other=0.0)
    y = tl.load(Y + cols, mask=cols < N, other=0.0)
    a = tl.expand_dims(x, -1)                  # [BLOCK_M, 1]
    b = tl.expand_dims(y, (0,))                # [1, BLOCK_N]
    c = tl.expand_dims(tl.expand_dims(x, 1), (0, -1))      # [1, BLOCK_M, 1, 1]
    prod = a * b + tl.reshape(c, (BLOCK_M, 1)) * 0.5
    tl.store(Out + rows[:, None] * N + cols[None, :], prod, mask=(rows[:, None] < M) & (cols[None, :] < N))


def case_outer(rng, m=13, n=27):
    x, y = rng.standard_normal(m).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return dict(kernel=outer_kernel, grid=(1,), args=[x, y, _poison((m, n), np.float32), m, n],
                constexprs=dict(BLOCK_M=16, BLOCK_N=32), outputs=[2],
                reference=lambda x, y, *rest: [np.outer(x, y).astype(np.float64) + x[:, None] * 0.5],
                rtol=1e-6, atol=1e-6)


# ---- fp8: named in signatures, converted both ways ------------------------------------------------------------------

@transpiler.jit
def fp8_roundtrip_kernel(X, Q, Y, N, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    q = x.to(FP8)
    tl.store(Q + offs, q.to(tl.uint8, bitcast=True), mask=m)
    tl.store(Y + offs, q.to(tl.float32), mask=m)


@transpiler.heuristics({"BLOCK": lambda args: 256 if args["N"] > 1000 else 128,
                        "num_warps": lambda args: 8 if args["N"] > 1000 else 2})
@transpiler.jit
def heuristic_scale_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) * 2.0 + BLOCK * 0.0, mask=m)


def case_heuristic(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    return dict(kernel=heuristic_scale_kernel, grid=lambda meta: (transpiler.cdiv(meta["N"], meta["BLOCK"]),),
                args=[x, _poison(n, np.float32), n],
                constexprs={}, outputs=[1], reference=lambda x, *rest: [x.astype(np.float64) * 2.0],
                rtol=1e-6, atol=1e-6)


def all_cases(rng):
    """Every case with an id (fp8 and libdevice cases are in the test files: they need bit references)."""
    return [("attention", case_attention(rng, False)), ("attention_causal", case_attention(rng, True)),
            ("typed_copy_fp16", case_typed_copy(rng, np.float16)), ("typed_copy_fp32", case_typed_copy(rng, np.float32)),
            ("typed_copy_fp64", case_typed_copy(rng, np.float64)), ("fstring", case_fstring(rng)),
            ("tuple_sum", case_tuple_sum(rng)), ("tuple_sum_one_no_bias", case_tuple_sum(rng, 1, False)),
            ("outer_expand_dims", case_outer(rng)), ("heuristic_small", case_heuristic(rng, 700)),
            ("heuristic_large", case_heuristic(rng, 3001))]
