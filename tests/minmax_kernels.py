"""Kernels for the result types of tl.minimum / tl.maximum / tl.clamp / tl.fma, in the Triton dialect only.

Triton turns each Python number given to these into an int32 / fp32 (or wider) scalar before promoting, unlike
`+`, whose literals are weak; min, max and clamp compute bf16 operands in fp32 and return fp32. Shared by the
CPU tests (tests/test_minmax_typing.py) and the GPU ones, which also load this file as Triton's (bench/twins.py).
Inputs come as float64 or int64 arrays and are converted in the kernel to the dtype under test (`DT`), so bf16
needs no host bf16 array.
"""
import transpiler
import transpiler.language as tl


@transpiler.jit
def min_with_number_kernel(X, OUT, N, DT: tl.constexpr, C: tl.constexpr, MAX: tl.constexpr,
                           BLOCK: tl.constexpr):
    """OUT = minimum(x, C) (maximum when MAX), then plus 1: the added 1 shows the result type's width."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0).to(DT)
    if MAX:
        y = tl.maximum(x, C)
    else:
        y = tl.minimum(x, C)
    tl.static_print(y.dtype)
    tl.store(OUT + offs, y + 1, mask=m)


@transpiler.jit
def bf16_max_then_add_kernel(X, Y, Z, OUT, N, BLOCK: tl.constexpr):
    """maximum(x, y) + z on bf16 blocks: the max is fp32, so the sum is rounded once, to fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.bfloat16)
    y = tl.load(Y + offs, mask=m, other=0.0).to(tl.bfloat16)
    z = tl.load(Z + offs, mask=m, other=0.0).to(tl.bfloat16)
    s = tl.maximum(x, y) + z
    tl.static_print(s.dtype)
    tl.store(OUT + offs, s, mask=m)


@transpiler.jit
def clamp_kernel(X, LO, HI, OUT, N, DT: tl.constexpr, BLOCK: tl.constexpr):
    """clamp(x, lo, hi) + lo on blocks of one dtype (bf16 in fp32)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0).to(DT)
    lo = tl.load(LO + offs, mask=m, other=0.0).to(DT)
    hi = tl.load(HI + offs, mask=m, other=0.0).to(DT)
    y = tl.clamp(x, lo, hi) + lo
    tl.static_print(y.dtype)
    tl.store(OUT + offs, y, mask=m)


@transpiler.jit
def clamp_number_kernel(X, OUT, N, LO: tl.constexpr, HI: tl.constexpr, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0).to(DT)
    y = tl.clamp(x, LO, HI)
    tl.static_print(y.dtype)
    tl.store(OUT + offs, y, mask=m)


@transpiler.jit
def fma_number_kernel(X, Y, OUT, N, C: tl.constexpr, DT: tl.constexpr, BLOCK: tl.constexpr):
    """fma(x, y, C) with a Python number as the addend."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0).to(DT)
    y = tl.load(Y + offs, mask=m, other=0.0).to(DT)
    r = tl.fma(x, y, C)
    tl.static_print(r.dtype)
    tl.store(OUT + offs, r, mask=m)


@transpiler.jit
def fma_blocks_kernel(X, Y, Z, OUT, N, DT: tl.constexpr, Z_DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0).to(DT)
    y = tl.load(Y + offs, mask=m, other=0.0).to(DT)
    z = tl.load(Z + offs, mask=m, other=0.0).to(Z_DT)
    r = tl.fma(x, y, z)
    tl.static_print(r.dtype)
    tl.store(OUT + offs, r, mask=m)
