"""Kernels using `triton.language` names real kernels use that were missing here: `tl.reduce_or`,
`tl.map_elementwise` (a scalar function that branches, one with two results over broadcast operands),
`tl.add` / `tl.sub` / `tl.mul` (with `sanitize_overflow`), `tl.const` parameter annotations, `tl.pi32_t`,
`tl.TRITON_MAX_TENSOR_NUMEL`, `while tl.condition(...)` and `tl.bitonic_merge`. Written as Triton users write them; the GPU tests run
the same source under Triton (tests/triton_twin.py)."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def or_rows_and_columns(X, ROWS_OR, COLS_OR, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.arange(0, BLOCK_R)[:, None]
    cols = tl.arange(0, BLOCK_C)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(X + rows * n_cols + cols, mask=mask, other=0)
    tl.store(ROWS_OR + tl.arange(0, BLOCK_R), tl.reduce_or(x, 1), mask=tl.arange(0, BLOCK_R) < n_rows)
    by_column = x.reduce_or(0, keep_dims=True)
    tl.store(COLS_OR + cols, by_column, mask=cols < n_cols)


@transpiler.jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@transpiler.jit
def divmod_scalar(a, b):
    q = a // b
    return q, a - q * b


@transpiler.jit
def mapped(X, A, Y, Q, R, n, alpha, BLOCK: tl.constexpr, D: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    tl.store(Y + offs, tl.map_elementwise(selu_scalar, x, alpha), mask=mask)
    a = tl.load(A + offs, mask=mask, other=1)
    q, r = tl.map_elementwise(divmod_scalar, a[:, None], tl.arange(1, D + 1)[None, :])
    out = offs[:, None] * D + tl.arange(0, D)[None, :]
    tl.store(Q + out, q, mask=mask[:, None])
    tl.store(R + out, r, mask=mask[:, None])


@transpiler.jit
def named_operators(X: tl.const, BITS: tl.const, Y, Z, n, steps, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= tl.TRITON_MAX_TENSOR_NUMEL)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0)
    y = tl.add(tl.mul(x, 3), tl.sub(x, 7, sanitize_overflow=False))
    i = 0
    while tl.condition(i < steps, disable_licm=True):
        y = tl.add(y, i)
        i += 1
    tl.store(Y + offs, y, mask=mask)
    tl.store(Z + offs, tl.load(BITS.to(tl.pi32_t) + offs, mask=mask, other=0), mask=mask)


@transpiler.jit
def merged_rows(X, Y, DESCENDING: tl.constexpr, ROWS: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, tl.bitonic_merge(tl.load(X + offs), descending=DESCENDING))


@transpiler.jit
def print_if_negative(v):
    if v < 0:
        tl.device_print("negative", v)
    return v


@transpiler.jit
def mapped_for_effects(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.map_elementwise(print_if_negative, tl.load(X + offs, mask=offs < n, other=0.0))   # unread: kept to print


@transpiler.jit
def store_doubled(p, v):
    tl.store(p, v * 2)
    return v


@transpiler.jit
def mapped_store(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.map_elementwise(store_doubled, Y + offs, tl.load(X + offs))      # Triton refuses stores in the function
