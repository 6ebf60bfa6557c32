"""Kernels taking tensor descriptors from the host (`TensorDescriptor` arguments, Triton 3.6) the way Triton's
tutorials and attention kernels write them, shared by the CPU and GPU tests (and loaded by Triton itself as a
second reference on the GPU). `_maybe_make_tensor_desc` is the helper those kernels use to accept either a host
descriptor or a plain pointer."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@transpiler.jit
def scale_tiles_kernel(x_desc, y_desc, M, N, scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y = x * scale, tile by tile; x and y are host descriptors or pointers to contiguous [M, N] arrays."""
    x_desc = _maybe_make_tensor_desc(x_desc, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    y_desc = _maybe_make_tensor_desc(y_desc, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    x = x_desc.load([off_m, off_n])
    y_desc.store([off_m, off_n], (x * scale).to(y_desc.dtype))


@transpiler.jit
def matmul_descriptor_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr):
    """C = A @ B.T with A [M, K], B [N, K] (K-major) and C [M, N] all given as host descriptors."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = pid_m * BLOCK_M
    offs_bn = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = k * BLOCK_K
        a = a_desc.load([offs_am, offs_k])
        b = b_desc.load([offs_bn, offs_k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([offs_am, offs_bn], acc.to(c_desc.dtype))


@transpiler.jit
def row_max_nan_padded_kernel(x_desc, out, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Per row of a [BLOCK_R, BLOCK_C] tile read with NaN padding: the maximum of the real values (the padding
    dropped with tl.where) and how many padded columns were read."""
    r0 = tl.program_id(0) * BLOCK_R
    x = x_desc.load([r0, 0])
    padded = x != x
    best = tl.max(tl.where(padded, -float("inf"), x), axis=1)
    rows = r0 + tl.arange(0, BLOCK_R)
    n_padded = tl.sum(padded.to(tl.int32), axis=1)
    tl.store(out + rows * 2, best, mask=rows < n_rows)
    tl.store(out + rows * 2 + 1, n_padded.to(tl.float32), mask=rows < n_rows)
