"""Kernels whose loads the TMA pass (analysis/tma.py) stages on sm_90a, beside the examples' matmul and the dot and
block-pointer kernels: a persistent matmul (grid = number of SMs, `tl.range` over the output tiles, as in
Triton's persistent matmul tutorial) and one whose A rows are gathered through an index array, which must
stay on cp.async."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def persistent_matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K + tl.arange(0, BLOCK_K)
            a = tl.load(A + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak,
                        mask=offs_k[None, :] < K, other=0.0)
            b = tl.load(B + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                        mask=offs_k[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(C + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(C.dtype.element_ty),
                 mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@transpiler.jit
def gathered_rows_matmul_kernel(A, Rows, B, C, M, N, K, stride_am, stride_bk, stride_cm,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A[Rows] @ B: the rows of A come from an index array, so A's tile is no box of a tensor map."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.load(Rows + offs_m, mask=offs_m < M, other=0)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        offs_k = k + tl.arange(0, BLOCK_K)
        a = tl.load(A + rows[:, None] * stride_am + offs_k[None, :], mask=offs_k[None, :] < K, other=0.0)
        b = tl.load(B + offs_k[:, None] * stride_bk + offs_n[None, :],
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + offs_m[:, None] * stride_cm + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@transpiler.jit
def td_matmul_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B through tensor descriptors made in the kernel (Triton 3.6's tl.make_tensor_descriptor)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(B, [K, N], [stride_bk, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(C, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = tl.load_tensor_descriptor(b_desc, [k, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@transpiler.jit
def td_shift_kernel(X, Y, M, N, stride_x, stride_y, SHIFT: tl.constexpr, PAD: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr):
    """Y[i, j] = X[i, j + SHIFT] (padding outside X), block by block: loads and stores that cross the edges."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    src = tl.make_tensor_descriptor(X, [M, N], [stride_x, 1], [BM, BN], padding_option=PAD)
    dst = tl.make_tensor_descriptor(Y, [M, N], [stride_y, 1], [BM, BN])
    block = src.load([pid_m * BM, pid_n * BN + SHIFT])
    dst.store([pid_m * BM, pid_n * BN], block)
