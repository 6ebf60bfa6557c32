"""Benchmark-only kernels, in Triton dialect, with their host wrappers: 2-D copy, transpose, row argmax,
matmul, and a tiny kernel for launch overhead.

Written for our transpiler exactly as the examples are; `bench/twins.py` loads this file a second time with
`transpiler` standing for Triton, so both are timed from this one source. The wrappers take NumPy arrays
(CPU interpreter), CuPy arrays or torch tensors, like the examples'.
"""
import transpiler
import transpiler.language as tl

import _harness as H  # examples/_harness.py; bench/twins.py puts examples/ on sys.path


@transpiler.transpile
def copy2d_kernel(X, Y, M, N, x_stride, y_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tile = tl.load(X + offs_m[:, None] * x_stride + offs_n[None, :], mask=mask)
    tl.store(Y + offs_m[:, None] * y_stride + offs_n[None, :], tile, mask=mask)


@transpiler.transpile
def transpose_kernel(X, Y, M, N, x_stride, y_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tile = tl.load(X + offs_m[:, None] * x_stride + offs_n[None, :], mask=mask)
    # Y[n, m] = X[m, n]: the store runs down the tile's columns, so a coalesced store needs the tile in
    # another thread mapping than the coalesced load (a conversion through shared memory).
    tl.store(Y + offs_n[None, :] * y_stride + offs_m[:, None], tile, mask=mask)


@transpiler.transpile
def argmax_kernel(X, OUT, n_cols, x_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * x_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(OUT + row, tl.argmax(x, axis=0))


@transpiler.transpile
def matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering (Triton's matmul tutorial): GROUP_M row-blocks of C are walked together, so the
    # programs running at once share their A and B tiles in L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Rows and columns past the edge wrap around (% M, % N): loads stay in bounds without a mask, and the
    # store below is masked.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(C + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(C.dtype.element_ty), mask=c_mask)


@transpiler.transpile
def tiny_kernel(X, Y, n, scale):
    """Four arguments, one small block: its launch cost is all host time."""
    offs = tl.arange(0, 128)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * scale, mask=mask)


# ---- host wrappers --------------------------------------------------------------------------------------------


def _col_stride(a, dim):
    return a.stride(dim) if H.library(a) == "torch" else a.strides[dim] // a.itemsize


def copy2d(x, out=None, block_m=16, block_n=256):
    """Copy 2-D `x` (rows may be strided) into contiguous `out`."""
    assert H.has_unit_column_stride(x)
    m, n = x.shape
    out = H.empty(x, (m, n)) if out is None else out
    grid = (transpiler.cdiv(m, block_m), transpiler.cdiv(n, block_n))
    H.launcher(copy2d_kernel, x)[grid](x, out, m, n, H.row_stride(x), H.row_stride(out),
                                       BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4)
    return out


def transpose(x, out=None, block=64):
    """`x.T`, materialised: [M, N] -> contiguous [N, M]."""
    assert H.has_unit_column_stride(x)
    m, n = x.shape
    out = H.empty(x, (n, m)) if out is None else out
    grid = (transpiler.cdiv(m, block), transpiler.cdiv(n, block))
    H.launcher(transpose_kernel, x)[grid](x, out, m, n, H.row_stride(x), H.row_stride(out),
                                          BLOCK_M=block, BLOCK_N=block, num_warps=4)
    return out


def row_argmax(x, out=None):
    """Index (int32) of the largest element of each row; the first one on ties."""
    assert H.has_unit_column_stride(x)
    m, n = x.shape
    out = H.empty(x, (m,), "int32") if out is None else out
    block = transpiler.next_power_of_2(n)
    H.launcher(argmax_kernel, x)[(m,)](x, out, n, H.row_stride(x), BLOCK=block,
                                       num_warps=min(max(block // 256, 1), 8))
    return out


def matmul_config(m, n, k):
    """One fixed tile configuration per shape class (no autotuning), used for ours and Triton alike."""
    if m <= 64:  # skinny: few rows of C, so tile wide along N and deep along K
        return dict(BLOCK_M=max(16, transpiler.next_power_of_2(m)), BLOCK_N=128, BLOCK_K=128, GROUP_M=1,
                    num_warps=4, num_stages=4)
    return dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4)


def matmul(a, b, out=None, config=None):
    """`a @ b` for 2-D fp16/bf16 arrays, fp32 accumulation, result in a's dtype."""
    m, k = a.shape
    k2, n = b.shape
    assert k == k2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    out = H.empty(a, (m, n)) if out is None else out
    config = config or matmul_config(m, n, k)
    grid = (transpiler.cdiv(m, config["BLOCK_M"]) * transpiler.cdiv(n, config["BLOCK_N"]),)
    H.launcher(matmul_kernel, a)[grid](a, b, out, m, n, k, H.row_stride(a), _col_stride(a, 1),
                                       H.row_stride(b), _col_stride(b, 1), H.row_stride(out), _col_stride(out, 1),
                                       **config)
    return out


def tiny(x, y, n, scale):
    H.launcher(tiny_kernel, x)[(1,)](x, y, n, scale, num_warps=4)
