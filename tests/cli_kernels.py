"""Kernels the command-line tests name by file (tests/test_cli.py, tests/test_aot.py)."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def scale(X, Y, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m) * alpha, mask=m)


@transpiler.jit
def square_tile(A, B, C, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(A + r[:, None] * BLOCK + r[None, :])
    b = tl.load(B + r[:, None] * BLOCK + r[None, :])
    tl.store(C + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))
