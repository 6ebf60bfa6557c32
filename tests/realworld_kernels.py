"""More kernels in the shapes public Triton projects give them (linear-attention recurrences, quantized matmuls,
rotary embeddings, attention, stream-K, ...), each with a NumPy float64 reference; `unseen_kernels.all_cases`
includes their cases, so the compile, interpreter and GPU tests of `tests/test_unseen_kernels.py` and
`tests/test_gpu_unseen_kernels.py` run them.

Each kernel keeps the parameter names and idioms such projects use (`q, k, v, o, do`, loops over time steps that
carry a `[BK, BV]` state, reversed loops, pointers stepped by `+=`), since those are what broke before.
"""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl
from feature_kernels import _poison


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _cdiv(a, b):
    return -(-a // b)


# ---------------------------------------------------------------------------------------------------------
# Recurrent linear attention: a [BK, BV] state carried over time steps, forward or reversed
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def fused_recurrent_fwd_kernel(q, k, v, o, h0, ht, scale, T, K: tl.constexpr, V: tl.constexpr,
                               BK: tl.constexpr, BV: tl.constexpr, REVERSE: tl.constexpr):
    i_v, i_k, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    start = (T - 1) if REVERSE else 0
    p_q = q + i_bh * T * K + start * K + i_k * BK + tl.arange(0, BK)
    p_k = k + i_bh * T * K + start * K + i_k * BK + tl.arange(0, BK)
    p_v = v + i_bh * T * V + start * V + i_v * BV + tl.arange(0, BV)
    p_o = o + (i_bh + i_k * tl.num_programs(2)) * T * V + start * V + i_v * BV + tl.arange(0, BV)
    mask_k = (i_k * BK + tl.arange(0, BK)) < K
    mask_v = (i_v * BV + tl.arange(0, BV)) < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    offs_h = (i_k * BK + tl.arange(0, BK)[:, None]) * V + (i_v * BV + tl.arange(0, BV)[None, :])
    b_h = tl.load(h0 + i_bh * K * V + offs_h, mask=mask_h, other=0).to(tl.float32)
    for _ in range(0, T):
        b_k = tl.load(p_k, mask=mask_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=mask_v, other=0).to(tl.float32)
        b_q = tl.load(p_q, mask=mask_k, other=0).to(tl.float32) * scale
        b_h += b_k[:, None] * b_v[None, :]
        b_o = tl.sum(b_h * b_q[:, None], axis=0)
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=mask_v)
        p_q += -K if REVERSE else K
        p_k += -K if REVERSE else K
        p_o += -V if REVERSE else V
        p_v += -V if REVERSE else V
    tl.store(ht + i_bh * K * V + offs_h, b_h.to(ht.dtype.element_ty), mask=mask_h)


@transpiler.jit
def fused_recurrent_bwd_kernel(q, k, v, do, dq, dk, dv, h0, scale, T, K: tl.constexpr, V: tl.constexpr,
                               BK: tl.constexpr, BV: tl.constexpr):
    """dq forward in time (state h), then dk and dv backward in time (state dh). `do` is a C++ keyword."""
    i_v, i_k, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    mask_k = i_k * BK + tl.arange(0, BK) < K
    mask_v = i_v * BV + tl.arange(0, BV) < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    p_k = k + i_bh * T * K + i_k * BK + tl.arange(0, BK)
    p_v = v + i_bh * T * V + i_v * BV + tl.arange(0, BV)
    p_do = do + i_bh * T * V + i_v * BV + tl.arange(0, BV)
    p_dq = dq + (i_bh + i_v * tl.num_programs(2)) * T * K + i_k * BK + tl.arange(0, BK)
    p_h0 = h0 + i_bh * K * V + (i_k * BK + tl.arange(0, BK)[:, None]) * V + (i_v * BV + tl.arange(0, BV)[None, :])
    b_h = tl.load(p_h0, mask=mask_h, other=0).to(tl.float32)
    for i in range(0, T):
        b_k = tl.load(p_k, mask=mask_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=mask_v, other=0).to(tl.float32)
        b_do = tl.load(p_do, mask=mask_v, other=0).to(tl.float32)
        b_h += b_k[:, None] * b_v[None, :]
        d_q = tl.sum(b_h * b_do[None, :], axis=1) * scale
        tl.store(p_dq, d_q.to(p_dq.dtype.element_ty), mask=mask_k)
        p_k += K
        p_do += V
        p_v += V
        p_dq += K
    tl.debug_barrier()
    p_q = q + i_bh * T * K + i_k * BK + tl.arange(0, BK) + (T - 1) * K
    p_k = k + i_bh * T * K + i_k * BK + tl.arange(0, BK) + (T - 1) * K
    p_do = do + i_bh * T * V + i_v * BV + tl.arange(0, BV) + (T - 1) * V
    p_v = v + i_bh * T * V + i_v * BV + tl.arange(0, BV) + (T - 1) * V
    p_dk = dk + (i_bh + i_v * tl.num_programs(2)) * T * K + i_k * BK + tl.arange(0, BK) + (T - 1) * K
    p_dv = dv + (i_bh + i_k * tl.num_programs(2)) * T * V + i_v * BV + tl.arange(0, BV) + (T - 1) * V
    d_h = tl.zeros([BK, BV], dtype=tl.float32)
    for _ in range(T):
        b_do = tl.load(p_do, mask=mask_v, other=0).to(tl.float32)
        b_q = tl.load(p_q, mask=mask_k, other=0).to(tl.float32) * scale
        b_k = tl.load(p_k, mask=mask_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=mask_v, other=0).to(tl.float32)
        d_h += b_q[:, None] * b_do[None, :]
        d_k = tl.sum(d_h * b_v[None, :], axis=1)
        d_v = tl.sum(d_h * b_k[:, None], axis=0)
        tl.store(p_dk, d_k.to(p_dk.dtype.element_ty), mask=mask_k)
        tl.store(p_dv, d_v.to(p_dv.dtype.element_ty), mask=mask_v)
        p_do -= V
        p_q -= K
        p_k -= K
        p_v -= V
        p_dk -= K
        p_dv -= V


