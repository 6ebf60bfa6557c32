"""Kernels that compute with fp8 values the way Triton 3.6 compiles them (shared by the CPU and GPU tests, and
loaded by Triton itself as a second reference on the GPU): an fp8 block meeting a wider float block is widened
to it, two different fp8 types meet in fp16, and one fp8 type keeps only selection, `tl.abs` and
`tl.maximum` / `tl.minimum` (Triton's front end types its arithmetic too, but its LLVM lowering fails)."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def fp8_dequant_rows_kernel(Q, S, Y, n_cols, stride_q, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    q = tl.load(Q + row * stride_q + cols, mask=mask, other=0.0)
    scale = tl.load(S + row)
    tl.store(Y + row * stride_y + cols, q * scale, mask=mask)      # fp8 * fp32 scalar: fp32


@transpiler.jit
def fp8_mixed_kernel(A, B, H, SUM, HSUM, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(A + offs, mask=mask)            # e4m3
    b = tl.load(B + offs, mask=mask)            # e5m2
    h = tl.load(H + offs, mask=mask)            # fp16
    tl.store(SUM + offs, a + b, mask=mask)      # two fp8 types: fp16
    tl.store(HSUM + offs, a * h - b, mask=mask)  # with fp16: fp16


@transpiler.jit
def fp8_select_kernel(X, Y, ABS, PICK, n, threshold, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    y = tl.load(Y + offs, mask=mask)
    ax = tl.abs(x)
    big = ax.to(tl.float32) > threshold
    tl.store(ABS + offs, ax, mask=mask)
    tl.store(PICK + offs, tl.where(big, tl.maximum(x, y), tl.minimum(x, y)), mask=mask)
