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
    ]