@transpiler.jit
def lerp_kernel(x, y, o, w, r, n, BLOCK: tl.constexpr):
    """Scalar parameters named `w` and `r`, read inside the per-register loops of elementwise code."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x + offs, mask=m)
    b = tl.load(y + offs, mask=m)
    tl.store(o + offs, (a + w * (b - a)) * r, mask=m)


@transpiler.jit
def weighted_rowsum_kernel(X, W, Y, stride, N, HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    """An optional pointer that is None outside `if HAS_W:` and stepped inside the loop only under it."""
    row = tl.program_id(0)
    x_ptrs = X + row * stride + tl.arange(0, BLOCK)
    w_ptrs = W + tl.arange(0, BLOCK) if HAS_W else None
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        m = start + tl.arange(0, BLOCK) < N
        x = tl.load(x_ptrs, mask=m, other=0.0)
        if HAS_W:
            x *= tl.load(w_ptrs, mask=m, other=0.0)
            w_ptrs += BLOCK
        acc += x
        x_ptrs += BLOCK
    tl.store(Y + row, tl.sum(acc, axis=0))


@transpiler.jit
def _tile_coords(tile_id, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = tile_id // width
    group_size = tl.minimum(grid_m - group_id * GROUP_M, GROUP_M)
    return group_id * GROUP_M + (tile_id % group_size), (tile_id % width) // group_size


@transpiler.jit
def _streamk_mac_loop(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      iters_per_tile, start_iter, end_iter, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The k iterations [start_iter, end_iter) of one tile, added into C (other programs add the rest)."""
    tile_id = start_iter // iters_per_tile
    remain_iters = start_iter % iters_per_tile
    pid_m, pid_n = _tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    A = A + (rm[:, None] * stride_am + rk[None, :] * stride_ak) + BLOCK_K * stride_ak * remain_iters
    B = B + (rk[:, None] * stride_bk + rn[None, :] * stride_bn) + BLOCK_K * stride_bk * remain_iters
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for current_iter in range(start_iter, end_iter):
        a = tl.load(A, mask=rm[:, None] < M, other=0.0)
        b = tl.load(B, mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
        A += BLOCK_K * stride_ak
        B += BLOCK_K * stride_bk
    C_ = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    tl.atomic_add(C_, acc, mask=(rm < M)[:, None] & (rn < N)[None, :])


@transpiler.jit
def streamk_gemm_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                        total_tiles_streamk, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """Persistent stream-K: whole tiles data-parallel first, then the last tiles' k iterations spread evenly
    over the programs. Two pipelined dot loops, each followed by a layout conversion of the accumulator."""
    pid = tl.program_id(0)
    iters_per_tile = tl.cdiv(K, BLOCK_K)
    total_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in range(pid, total_tiles - total_tiles_streamk, NUM_SMS):
        pid_m, pid_n = _tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        a_ptrs = A + (rm[:, None] * stride_am + rk[None, :] * stride_ak)
        b_ptrs = B + (rk[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, iters_per_tile):
            a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        tl.store(C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn), acc,
                 mask=(rm < M)[:, None] & (rn < N)[None, :])
    streamk_iters = total_tiles_streamk * iters_per_tile
    per_program = streamk_iters // NUM_SMS
    extra = streamk_iters % NUM_SMS
    first = (total_tiles - total_tiles_streamk) * iters_per_tile
    start_iter = first + pid * per_program + tl.minimum(pid, extra)
    last_iter = first + (pid + 1) * per_program + tl.minimum(pid + 1, extra)
    while start_iter < last_iter:
        end_iter = tl.minimum(start_iter + (iters_per_tile - start_iter % iters_per_tile), last_iter)
        _streamk_mac_loop(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          iters_per_tile, start_iter, end_iter, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
        start_iter = end_iter


@transpiler.jit
def transpose_kernel(X, Y, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Tiled out-of-place transpose: the tile is read along rows and written along columns."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0)
    tl.store(Y + rn[:, None] * stride_ym + rm[None, :], tl.trans(x), mask=tl.trans(mask))


@transpiler.jit
def shared_query_kernel(Q, K1, K2, O, n_blocks, use_first, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """One query block multiplied with the key blocks of two loops, the first under a runtime branch (`use_first`
    is never 1, which would fold it): the query
    is a loop-invariant dot operand of both."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + tl.program_id(0) * BM * D + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if use_first != 0:
        for i in range(n_blocks):
            acc += tl.dot(q, tl.load(K1 + i * D * BN + rd[:, None] * BN + rn[None, :]))
    for i in range(n_blocks):
        acc = acc * 0.5 + tl.dot(q, tl.load(K2 + i * D * BN + rd[:, None] * BN + rn[None, :]))
    tl.store(O + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc)


def _recurrent_ref(q, k, v, h0, scale, reverse):
    q, k, v, h = _f64(q), _f64(k), _f64(v), _f64(h0).copy()
    o = np.zeros(v.shape)
    for t in (range(q.shape[1] - 1, -1, -1) if reverse else range(q.shape[1])):
        h += k[:, t, :, None] * v[:, t, None, :]
        o[:, t] = np.einsum("bk,bkv->bv", q[:, t] * scale, h)
    return o, h


def case_fused_recurrent_fwd(rng, reverse, bh=3, t=13, kd=40, vd=24, bk=32, bv=16):
    q, k = (rng.standard_normal((bh, t, kd)).astype(np.float32) for _ in range(2))
    v = rng.standard_normal((bh, t, vd)).astype(np.float32)
    h0 = rng.standard_normal((bh, kd, vd)).astype(np.float32)
    nk = _cdiv(kd, bk)

    def ref(q, k, v, o, h0, *rest):
        parts = [_recurrent_ref(q[..., s], k[..., s], v, h0[:, s], 0.5, reverse)
                 for s in (slice(i * bk, (i + 1) * bk) for i in range(nk))]
        return [np.stack([p[0] for p in parts]), np.concatenate([p[1] for p in parts], 1)]
    return dict(kernel=fused_recurrent_fwd_kernel, grid=(_cdiv(vd, bv), nk, bh),
                args=[q, k, v, _poison((nk, bh, t, vd), np.float32), h0, _poison((bh, kd, vd), np.float32), 0.5, t],
                constexprs=dict(K=kd, V=vd, BK=bk, BV=bv, REVERSE=reverse), outputs=[3, 5], reference=ref,
                rtol=1e-4, atol=1e-4)


def _recurrent_bwd_ref(q, k, v, do, h0, scale):
    q, k, v, do, h = _f64(q), _f64(k), _f64(v), _f64(do), _f64(h0).copy()
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for t in range(q.shape[1]):
        h += k[:, t, :, None] * v[:, t, None, :]
        dq[:, t] = np.einsum("bkv,bv->bk", h, do[:, t]) * scale
    dh = np.zeros(h.shape)
    for t in range(q.shape[1] - 1, -1, -1):
        dh += (q[:, t] * scale)[:, :, None] * do[:, t, None, :]
        dk[:, t] = np.einsum("bkv,bv->bk", dh, v[:, t])
        dv[:, t] = np.einsum("bkv,bk->bv", dh, k[:, t])
    return dq, dk, dv


def case_fused_recurrent_bwd(rng, bh=2, t=11, kd=40, vd=24, bk=32, bv=16):
    q, k = (rng.standard_normal((bh, t, kd)).astype(np.float32) for _ in range(2))
    v, do = (rng.standard_normal((bh, t, vd)).astype(np.float32) for _ in range(2))
    h0 = rng.standard_normal((bh, kd, vd)).astype(np.float32)
    nk, nv = _cdiv(kd, bk), _cdiv(vd, bv)

    def ref(q, k, v, do, *rest):
        out_q, out_k, out_v = np.zeros((nv, bh, t, kd)), np.zeros((nv, bh, t, kd)), np.zeros((nk, bh, t, vd))
        for ik in range(nk):
            for iv in range(nv):
                sk, sv = slice(ik * bk, (ik + 1) * bk), slice(iv * bv, (iv + 1) * bv)
                a, b, c = _recurrent_bwd_ref(q[..., sk], k[..., sk], v[..., sv], do[..., sv], h0[:, sk, sv], 0.5)
                out_q[iv][..., sk], out_k[iv][..., sk], out_v[ik][..., sv] = a, b, c
        return [out_q, out_k, out_v]
    outs = [_poison((nv, bh, t, kd), np.float32), _poison((nv, bh, t, kd), np.float32),
            _poison((nk, bh, t, vd), np.float32)]
    return dict(kernel=fused_recurrent_bwd_kernel, grid=(nv, nk, bh), args=[q, k, v, do, *outs, h0, 0.5, t],
                constexprs=dict(K=kd, V=vd, BK=bk, BV=bv), outputs=[4, 5, 6], reference=ref, rtol=1e-4, atol=1e-4)


def case_lerp(rng, n=700, block=256):
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    return dict(kernel=lerp_kernel, grid=(_cdiv(n, block),), args=[x, y, _poison(n, np.float32), 0.3, 1.7, n],
                constexprs=dict(BLOCK=block), outputs=[2],
                reference=lambda x, y, *rest: [(_f64(x) + 0.3 * (_f64(y) - _f64(x))) * 1.7], rtol=1e-5, atol=1e-5)


def case_weighted_rowsum(rng, has_w, rows=5, n=300, block=128):
    x = rng.standard_normal((rows, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32) if has_w else None

    def ref(x, w, *rest):
        return [(_f64(x) * (_f64(w) if w is not None else 1.0)).sum(1)]
    return dict(kernel=weighted_rowsum_kernel, grid=(rows,), args=[x, w, _poison(rows, np.float32), n, n],
                constexprs=dict(HAS_W=has_w, BLOCK=block), outputs=[2], reference=ref, rtol=1e-5, atol=1e-4)


def case_streamk(rng, block, m=600, n=528, k=448, programs=4, streamk_tiles=2, stages=2, warps=8):
    a = (rng.standard_normal((m, k)) * 0.3).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 0.3).astype(np.float16)
    c = np.zeros((m, n), np.float32)      # stream-K tiles are summed into C by atomics
    bm, bn, bk = block
    return dict(kernel=streamk_gemm_kernel, grid=(programs,), num_warps=warps, num_stages=stages,
                args=[a, b, c, m, n, k, k, 1, n, 1, n, 1, streamk_tiles],
                constexprs=dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=4, NUM_SMS=programs), outputs=[2],
                reference=lambda a, b, *rest: [_f64(a) @ _f64(b)], rtol=2e-3, atol=2e-3)


def case_transpose(rng, m=300, n=200, bm=256, bn=128, warps=16):
    x = rng.standard_normal((m, n)).astype(np.float32)
    return dict(kernel=transpose_kernel, grid=(_cdiv(m, bm), _cdiv(n, bn)), num_warps=warps,
                args=[x, _poison((n, m), np.float32), m, n, n, m], constexprs=dict(BLOCK_M=bm, BLOCK_N=bn),
                outputs=[1], reference=lambda x, *rest: [_f64(x).T], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------------------
# Rotary embeddings, batched mat-vec, quantized matmuls, chunked linear attention, serving kernels, attention
# ---------------------------------------------------------------------------------------------------------


@transpiler.jit
def rotary_kernel(OUT, X, COS, SIN, CU_SEQLENS, SEQLEN_OFFSETS, seqlen, rotary_dim, seqlen_ro,
                  stride_out_batch, stride_out_seqlen, stride_out_nheads, stride_out_headdim,
                  stride_x_batch, stride_x_seqlen, stride_x_nheads, stride_x_headdim,
                  BLOCK_K: tl.constexpr, IS_SEQLEN_OFFSETS_TENSOR: tl.constexpr, IS_VARLEN: tl.constexpr,
                  INTERLEAVED: tl.constexpr, CONJUGATE: tl.constexpr, BLOCK_M: tl.constexpr):
    pid_m = tl.program_id(axis=0)
    pid_batch = tl.program_id(axis=1)
    pid_head = tl.program_id(axis=2)
    rotary_dim_half = rotary_dim // 2
    if not IS_VARLEN:
        X = X + pid_batch * stride_x_batch + pid_head * stride_x_nheads
        OUT = OUT + pid_batch * stride_out_batch + pid_head * stride_out_nheads
    else:
        start_idx = tl.load(CU_SEQLENS + pid_batch)
        seqlen = tl.load(CU_SEQLENS + pid_batch + 1) - start_idx
        X = X + start_idx * stride_x_seqlen + pid_head * stride_x_nheads
        OUT = OUT + start_idx * stride_out_seqlen + pid_head * stride_out_nheads
    if pid_m * BLOCK_M >= seqlen:
        return
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if not IS_SEQLEN_OFFSETS_TENSOR:
        rm_cs = rm + SEQLEN_OFFSETS
    else:
        rm_cs = rm + tl.load(SEQLEN_OFFSETS + pid_batch)
    rk = tl.arange(0, BLOCK_K)
    rk_half = tl.arange(0, BLOCK_K // 2)
    if not INTERLEAVED:
        X = X + (rm[:, None] * stride_x_seqlen + rk_half[None, :] * stride_x_headdim)
        COS = COS + (rm_cs[:, None] * rotary_dim_half + rk_half[None, :])
        SIN = SIN + (rm_cs[:, None] * rotary_dim_half + rk_half[None, :])
        cos = tl.load(COS, mask=(rm_cs[:, None] < seqlen_ro) & (rk_half[None, :] < rotary_dim_half), other=1.0).to(tl.float32)
        sin = tl.load(SIN, mask=(rm_cs[:, None] < seqlen_ro) & (rk_half[None, :] < rotary_dim_half), other=0.0).to(tl.float32)
        x0 = tl.load(X, mask=(rm[:, None] < seqlen) & (rk_half[None, :] < rotary_dim_half), other=0.0).to(tl.float32)
        x1 = tl.load(X + rotary_dim_half * stride_x_headdim,
                     mask=(rm[:, None] < seqlen) & (rk_half[None, :] < rotary_dim_half), other=0.0).to(tl.float32)
        if CONJUGATE:
            sin = -sin
        o0 = x0 * cos - x1 * sin
        o1 = x0 * sin + x1 * cos
        OUT = OUT + (rm[:, None] * stride_out_seqlen + rk_half[None, :] * stride_out_headdim)
        tl.store(OUT, o0, mask=(rm[:, None] < seqlen) & (rk_half[None, :] < rotary_dim_half))
        tl.store(OUT + rotary_dim_half * stride_out_headdim, o1,
                 mask=(rm[:, None] < seqlen) & (rk_half[None, :] < rotary_dim_half))
    else:
        rk_swap = rk + ((rk + 1) % 2) * 2 - 1
        rk_repeat = tl.arange(0, BLOCK_K) // 2
        X0 = X + (rm[:, None] * stride_x_seqlen + rk[None, :] * stride_x_headdim)
        X1 = X + (rm[:, None] * stride_x_seqlen + rk_swap[None, :] * stride_x_headdim)
        COS = COS + (rm_cs[:, None] * rotary_dim_half + rk_repeat[None, :])
        SIN = SIN + (rm_cs[:, None] * rotary_dim_half + rk_repeat[None, :])
        cos = tl.load(COS, mask=(rm_cs[:, None] < seqlen_ro) & (rk_repeat[None, :] < rotary_dim_half), other=1.0).to(tl.float32)
        sin = tl.load(SIN, mask=(rm_cs[:, None] < seqlen_ro) & (rk_repeat[None, :] < rotary_dim_half), other=0.0).to(tl.float32)
        x0 = tl.load(X0, mask=(rm[:, None] < seqlen) & (rk[None, :] < rotary_dim), other=0.0).to(tl.float32)
        x1 = tl.load(X1, mask=(rm[:, None] < seqlen) & (rk_swap[None, :] < rotary_dim), other=0.0).to(tl.float32)
        if CONJUGATE:
            sin = -sin
        x0_cos = x0 * cos
        x1_sin = x1 * sin
        out = tl.where(rk[None, :] % 2 == 0, x0_cos - x1_sin, x0_cos + x1_sin)
        OUT = OUT + (rm[:, None] * stride_out_seqlen + rk[None, :] * stride_out_headdim)
        tl.store(OUT, out, mask=(rm[:, None] < seqlen) & (rk[None, :] < rotary_dim))


def rotary_ref(x, cos, sin, interleaved, conj, offs):
    b, s, h, d = x.shape
    rd = cos.shape[1] * 2
    out = _f64(x).copy()
    c = _f64(cos)[offs:offs + s][None, :, None, :]
    sn = _f64(sin)[offs:offs + s][None, :, None, :]
    if conj: sn = -sn
    if not interleaved:
        x0, x1 = _f64(x)[..., :rd // 2], _f64(x)[..., rd // 2:rd]
        out[..., :rd // 2] = x0 * c - x1 * sn
        out[..., rd // 2:rd] = x0 * sn + x1 * c
    else:
        x0, x1 = _f64(x)[..., 0:rd:2], _f64(x)[..., 1:rd:2]
        out[..., 0:rd:2] = x0 * c - x1 * sn
        out[..., 1:rd:2] = x0 * sn + x1 * c
    return out


def case_rotary(rng, interleaved, conj, dtype=np.float16, b=2, s=37, h=3, d=64, rd=48, bm=8):
    x = rng.standard_normal((b, s, h, d)).astype(dtype)
    ang = rng.uniform(0, 6, (s + 5, rd // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    out = x.copy()  # rotary in-place-style: non-rotary part copied
    out[..., :rd] = np.nan if dtype != np.int32 else 0
    def ref(out_, x, cos, sin, *r):
        return [rotary_ref(x, cos, sin, interleaved, conj, 3)]
    bk = 64
    args = [out, x, cos, sin, None, 3, s, rd, s + 5,
            *[st // out.itemsize for st in out.strides], *[st // x.itemsize for st in x.strides]]
    return dict(kernel=rotary_kernel, grid=(-(-s // bm), b, h), args=args,
                constexprs=dict(BLOCK_K=bk, IS_SEQLEN_OFFSETS_TENSOR=False, IS_VARLEN=False, INTERLEAVED=interleaved,
                                CONJUGATE=conj, BLOCK_M=bm), outputs=[0], reference=ref, rtol=2e-3, atol=2e-3)


@transpiler.jit
def rope_heads_kernel(Q, q_row_stride, COS, cos_row_stride, SIN, sin_row_stride, seqlen, head_dim, n_heads,
                      BACKWARD_PASS: tl.constexpr, BLOCK_SIZE: tl.constexpr, ROPE_GROUP_SIZE: tl.constexpr):
    row_position = tl.program_id(0)
    group_head_position = tl.program_id(1)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    half_head_dim = head_dim // 2
    mask = col_offsets < half_head_dim
    sin1 = tl.load(SIN + (row_position % seqlen) * sin_row_stride + half_head_dim * 0 + col_offsets, mask=mask, other=0)
    cos1 = tl.load(COS + (row_position % seqlen) * cos_row_stride + half_head_dim * 0 + col_offsets, mask=mask, other=0)
    if BACKWARD_PASS:
        sin1 = -sin1
    head_start = group_head_position * ROPE_GROUP_SIZE
    head_end = min((head_start + ROPE_GROUP_SIZE), n_heads)
    for k in range(head_start, head_end):
        offs_q1 = row_position * q_row_stride + k * head_dim + col_offsets
        offs_q2 = row_position * q_row_stride + k * head_dim + col_offsets + half_head_dim
        Q1 = tl.load(Q + offs_q1, mask=mask, other=0).to(sin1.dtype)
        Q2 = tl.load(Q + offs_q2, mask=mask, other=0).to(sin1.dtype)
        tl.store(Q + offs_q1, Q1 * cos1 - Q2 * sin1, mask=mask)
        tl.store(Q + offs_q2, Q2 * cos1 + Q1 * sin1, mask=mask)


def case_rope_heads(rng, back, rows=10, seqlen=4, nh=5, hd=48, group=2):
    q = rng.standard_normal((rows, nh * hd)).astype(np.float32)
    ang = rng.uniform(0, 6, (seqlen, hd // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    def ref(q, *r):
        qq = _f64(q).reshape(rows, nh, hd)
        c = _f64(cos)[np.arange(rows) % seqlen][:, None, :]
        s = _f64(sin)[np.arange(rows) % seqlen][:, None, :] * (-1 if back else 1)
        q1, q2 = qq[..., :hd // 2], qq[..., hd // 2:]
        return [np.concatenate([q1 * c - q2 * s, q2 * c + q1 * s], -1).reshape(rows, -1)]
    return dict(kernel=rope_heads_kernel, grid=(rows, -(-nh // group)), args=[q, nh * hd, cos, hd // 2, sin, hd // 2, seqlen, hd, nh],
                constexprs=dict(BACKWARD_PASS=back, BLOCK_SIZE=32, ROPE_GROUP_SIZE=group), outputs=[0], reference=ref,
                rtol=1e-5, atol=1e-5)


@transpiler.jit
def bmv_kernel(A, X, Y, M, K, stride_ab, stride_am, stride_ak, stride_xb, stride_yb,
               BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_b = tl.program_id(1)
    pid_split = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + pid_b * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    x_ptrs = X + pid_b * stride_xb + offs_k
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = offs_k < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & kmask[None, :], other=0.0)
        x = tl.load(x_ptrs, mask=kmask, other=0.0)
        acc += a.to(tl.float32) * x[None, :].to(tl.float32)
        a_ptrs += BLOCK_K * stride_ak
        x_ptrs += BLOCK_K
    y = tl.sum(acc, axis=1)
    tl.atomic_add(Y + pid_b * stride_yb + offs_m, y * (pid_split + 1), mask=offs_m < M)


def case_bmv(rng, b=3, m=70, k=150):
    a = rng.standard_normal((b, m, k)).astype(np.float16)
    x = rng.standard_normal((b, k)).astype(np.float16)
    y = np.zeros((b, m), np.float32)
    def ref(a, x, y, *r):
        return [np.einsum("bmk,bk->bm", _f64(a), _f64(x)) * 3]
    return dict(kernel=bmv_kernel, grid=(-(-m // 32), b, 2), args=[a, x, y, m, k, m * k, k, 1, k, m],
                constexprs=dict(BLOCK_M=32, BLOCK_K=64), outputs=[2], reference=ref, rtol=1e-3, atol=1e-3)


@transpiler.jit
def bmv3d_kernel(A, X, Y, B, M, K, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    ob = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    om = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    ok = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_B, BLOCK_M), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + ok
        a = tl.load(A + ob[:, None, None] * M * K + om[None, :, None] * K + kk[None, None, :],
                    mask=(ob[:, None, None] < B) & (om[None, :, None] < M) & (kk[None, None, :] < K), other=0.0)
        x = tl.load(X + ob[:, None] * K + kk[None, :], mask=(ob[:, None] < B) & (kk[None, :] < K), other=0.0)
        acc += tl.sum(a * x[:, None, :], axis=2)
    tl.store(Y + ob[:, None] * M + om[None, :], acc, mask=(ob[:, None] < B) & (om[None, :] < M))


def case_bmv3d(rng, b=5, m=20, k=45):
    a = rng.standard_normal((b, m, k)).astype(np.float32)
    x = rng.standard_normal((b, k)).astype(np.float32)
    return dict(kernel=bmv3d_kernel, grid=(-(-b // 4), -(-m // 8)), args=[a, x, _poison((b, m), np.float32), b, m, k],
                constexprs=dict(BLOCK_B=4, BLOCK_M=8, BLOCK_K=16), outputs=[2],
                reference=lambda a, x, *r: [np.einsum("bmk,bk->bm", _f64(a), _f64(x))], rtol=1e-4, atol=1e-4)


@transpiler.jit
def num_pid_k(K, BK: tl.constexpr):
    return tl.cdiv(K, BK)


@transpiler.jit
def int4_matmul_kernel(a_ptr, b_ptr, c_ptr, scales_ptr, zeros_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       stride_scales_g, stride_zeros_g, groupsize,
                       BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                       GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    a_mask = offs_am[:, None] < M
    b_ptrs = b_ptr + ((offs_k[:, None] // 8) * stride_bk + offs_bn[None, :] * stride_bn)
    scales_ptrs = scales_ptr + offs_bn
    zeros_ptrs = zeros_ptr + (offs_bn // 8)
    shifter = (offs_k % 8) * 4
    zeros_shifter = (offs_bn % 8) * 4
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, num_pid_k(K, BLOCK_SIZE_K)):
        g_id = (k * BLOCK_SIZE_K) // groupsize
        ptr = scales_ptrs + g_id * stride_scales_g
        scales = tl.load(ptr, mask=offs_bn < N, other=0.0)
        ptr = zeros_ptrs + g_id * stride_zeros_g
        zeros = tl.load(ptr, mask=offs_bn < N, other=0)
        zeros = (zeros >> zeros_shifter) & 0xF
        zeros = (zeros + 1) * scales
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=offs_bn[None, :] < N, other=0)
        b = (b >> shifter[:, None]) & 0xF
        b = b * scales[None, :] - zeros[None, :]
        accumulator += tl.dot(a, b.to(tl.float16))
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += (BLOCK_SIZE_K // 8) * stride_bk
    c = accumulator.to(tl.float16)
    c_ptrs = c_ptr + stride_cm * offs_am[:, None] + stride_cn * offs_bn[None, :]
    c_mask = (offs_am[:, None] < M) & (offs_bn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def case_int4(rng, M=37, N=72, K=256, group=64, BM=16, BN=32, BK=32):
    a = (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    q = rng.integers(0, 16, (K, N)).astype(np.int64)
    packed = np.zeros((K // 8, N), np.int64)
    for i in range(8):
        packed |= q[i::8] << (4 * i)
    packed = packed.astype(np.uint32).view(np.int32)
    G = K // group
    scales = rng.uniform(0.01, 0.05, (G, N)).astype(np.float16)
    zq = rng.integers(0, 15, (G, N)).astype(np.int64)
    zp = np.zeros((G, N // 8), np.int64)
    for i in range(8):
        zp |= zq[:, i::8] << (4 * i)
    zp = zp.astype(np.uint32).view(np.int32)
    c = _poison((M, N), np.float16)
    def ref(a, b, c, s, z, *r):
        sc = _f64(scales)[np.arange(K) // group]
        zz = (_f64(zq)[np.arange(K) // group] + 1) * sc
        w = q * sc - zz
        w = w.astype(np.float16).astype(np.float64)
        return [_f64(a) @ w]
    return dict(kernel=int4_matmul_kernel, grid=(-(-M // BM) * -(-N // BN),),
                args=[a, packed, c, scales, zp, M, N, K, K, 1, N, 1, N, 1, N, N // 8, group],
                constexprs=dict(BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=4),
                outputs=[2], reference=ref, rtol=2e-2, atol=2e-2)


@transpiler.jit
def awq_gemm_kernel(a_ptr, b_ptr, c_ptr, zeros_ptr, scales_ptr, M, N, K, group_size,
                    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                    SPLIT_K: tl.constexpr):
    pid = tl.program_id(axis=0)
    pid_z = tl.program_id(1)
    num_pid_n = (N + BLOCK_SIZE_N - 1) // BLOCK_SIZE_N
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    accumulator_dtype = c_ptr.dtype.element_ty
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=accumulator_dtype)
    reverse_awq_order_tensor = ((tl.arange(0, 2) * 4)[None, :] + tl.arange(0, 4)[:, None]).reshape(8)
    shifts = reverse_awq_order_tensor * 4
    shifts = tl.broadcast_to(shifts[None, :], (BLOCK_SIZE_K * (BLOCK_SIZE_N // 8), 8))
    shifts = tl.reshape(shifts, (BLOCK_SIZE_K, BLOCK_SIZE_N))
    offsets_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    masks_am = offsets_am < M
    offsets_bn = pid_n * (BLOCK_SIZE_N // 8) + tl.arange(0, BLOCK_SIZE_N // 8)
    masks_bn = offsets_bn < N // 8
    offsets_zn = pid_n * (BLOCK_SIZE_N // 8) + tl.arange(0, BLOCK_SIZE_N // 8)
    masks_zn = offsets_zn < N // 8
    offsets_sn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    masks_sn = offsets_sn < N
    offsets_k = pid_z * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
    offsets_a = K * offsets_am[:, None] + offsets_k[None, :]
    offsets_b = (N // 8) * offsets_k[:, None] + offsets_bn[None, :]
    a_ptrs = a_ptr + offsets_a
    b_ptrs = b_ptr + offsets_b
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K * SPLIT_K)):
        masks_k = offsets_k < K
        masks_a = masks_am[:, None] & masks_k[None, :]
        a = tl.load(a_ptrs, mask=masks_a, other=0.0)
        masks_b = masks_k[:, None] & masks_bn[None, :]
        b = tl.load(b_ptrs, mask=masks_b, other=0)
        b = tl.interleave(b, b)
        b = tl.interleave(b, b)
        b = tl.interleave(b, b)
        offsets_szk = (BLOCK_SIZE_K * SPLIT_K * k + pid_z * BLOCK_SIZE_K) // group_size + tl.arange(0, 1)
        offsets_z = (N // 8) * offsets_szk[:, None] + offsets_zn[None, :]
        masks_zk = offsets_szk < K // group_size
        masks_z = masks_zk[:, None] & masks_zn[None, :]
        zeros_ptrs = zeros_ptr + offsets_z
        zeros = tl.load(zeros_ptrs, mask=masks_z, other=0)
        zeros = tl.interleave(zeros, zeros)
        zeros = tl.interleave(zeros, zeros)
        zeros = tl.interleave(zeros, zeros)
        zeros = tl.broadcast_to(zeros, (BLOCK_SIZE_K, BLOCK_SIZE_N))
        offsets_s = N * offsets_szk[:, None] + offsets_sn[None, :]
        masks_sk = offsets_szk < K // group_size
        masks_s = masks_sk[:, None] & masks_sn[None, :]
        scales_ptrs = scales_ptr + offsets_s
        scales = tl.load(scales_ptrs, mask=masks_s, other=0.0)
        scales = tl.broadcast_to(scales, (BLOCK_SIZE_K, BLOCK_SIZE_N))
        b = (b >> shifts) & 0xF
        zeros = (zeros >> shifts) & 0xF
        b = (b - zeros) * scales
        b = b.to(c_ptr.dtype.element_ty)
        accumulator = tl.dot(a, b, accumulator, out_dtype=accumulator_dtype)
        offsets_k += BLOCK_SIZE_K * SPLIT_K
        a_ptrs += BLOCK_SIZE_K * SPLIT_K
        b_ptrs += BLOCK_SIZE_K * SPLIT_K * (N // 8)
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + pid_z * N * M + N * offs_cm[:, None] + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]   # the column each nibble of a packed int32 holds


def case_awq(rng, M=19, N=64, K=128, group=32, BM=16, BN=32, BK=32, SK=1):
    a = (rng.standard_normal((M, K)) * 0.3).astype(np.float16)
    q = rng.integers(0, 16, (K, N)).astype(np.int64)
    zq = rng.integers(0, 16, (K // group, N)).astype(np.int64)
    def pack(x):
        out = np.zeros((x.shape[0], x.shape[1] // 8), np.int64)
        for j in range(8):
            out |= x[:, AWQ_ORDER[j]::8] << (4 * j)  # nibble j holds column AWQ_ORDER[j]
        return out.astype(np.uint32).view(np.int32)
    qw, qz = pack(q), pack(zq)
    scales = rng.uniform(0.01, 0.05, (K // group, N)).astype(np.float16)
    c = _poison((SK, M, N), np.float16)
    def ref(a, *r):
        g = np.arange(K) // group
        w = ((q - zq[g]) * _f64(scales)[g]).astype(np.float16)
        return [(_f64(a) @ _f64(w))[None]]
    return dict(kernel=awq_gemm_kernel, grid=(-(-M // BM) * -(-N // BN), SK), args=[a, qw, c, qz, scales, M, N, K, group],
                constexprs=dict(BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, SPLIT_K=SK), outputs=[2],
                reference=ref, rtol=3e-2, atol=3e-2)


@transpiler.jit
def int4_dot_join_kernel(A, Wq, S, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    rk2 = tl.arange(0, BK // 2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        p = tl.load(Wq + rn[:, None] * (K // 2) + (k0 // 2 + rk2)[None, :], mask=rn[:, None] < N, other=0)  # [BN, BK/2] int8
        lo = (p & 0xF).to(tl.int8) - 8
        hi = ((p >> 4) & 0xF).to(tl.int8) - 8
        w = tl.join(lo, hi).reshape(BN, BK)      # [BN, BK] : k = 2*j + {0,1}
        wf = w.to(tl.float16)
        acc += tl.dot(a, tl.trans(wf))
    s = tl.load(S + rn, mask=rn < N, other=0.0)
    acc = acc * s[None, :]
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def case_int4_dot_join(rng, M=40, N=48, K=128, BM=16, BN=32, BK=64):
    a = (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    q = rng.integers(0, 16, (N, K)).astype(np.int64)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8).view(np.int8)
    s = rng.uniform(0.01, 0.1, N).astype(np.float16)
    return dict(kernel=int4_dot_join_kernel, grid=(-(-M // BM), -(-N // BN)), args=[a, packed, s, _poison((M, N), np.float16), M, N, K],
                constexprs=dict(BM=BM, BN=BN, BK=BK), outputs=[3],
                reference=lambda a, *r: [(_f64(a) @ (q - 8).T) * _f64(s)], rtol=2e-2, atol=2e-2)


@transpiler.jit
def int8_mm_kernel(A, B, SA, SB, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k0 in range(0, tl.cdiv(K, BK)):
        kk = k0 * BK + rk
        a = tl.load(A + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b)
    sa = tl.load(SA + rm, mask=rm < M, other=0.0)
    sb = tl.load(SB + rn, mask=rn < N, other=0.0)
    c = acc.to(tl.float32) * sa[:, None] * sb[None, :]
    tl.store(C + rm[:, None] * N + rn[None, :], c.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def case_int8_mm(rng, M=40, N=72, K=100, BM=32, BN=32, BK=32):
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    sa = rng.uniform(0.001, 0.01, M).astype(np.float32)
    sb = rng.uniform(0.001, 0.01, N).astype(np.float32)
    return dict(kernel=int8_mm_kernel, grid=(-(-M // BM), -(-N // BN)), args=[a, b, sa, sb, _poison((M, N), np.float16), M, N, K],
                constexprs=dict(BM=BM, BN=BN, BK=BK), outputs=[4],
                reference=lambda a, b, sa, sb, *r: [(_f64(a) @ _f64(b)) * _f64(sa)[:, None] * _f64(sb)[None, :]], rtol=1e-2, atol=1e-2)


@transpiler.jit
def chunk_linear_attn_fwd_kernel(q, k, v, o, h, scale, T, K: tl.constexpr, V: tl.constexpr,
                                 BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    i_v, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    m_s = o_i[:, None] >= o_i[None, :]
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    offs_k = tl.arange(0, BK)
    offs_v = i_v * BV + tl.arange(0, BV)
    for i_t in range(0, tl.cdiv(T, BT)):
        offs_t = i_t * BT + tl.arange(0, BT)
        mt = offs_t < T
        # q [BT, BK], k^T [BK, BT], v [BT, BV]
        b_q = tl.load(q + i_bh * T * K + offs_t[:, None] * K + offs_k[None, :], mask=mt[:, None] & (offs_k[None, :] < K), other=0)
        b_q = (b_q * scale).to(b_q.dtype)
        b_k = tl.load(k + i_bh * T * K + offs_t[None, :] * K + offs_k[:, None], mask=mt[None, :] & (offs_k[:, None] < K), other=0)
        b_v = tl.load(v + i_bh * T * V + offs_t[:, None] * V + offs_v[None, :], mask=mt[:, None] & (offs_v[None, :] < V), other=0)
        # store the state before this chunk
        tl.store(h + (i_bh * tl.cdiv(T, BT) + i_t) * K * V + offs_k[:, None] * V + offs_v[None, :],
                 b_h.to(h.dtype.element_ty), mask=(offs_k[:, None] < K) & (offs_v[None, :] < V))
        b_s = tl.dot(b_q, b_k, allow_tf32=False)
        b_s = tl.where(m_s, b_s, 0)
        b_o = tl.dot(b_s.to(b_q.dtype), b_v, allow_tf32=False)
        b_o += tl.dot(b_q, b_h.to(b_q.dtype), allow_tf32=False)
        b_h += tl.dot(b_k, b_v, allow_tf32=False)
        tl.store(o + i_bh * T * V + offs_t[:, None] * V + offs_v[None, :], b_o.to(o.dtype.element_ty),
                 mask=mt[:, None] & (offs_v[None, :] < V))


def chunk_ref(q, k, v, scale, BT):
    BH, T, K = q.shape; V = v.shape[2]
    q, k, v = map(_f64, (q, k, v))
    o = np.zeros((BH, T, V)); h = np.zeros((BH, K, V)); hs = []
    NT = -(-T // BT)
    for it in range(NT):
        s = slice(it * BT, (it + 1) * BT)
        hs.append(h.copy())
        qq, kk, vv = q[:, s] * scale, k[:, s], v[:, s]
        att = np.tril(np.einsum("btk,bsk->bts", qq, kk))
        o[:, s] = att @ vv + qq @ h
        h = h + np.swapaxes(kk, 1, 2) @ vv
    return o, np.stack(hs, 1)


def case_chunk_fwd(rng, dtype=np.float16, BH=2, T=50, K=32, V=40, BT=16, BV=32):
    q, k = ((rng.standard_normal((BH, T, K)) * 0.5).astype(dtype) for _ in range(2))
    v = rng.standard_normal((BH, T, V)).astype(dtype)
    NT = -(-T // BT)
    o = _poison((BH, T, V), np.float32)
    h = _poison((BH, NT, K, V), np.float32)
    def ref(q, k, v, *r):
        qs = (_f64(q) * 0.25).astype(dtype)
        oo, hh = chunk_ref(qs, k, v, 1.0, BT)
        return [oo, hh]
    return dict(kernel=chunk_linear_attn_fwd_kernel, grid=(-(-V // BV), BH), args=[q, k, v, o, h, 0.25, T],
                constexprs=dict(K=K, V=V, BT=BT, BK=32, BV=BV), outputs=[3, 4], reference=ref, rtol=2e-2, atol=5e-2)


@transpiler.jit
def chunk_linear_attn_bwd_kernel(q, k, v, do, dq, dk, dv, scale, T, K: tl.constexpr, V: tl.constexpr,
                                 BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    i_bh = tl.program_id(0)
    o_i = tl.arange(0, BT)
    offs_k = tl.arange(0, BK)
    offs_v = tl.arange(0, BV)
    m_s = o_i[:, None] >= o_i[None, :]
    NT = tl.cdiv(T, BT)
    b_h = tl.zeros([BV, BK], dtype=tl.float32)
    for i in range(0, NT):
        offs_t = i * BT + o_i
        mt = offs_t < T
        b_k = tl.load(k + i_bh * T * K + offs_t[:, None] * K + offs_k[None, :], mask=mt[:, None] & (offs_k[None, :] < K), other=0)
        b_v = tl.load(v + i_bh * T * V + offs_t[None, :] * V + offs_v[:, None], mask=mt[None, :] & (offs_v[:, None] < V), other=0)  # [BV, BT]
        b_do = tl.load(do + i_bh * T * V + offs_t[:, None] * V + offs_v[None, :], mask=mt[:, None] & (offs_v[None, :] < V), other=0)
        b_ds = tl.dot(b_do, b_v, allow_tf32=False)
        b_ds = tl.where(m_s, b_ds, 0)
        b_dq = tl.dot(b_ds.to(b_k.dtype), b_k, allow_tf32=False)
        b_dq += tl.dot(b_do, b_h.to(b_do.dtype), allow_tf32=False)
        b_h = b_h + tl.dot(b_v, b_k, allow_tf32=False)
        b_dq *= scale
        tl.store(dq + i_bh * T * K + offs_t[:, None] * K + offs_k[None, :], b_dq.to(dq.dtype.element_ty),
                 mask=mt[:, None] & (offs_k[None, :] < K))
    b_h = None
    tl.debug_barrier()
    b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    m_s = o_i[:, None] <= o_i[None, :]
    for i in range(1, NT + 1):
        offs_t = T - i * BT + o_i
        offs_t = tl.where(offs_t >= 0, offs_t, -1)
        mt = (offs_t >= 0) & (offs_t < T)
        b_q = tl.load(q + i_bh * T * K + offs_t[None, :] * K + offs_k[:, None], mask=mt[None, :] & (offs_k[:, None] < K), other=0)  # [BK, BT]
        b_q = (b_q * scale).to(b_q.dtype)
        b_k = tl.load(k + i_bh * T * K + offs_t[:, None] * K + offs_k[None, :], mask=mt[:, None] & (offs_k[None, :] < K), other=0)
        b_v = tl.load(v + i_bh * T * V + offs_t[:, None] * V + offs_v[None, :], mask=mt[:, None] & (offs_v[None, :] < V), other=0)
        b_do = tl.load(do + i_bh * T * V + offs_t[:, None] * V + offs_v[None, :], mask=mt[:, None] & (offs_v[None, :] < V), other=0)
        b_s = tl.dot(b_k, b_q, allow_tf32=False)                     # [BT, BT]
        b_s = tl.where(m_s, b_s, 0).to(b_q.dtype)
        b_ds = tl.dot(b_v, tl.trans(b_do), allow_tf32=False)
        b_ds = tl.where(m_s, b_ds, 0).to(b_q.dtype)
        b_dk = tl.dot(b_ds, tl.trans(b_q), allow_tf32=False)
        b_dv = tl.dot(b_s, b_do, allow_tf32=False)
        b_dk += tl.dot(b_v, tl.trans(b_dh).to(b_v.dtype), allow_tf32=False)
        b_dv += tl.dot(b_k, b_dh.to(b_k.dtype), allow_tf32=False)
        b_dh += tl.dot(b_q, b_do, allow_tf32=False)
        tl.store(dk + i_bh * T * K + offs_t[:, None] * K + offs_k[None, :], b_dk.to(dk.dtype.element_ty),
                 mask=mt[:, None] & (offs_k[None, :] < K))
        tl.store(dv + i_bh * T * V + offs_t[:, None] * V + offs_v[None, :], b_dv.to(dv.dtype.element_ty),
                 mask=mt[:, None] & (offs_v[None, :] < V))


def causal_lin_ref(q, k, v, do, scale):
    q, k, v, do = map(_f64, (q, k, v, do))
    T = q.shape[1]
    M = np.tril(np.ones((T, T)))
    # o = (q k^T * M) v * scale
    dq = ((do @ np.swapaxes(v, 1, 2)) * M) @ k * scale
    dk = np.swapaxes((do @ np.swapaxes(v, 1, 2)) * M, 1, 2) @ q * scale
    dv = np.swapaxes((q @ np.swapaxes(k, 1, 2)) * M * scale, 1, 2) @ do
    return dq, dk, dv


def case_chunk_bwd(rng, dtype=np.float16, BH=2, T=45, K=32, V=32, BT=16):
    q, k = ((rng.standard_normal((BH, T, K)) * 0.5).astype(dtype) for _ in range(2))
    v, do = ((rng.standard_normal((BH, T, V)) * 0.5).astype(dtype) for _ in range(2))
    outs = [_poison((BH, T, K), np.float32), _poison((BH, T, K), np.float32), _poison((BH, T, V), np.float32)]
    return dict(kernel=chunk_linear_attn_bwd_kernel, grid=(BH,), args=[q, k, v, do, *outs, 0.5, T],
                constexprs=dict(K=K, V=V, BT=BT, BK=K, BV=V), outputs=[4, 5, 6],
                reference=lambda q, k, v, do, *r: list(causal_lin_ref(q, k, v, do, 0.5)), rtol=3e-2, atol=5e-2)


@transpiler.jit
def rnn_bwd_kernel(H, DH_OUT, DX, DH0, T, B, D, stride_t, BB: tl.constexpr, BD: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_d = tl.program_id(1)
    ob = pid_b * BB + tl.arange(0, BB)
    od = pid_d * BD + tl.arange(0, BD)
    mask = (ob[:, None] < B) & (od[None, :] < D)
    offs = ob[:, None] * D + od[None, :]
    dh = tl.zeros((BB, BD), dtype=tl.float32)
    for t in range(T - 1, -1, -1):
        h = tl.load(H + t * stride_t + offs, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(DH_OUT + t * stride_t + offs, mask=mask, other=0.0).to(tl.float32)
        dh = dh + g
        dpre = dh * (1 - h * h)
        tl.store(DX + t * stride_t + offs, dpre.to(DX.dtype.element_ty), mask=mask)
        dh = dpre * 0.9
    tl.store(DH0 + offs, dh, mask=mask)


def case_rnn_bwd(rng, T=9, B=5, D=70):
    h = np.tanh(rng.standard_normal((T, B, D))).astype(np.float16)
    g = rng.standard_normal((T, B, D)).astype(np.float16)
    def ref(h, g, *r):
        dh = np.zeros((B, D)); dx = np.zeros((T, B, D))
        for t in range(T - 1, -1, -1):
            dh = dh + _f64(g[t]); dp = dh * (1 - _f64(h[t]) ** 2); dx[t] = dp; dh = dp * 0.9
        return [dx, dh]
    return dict(kernel=rnn_bwd_kernel, grid=(-(-B // 4), -(-D // 32)), args=[h, g, _poison((T, B, D), np.float16), _poison((B, D), np.float32), T, B, D, B * D],
                constexprs=dict(BB=4, BD=32), outputs=[2, 3], reference=ref, rtol=2e-2, atol=2e-2)


@transpiler.jit
def chunk_fwd_h_kernel(k, v, h, g, h0, ht, s_k_h, s_k_t, s_k_d, s_v_h, s_v_t, s_v_d, s_h_h, s_h_t, T,
                       K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                       NT: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr):
    i_k, i_v, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        p_h0 = tl.make_block_ptr(h0 + i_bh * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        b_h = tl.load(p_h0, boundary_check=(0, 1)).to(tl.float32)
    for i_t in range(NT):
        p_k = tl.make_block_ptr(k + i_bh * s_k_h, (K, T), (s_k_d, s_k_t), (i_k * BK, i_t * BT), (BK, BT), (0, 1))
        p_v = tl.make_block_ptr(v + i_bh * s_v_h, (T, V), (s_v_t, s_v_d), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
        p_h = tl.make_block_ptr(h + i_bh * s_h_h + i_t * K * V, (K, V), (s_h_t, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        tl.store(p_h, b_h.to(h.dtype.element_ty), boundary_check=(0, 1))
        b_k = tl.load(p_k, boundary_check=(0, 1))
        b_v = tl.load(p_v, boundary_check=(0, 1))
        last = min((i_t + 1) * BT, T) - 1
        b_g_last = tl.load(g + i_bh * T + last)
        p_g = g + i_bh * T + i_t * BT + tl.arange(0, BT)
        b_g = tl.load(p_g, mask=(i_t * BT + tl.arange(0, BT)) < T, other=0.0)
        b_h *= tl.exp(b_g_last)
        b_k = (b_k * tl.exp(b_g_last - b_g)[None, :]).to(b_k.dtype)
        b_h += tl.dot(b_k, b_v, allow_tf32=False)
    if STORE_FINAL_STATE:
        p_ht = tl.make_block_ptr(ht + i_bh * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        tl.store(p_ht, b_h.to(ht.dtype.element_ty), boundary_check=(0, 1))


def case_fwd_h(rng, dtype=np.float16, BH=2, T=45, K=40, V=24, BT=16, BK=32, BV=16):
    kk = (rng.standard_normal((BH, T, K)) * 0.5).astype(dtype)
    vv = rng.standard_normal((BH, T, V)).astype(dtype)
    gg = np.cumsum(-rng.uniform(0.01, 0.1, (BH, T)), 1).astype(np.float32)
    h0 = rng.standard_normal((BH, K, V)).astype(np.float32)
    NT = -(-T // BT)
    h = _poison((BH, NT, K, V), np.float32); ht = _poison((BH, K, V), np.float32)
    def ref(k, v, h, g, h0, *r):
        out = np.zeros((BH, NT, K, V)); s = _f64(h0).copy()
        for it in range(NT):
            out[:, it] = s
            sl = slice(it * BT, min((it + 1) * BT, T))
            last = min((it + 1) * BT, T) - 1
            gl = _f64(g)[:, last]
            kd = (_f64(k)[:, sl] * np.exp(gl[:, None] - _f64(g)[:, sl])[..., None]).astype(dtype)
            s = s * np.exp(gl)[:, None, None] + np.swapaxes(_f64(kd), 1, 2) @ _f64(v)[:, sl]
        return [out, s]
    return dict(kernel=chunk_fwd_h_kernel, grid=(-(-K // BK), -(-V // BV), BH),
                args=[kk, vv, h, gg, h0, ht, T * K, K, 1, T * V, V, 1, NT * K * V, V, T],
                constexprs=dict(K=K, V=V, BT=BT, BK=BK, BV=BV, NT=NT, USE_INITIAL_STATE=True, STORE_FINAL_STATE=True),
                outputs=[2, 5], reference=ref, rtol=2e-2, atol=5e-2)


@transpiler.jit
def reshape_and_cache_kernel(key, value, key_cache, value_cache, slot_mapping, key_stride, value_stride,
                             num_heads, head_size, block_size, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    slot = tl.load(slot_mapping + token)
    if slot < 0:
        return
    block_idx = slot // block_size
    block_off = slot % block_size
    n = num_heads * head_size
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        k = tl.load(key + token * key_stride + offs, mask=m)
        v = tl.load(value + token * value_stride + offs, mask=m)
        tgt = block_idx * block_size * n + block_off * n + offs
        tl.store(key_cache + tgt, k, mask=m)
        tl.store(value_cache + tgt, v, mask=m)


def case_cache(rng, T=9, H=3, D=40, nblocks=5, bs=4):
    key = rng.standard_normal((T, H * D)).astype(np.float16)
    val = rng.standard_normal((T, H * D)).astype(np.float16)
    slots = rng.permutation(nblocks * bs)[:T].astype(np.int64)
    slots[2] = -1
    kc = rng.standard_normal((nblocks, bs, H * D)).astype(np.float16)
    vc = rng.standard_normal((nblocks, bs, H * D)).astype(np.float16)
    def ref(key, val, kc, vc, slots, *r):
        kc2, vc2 = kc.copy(), vc.copy()
        for t in range(T):
            s = slots[t]
            if s < 0: continue
            kc2[s // bs, s % bs] = key[t]; vc2[s // bs, s % bs] = val[t]
        return [kc2, vc2]
    return dict(kernel=reshape_and_cache_kernel, grid=(T,), args=[key, val, kc, vc, slots, H * D, H * D, H, D, bs],
                constexprs=dict(BLOCK=64), outputs=[2, 3], reference=ref, rtol=0, atol=0)


@transpiler.jit
def paged_decode_kernel(out, q, k_cache, v_cache, block_tables, seq_lens, scale, max_blocks, stride_qs,
                        stride_kb, stride_kt, stride_kh, num_kv_heads, KV_BLOCK: tl.constexpr, HEAD: tl.constexpr,
                        QUERY_GROUP: tl.constexpr):
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq_len = tl.load(seq_lens + seq)
    offs_g = tl.arange(0, QUERY_GROUP)
    offs_d = tl.arange(0, HEAD)
    offs_t = tl.arange(0, KV_BLOCK)
    qv = tl.load(q + seq * stride_qs + (kv_head * QUERY_GROUP + offs_g)[:, None] * HEAD + offs_d[None, :])
    m_i = tl.full([QUERY_GROUP], float("-inf"), tl.float32)
    l_i = tl.zeros([QUERY_GROUP], tl.float32)
    acc = tl.zeros([QUERY_GROUP, HEAD], tl.float32)
    num_blocks = tl.cdiv(seq_len, KV_BLOCK)
    for b in range(num_blocks):
        physical = tl.load(block_tables + seq * max_blocks + b).to(tl.int64)
        kv_off = physical * stride_kb + kv_head * stride_kh + offs_t[:, None] * stride_kt + offs_d[None, :]
        tmask = b * KV_BLOCK + offs_t < seq_len
        kk = tl.load(k_cache + kv_off, mask=tmask[:, None], other=0.0)
        vv = tl.load(v_cache + kv_off, mask=tmask[:, None], other=0.0)
        s = tl.sum(qv[:, None, :].to(tl.float32) * kk[None, :, :].to(tl.float32), axis=2) * scale
        s = tl.where(tmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * vv[None, :, :].to(tl.float32), axis=1)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(out + seq * stride_qs + (kv_head * QUERY_GROUP + offs_g)[:, None] * HEAD + offs_d[None, :], acc.to(out.dtype.element_ty))


def case_paged(rng, S=3, KVH=2, G=4, D=32, BS=16, nblocks=12, maxb=4):
    q = rng.standard_normal((S, KVH * G, D)).astype(np.float16)
    kc = rng.standard_normal((nblocks, BS, KVH, D)).astype(np.float16)
    vc = rng.standard_normal((nblocks, BS, KVH, D)).astype(np.float16)
    bt = np.stack([rng.permutation(nblocks)[:maxb] for _ in range(S)]).astype(np.int32)
    sl = np.array([37, 5, 64], np.int32)
    out = _poison((S, KVH * G, D), np.float16)
    def ref(out, q, kc, vc, bt, sl, *r):
        o = np.zeros((S, KVH * G, D))
        for s_ in range(S):
            L = sl[s_]
            ks = np.concatenate([_f64(kc[bt[s_, i]]) for i in range(maxb)])[:L]
            vs = np.concatenate([_f64(vc[bt[s_, i]]) for i in range(maxb)])[:L]
            for h in range(KVH):
                qq = _f64(q[s_, h * G:(h + 1) * G])
                sc = qq @ ks[:, h].T * 0.2
                p = np.exp(sc - sc.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
                o[s_, h * G:(h + 1) * G] = p @ vs[:, h]
        return [o]
    return dict(kernel=paged_decode_kernel, grid=(S, KVH), args=[out, q, kc, vc, bt, sl, 0.2, maxb, KVH * G * D,
                BS * KVH * D, KVH * D, D, KVH], constexprs=dict(KV_BLOCK=BS, HEAD=D, QUERY_GROUP=G), outputs=[0],
                reference=ref, rtol=1e-2, atol=1e-2)


@transpiler.jit
def topk_router_kernel(logits, weights, ids, n_tokens, n_experts, TOPK: tl.constexpr, BLOCK_T: tl.constexpr,
                       BLOCK_E: tl.constexpr, RENORM: tl.constexpr):
    pid = tl.program_id(0)
    rt = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    re = tl.arange(0, BLOCK_E)
    mask = (rt[:, None] < n_tokens) & (re[None, :] < n_experts)
    x = tl.load(logits + rt[:, None] * n_experts + re[None, :], mask=mask, other=float("-inf")).to(tl.float32)
    x = x - tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x)
    prob = e / tl.sum(e, axis=1, keep_dims=True)
    total = tl.zeros([BLOCK_T], tl.float32)
    for k in tl.static_range(TOPK):
        idx = tl.argmax(prob, axis=1)
        val = tl.max(prob, axis=1)
        total += val
        tl.store(weights + rt * TOPK + k, val, mask=rt < n_tokens)
        tl.store(ids + rt * TOPK + k, idx.to(tl.int32), mask=rt < n_tokens)
        prob = tl.where(re[None, :] == idx[:, None], -1.0, prob)
    if RENORM:
        for k in tl.static_range(TOPK):
            w = tl.load(weights + rt * TOPK + k, mask=rt < n_tokens, other=1.0)
            tl.store(weights + rt * TOPK + k, w / total, mask=rt < n_tokens)


def case_topk(rng, T=37, E=60, K=3, renorm=True):
    lg = rng.standard_normal((T, E)).astype(np.float32)
    def ref(lg, *r):
        p = np.exp(_f64(lg) - _f64(lg).max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
        order = np.argsort(-p, axis=1, kind="stable")[:, :K]
        w = np.take_along_axis(p, order, 1)
        if renorm: w = w / w.sum(1, keepdims=True)
        return [w, order]
    return dict(kernel=topk_router_kernel, grid=(-(-T // 16),), args=[lg, _poison((T, K), np.float32), _poison((T, K), np.int32), T, E],
                constexprs=dict(TOPK=K, BLOCK_T=16, BLOCK_E=64, RENORM=renorm), outputs=[1, 2], reference=ref, rtol=1e-5, atol=1e-6)


@transpiler.jit
def layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: tl.constexpr,
                            BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


def case_ln_bwd(rng, M=13, N=200, G=4):
    x = rng.standard_normal((M, N)).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    mean = x.mean(1).astype(np.float32); rstd = (1 / np.sqrt(x.var(1) + 1e-5)).astype(np.float32)
    lock = np.zeros(2 * G, np.int32)
    def ref(dx, dy, dw, db, x, w, mean, rstd, *r):
        xhat = (_f64(x) - _f64(mean)[:, None]) * _f64(rstd)[:, None]
        wdy = _f64(w) * _f64(dy)
        c1 = (xhat * wdy).mean(1, keepdims=True); c2 = wdy.mean(1, keepdims=True)
        dxr = (wdy - (xhat * c1 + c2)) * _f64(rstd)[:, None]
        dwp = np.zeros((G, N)); dbp = np.zeros((G, N))
        for r_ in range(M):
            dwp[r_ % G] += _f64(dy[r_]) * xhat[r_]; dbp[r_ % G] += _f64(dy[r_])
        return [dxr, dwp, dbp]
    return dict(kernel=layer_norm_bwd_dx_fused, grid=(M,), args=[_poison((M, N), np.float32), dy, _poison((G, N), np.float32),
                _poison((G, N), np.float32), x, w, mean, rstd, lock, N, N], constexprs=dict(GROUP_SIZE_M=G, BLOCK_SIZE_N=256),
                outputs=[0, 2, 3], reference=ref, rtol=1e-4, atol=1e-4)


@transpiler.jit
def _attn_inner(acc, l_i, m_i, q, K_ptrs, V_ptrs, stride_kn, stride_vn, start_m, qk_scale, N_CTX,
                ALIBI, slope, softcap,
                BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                offs_m, offs_n, EVEN_N: tl.constexpr, SOFTCAP: tl.constexpr, WINDOW: tl.constexpr):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
        if WINDOW > 0:
            lo = tl.maximum(0, (start_m * BLOCK_M - WINDOW) // BLOCK_N * BLOCK_N)
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
        hi = tl.minimum(hi, N_CTX)
    else:
        lo, hi = 0, N_CTX
    K_ptrs += lo * stride_kn
    V_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        if EVEN_N:
            k = tl.load(K_ptrs)
        else:
            k = tl.load(K_ptrs, mask=(start_n + offs_n)[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k)
        if SOFTCAP:
            qk = softcap * (2 * tl.sigmoid(2 * qk / softcap) - 1)
        if ALIBI:
            qk += slope * ((start_n + offs_n)[None, :] - offs_m[:, None]).to(tl.float32) / qk_scale
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            if not EVEN_N:
                qk = tl.where((start_n + offs_n)[None, :] < N_CTX, qk, float("-inf"))
            if WINDOW > 0:
                qk = tl.where(offs_m[:, None] - (start_n + offs_n)[None, :] < WINDOW, qk, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        if EVEN_N:
            v = tl.load(V_ptrs)
        else:
            v = tl.load(V_ptrs, mask=(start_n + offs_n)[:, None] < N_CTX, other=0.0)
        p = p.to(tl.float16)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        K_ptrs += BLOCK_N * stride_kn
        V_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@transpiler.jit
def attn_fwd_kernel(Q, K, V, sm_scale, M, Out, Slopes,
                    stride_qz, stride_qh, stride_qm, stride_qk,
                    stride_kz, stride_kh, stride_kn, stride_kk,
                    stride_vz, stride_vh, stride_vk, stride_vn,
                    stride_oz, stride_oh, stride_om, stride_on,
                    Z, H, N_CTX, softcap,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                    EVEN_N: tl.constexpr, ALIBI: tl.constexpr, SOFTCAP: tl.constexpr, WINDOW: tl.constexpr):
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    q_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    k_offset = off_z.to(tl.int64) * stride_kz + off_h.to(tl.int64) * stride_kh
    v_offset = off_z.to(tl.int64) * stride_vz + off_h.to(tl.int64) * stride_vh
    o_offset = off_z.to(tl.int64) * stride_oz + off_h.to(tl.int64) * stride_oh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    Q_ptrs = Q + q_offset + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    K_ptrs = K + k_offset + offs_d[:, None] * stride_kk + offs_n[None, :] * stride_kn
    V_ptrs = V + v_offset + offs_n[:, None] * stride_vk + offs_d[None, :] * stride_vn
    O_ptrs = Out + o_offset + offs_m[:, None] * stride_om + offs_d[None, :] * stride_on
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    if ALIBI:
        slope = tl.load(Slopes + off_h)
    else:
        slope = 0.0
    q = tl.load(Q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    if STAGE & 1:
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, K_ptrs, V_ptrs, stride_kn, stride_vk, start_m, qk_scale, N_CTX,
                                    ALIBI, slope, softcap, BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m, offs_n,
                                    EVEN_N, SOFTCAP, WINDOW)
    if STAGE & 2:
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, K_ptrs, V_ptrs, stride_kn, stride_vk, start_m, qk_scale, N_CTX,
                                    ALIBI, slope, softcap, BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m, offs_n,
                                    EVEN_N, SOFTCAP, WINDOW)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i, mask=offs_m < N_CTX)
    tl.store(O_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


def attn_ref(q, k, v, scale, causal, slopes=None):
    q, k, v = map(_f64, (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * scale
    Tq = s.shape[-1]
    if slopes is not None:
        rel = np.arange(Tq)[None, :] - np.arange(Tq)[:, None]
        s = s + _f64(slopes)[None, :, None, None] * rel * np.log(2)
    if causal:
        s = np.where(np.tril(np.ones((Tq, Tq)))[None, None] > 0, s, -np.inf)
    mx = s.max(-1, keepdims=True)
    p = np.exp(s - mx)
    l = p.sum(-1, keepdims=True)
    return (p / l) @ v, (mx[..., 0] + np.log(l[..., 0])) / np.log(2) / 1.0


def case_attn(rng, causal=True, Z=2, H=3, N=100, D=64, BM=64, BN=32, even=False, alibi=False, num_stages=3, num_warps=4):
    q, k, v = ((rng.standard_normal((Z, H, N, D)) * 0.5).astype(np.float16) for _ in range(3))
    out = _poison((Z, H, N, D), np.float16); M = _poison((Z, H, N), np.float32)
    slopes = rng.uniform(0.1, 0.5, H).astype(np.float32)
    scale = 1 / np.sqrt(D)
    def ref(q, k, v, *r):
        o, lse = attn_ref(q, k, v, scale, causal, slopes if alibi else None)
        # M holds m*scale*log2e + log2(l) in base 2: == lse_e * log2e
        return [lse * 1.0, o]
    st = lambda a: [s // a.itemsize for s in a.strides]
    return dict(kernel=attn_fwd_kernel, grid=(-(-N // BM), Z * H),
                args=[q, k, v, scale, M, out, slopes, *st(q), *st(k), *st(v), *st(out), Z, H, N, 0.0],
                constexprs=dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, STAGE=3 if causal else 1, EVEN_N=even, ALIBI=alibi,
                                SOFTCAP=False, WINDOW=0),
                num_stages=num_stages, num_warps=num_warps, outputs=[4, 5], reference=lambda q, k, v, *r: list(attn_ref(q, k, v, scale, causal, slopes if alibi else None))[::-1],
                rtol=2e-2, atol=2e-2)


def case_shared_query(rng, use_first, programs=3, n_blocks=3, bm=32, bn=32, d=64):
    q = (rng.standard_normal((programs, bm, d)) * 0.5).astype(np.float16)
    k1, k2 = ((rng.standard_normal((n_blocks, d, bn)) * 0.5).astype(np.float16) for _ in range(2))

    def ref(q, k1, k2, *rest):
        acc = np.zeros((programs, bm, bn))
        if use_first:
            acc += sum(_f64(q) @ _f64(k1[i]) for i in range(n_blocks))
        for i in range(n_blocks):
            acc = acc * 0.5 + _f64(q) @ _f64(k2[i])
        return [acc]
    return dict(kernel=shared_query_kernel, grid=(programs,), args=[q, k1, k2, _poison((programs, bm, bn), np.float32),
                n_blocks, 2 if use_first else 0], constexprs=dict(BM=bm, BN=bn, D=d), outputs=[3], reference=ref,
                rtol=1e-2, atol=1e-2)


def realworld_cases(rng):
    """Every case of this module, with an id."""
    return [
        ("fused_recurrent_fwd", case_fused_recurrent_fwd(rng, False)),
        ("fused_recurrent_fwd_reversed", case_fused_recurrent_fwd(rng, True)),
        ("fused_recurrent_bwd", case_fused_recurrent_bwd(rng)),
        ("lerp_scalar_params_w_r", case_lerp(rng)),
        ("weighted_rowsum", case_weighted_rowsum(rng, True)),
        ("unweighted_rowsum_none_pointer_in_loop", case_weighted_rowsum(rng, False)),
        ("streamk_128x128", case_streamk(rng, block=(128, 128, 32), stages=3, streamk_tiles=5)),
        ("transpose_256x128_fp32_16_warps", case_transpose(rng)),
        ("rotary_halves", case_rotary(rng, False, False)), ("rotary_interleaved_conj", case_rotary(rng, True, True)),
        ("rope_head_groups", case_rope_heads(rng, False)), ("rope_head_groups_bwd", case_rope_heads(rng, True)),
        ("batched_matvec_3d_grid_atomics", case_bmv(rng)), ("batched_matvec_3d_blocks", case_bmv3d(rng)),
        ("gptq_int4_matmul", case_int4(rng)), ("awq_int4_gemm", case_awq(rng)),
        ("int4_join_dot", case_int4_dot_join(rng)), ("int8_matmul_scaled", case_int8_mm(rng)),
        ("chunk_linear_attn_fwd", case_chunk_fwd(rng)), ("chunk_linear_attn_bwd", case_chunk_bwd(rng)),
        ("rnn_bwd_reversed", case_rnn_bwd(rng)), ("chunk_fwd_h_block_ptrs", case_fwd_h(rng)),
        ("reshape_and_cache", case_cache(rng)), ("paged_attention_decode", case_paged(rng)),
        ("topk_router", case_topk(rng)), ("layer_norm_bwd_locks", case_ln_bwd(rng)),
        ("shared_query_both_loops", case_shared_query(rng, True)),
        ("shared_query_second_loop_only", case_shared_query(rng, False)),
        ("attention_causal", case_attn(rng)), ("attention_alibi", case_attn(rng, alibi=True)),
        ("attention_full_8_warps", case_attn(rng, causal=False, BM=128, BN=64, num_warps=8, N=200)),
    ]
