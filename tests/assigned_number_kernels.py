"""Kernels whose assigned numbers Triton types as int32 / fp32 scalars (tests/test_assigned_numbers.py,
tests/test_gpu_assigned_numbers.py; the second runs them under Triton too)."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def scaled_int8_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    scale = 100
    scaled = x * scale
    tl.store(Y + offs, scaled, mask=mask)


@transpiler.jit
def constexpr_scale_int8_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    scale: tl.constexpr = 100
    scaled = x * scale
    tl.store(Y + offs, scaled, mask=mask)


@transpiler.jit
def eps_fp16_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    eps = 1e-3
    tl.store(Y + offs, x + eps, mask=mask)


@transpiler.jit
def unrolled_sum_fp16_kernel(X, Y, N, BLOCK: tl.constexpr, PARTS: tl.constexpr):
    """`acc = 0.0` makes an fp32 accumulator (Triton's), so four fp16 parts are summed in fp32."""
    offs = tl.arange(0, BLOCK)
    acc = 0.0
    for part in tl.static_range(PARTS):
        acc += tl.load(X + part * N + offs, mask=offs < N)
    tl.store(Y + offs, acc, mask=offs < N)


@transpiler.jit
def tuple_and_half_block_kernel(X, Y, N, BLOCK: tl.constexpr):
    """Tuple assignment types each number; a name assigned a constexpr still gives a tl.arange bound (Triton
    refuses that; docs/language.md says we accept it)."""
    HALF = BLOCK // 2
    offs = tl.program_id(0) * HALF + tl.arange(0, HALF)
    mask = offs < N
    shift, gain = 3, 0.5
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, (x + shift) * gain, mask=mask)


@transpiler.jit
def _gain():
    return 100


@transpiler.jit
def _shift_and_eps():
    return 3, 1e-3


@transpiler.jit
def helper_gain_int8_kernel(X, Y, N, BLOCK: tl.constexpr):
    """A helper's returned number is an int32 scalar in Triton (its `return` decays numbers), so the product of
    int8 values and `_gain()` is int32: no int8 wrap-around."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, x * _gain(), mask=mask)


@transpiler.jit
def _eps():
    return 1e-3


@transpiler.jit
def helper_eps_fp16_kernel(X, Y, N, BLOCK: tl.constexpr):
    """Returned numbers are typed, tuple items one by one: `x + _shift_and_eps()[0]` is fp16 (a float block
    meeting an int32 scalar keeps its type) and `+ _eps()` fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, (x + _shift_and_eps()[0]) + _eps(), mask=mask)
