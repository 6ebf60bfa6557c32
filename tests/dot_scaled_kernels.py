"""A microscaled matrix product as users write one (`tl.dot_scaled` with e8m0 scales per 32 elements of K),
shared by the CPU and GPU tests and loaded by Triton itself as a second reference on the GPU."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def dot_scaled_kernel(A, A_SCALE, B, B_SCALE, C, m, n, stride_am, stride_bk, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, A_FORMAT: tl.constexpr, B_FORMAT: tl.constexpr, HAS_A_SCALE: tl.constexpr,
                      HAS_B_SCALE: tl.constexpr, FAST_MATH: tl.constexpr):
    A_PACK: tl.constexpr = 2 if A_FORMAT == "e2m1" else 1
    B_PACK: tl.constexpr = 2 if B_FORMAT == "e2m1" else 1
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ka = tl.arange(0, BK // A_PACK)
    kb = tl.arange(0, BK // B_PACK)
    groups = tl.arange(0, BK // 32)
    a = tl.load(A + rows[:, None] * stride_am + ka[None, :], mask=rows[:, None] < m, other=0)
    b = tl.load(B + kb[:, None] * stride_bk + cols[None, :], mask=cols[None, :] < n, other=0)
    a_scale = None
    b_scale = None
    if HAS_A_SCALE:
        a_scale = tl.load(A_SCALE + rows[:, None] * (BK // 32) + groups[None, :], mask=rows[:, None] < m, other=127)
    if HAS_B_SCALE:
        b_scale = tl.load(B_SCALE + cols[:, None] * (BK // 32) + groups[None, :], mask=cols[:, None] < n, other=127)
    c = tl.dot_scaled(a, a_scale, A_FORMAT, b, b_scale, B_FORMAT, fast_math=FAST_MATH)
    tl.store(C + rows[:, None] * n + cols[None, :], c, mask=(rows[:, None] < m) & (cols[None, :] < n))
