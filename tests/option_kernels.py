"""Kernels for tests/test_options.py and tests/test_gpu_options.py (Triton's @jit and launch options)."""
import transpiler
import transpiler.language as tl


@transpiler.jit(do_not_specialize=["n", 0])
def copy_generic(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


@transpiler.jit
def copy_specialized(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


def _checked_sqrt(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=1.0)
    tl.device_assert(x >= 0, "sqrt of a negative input")
    tl.device_assert(n > 0)
    tl.store(Y + offs, tl.sqrt(x), mask=offs < n)


checked_sqrt_debug = transpiler.jit(_checked_sqrt, debug=True)
checked_sqrt = transpiler.jit(_checked_sqrt)


@transpiler.jit
def softmax_rows(X, Y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(Y + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)
