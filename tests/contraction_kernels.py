"""Kernels whose products feed adds and subtracts (analysis/fp_contraction.py) and exp2 near the subnormal range.

`scaled_shift` is attention's pattern: the product `x * scale` is read twice (a row maximum and `y - m`), so
only an explicit contraction makes `y - m` one fma, as Triton's LLVM does. `products` covers each operand
position (`p + c`, `c + p`, `p - c`, `c - p`, two products), a product outside the loop that reads it, and
fp16 operands (through `products` too, fused as fp32's are, in fp16). `half_fma` is `tl.fma` of 16-bit values.
"""
import transpiler
import transpiler.language as tl


@transpiler.jit
def scaled_shift(X, Y, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * n_cols + cols, mask=mask, other=0.0)
    y = x * scale
    m = tl.max(tl.where(mask, y, -float("inf")), 0)
    tl.store(Y + row * n_cols + cols, tl.math.exp2(y - m), mask=mask)


@transpiler.jit
def products(A, B, C, OUT, n, steps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(A + offs, mask=mask, other=1.0)
    b = tl.load(B + offs, mask=mask, other=1.0)
    c = tl.load(C + offs, mask=mask, other=1.0)
    p = a * b
    q = b * c
    tl.store(OUT + offs, p + c, mask=mask)
    tl.store(OUT + n + offs, c + p, mask=mask)
    tl.store(OUT + 2 * n + offs, p - c, mask=mask)
    tl.store(OUT + 3 * n + offs, c - p, mask=mask)
    tl.store(OUT + 4 * n + offs, p - q, mask=mask)
    acc = c
    for _ in range(steps):
        acc = acc + p            # p is made outside the loop: not fused (another basic block)
    tl.store(OUT + 5 * n + offs, acc, mask=mask)


@transpiler.jit
def half_products(A, B, C, OUT, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(A + offs, mask=mask, other=1.0)
    b = tl.load(B + offs, mask=mask, other=1.0)
    c = tl.load(C + offs, mask=mask, other=1.0)
    tl.store(OUT + offs, a * b - c, mask=mask)


@transpiler.jit
def exp2_of(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.math.exp2(tl.load(X + offs, mask=mask, other=0.0)), mask=mask)


@transpiler.jit
def half_fma(A, B, C, OUT, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(A + offs, mask=mask, other=1.0)
    b = tl.load(B + offs, mask=mask, other=1.0)
    c = tl.load(C + offs, mask=mask, other=1.0)
    tl.store(OUT + offs, tl.fma(a, b, c), mask=mask)
