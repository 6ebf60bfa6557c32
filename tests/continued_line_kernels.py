"""Kernels whose Python lines are continued with a backslash: the emitter shows each Python line as a `//`
comment, and a comment ending in a backslash would splice the next C++ line (a declaration, or a store) into
it. Shared by tests/test_continued_lines.py (CPU) and tests/test_gpu_continued_lines.py."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def continued_store_kernel(X, Y, OUT, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    x = tl.load(X + offs, mask=live, other=0.0)
    y = tl.load(Y + offs, mask=live, other=0.0)
    t = tl.minimum(x, y) - \
        tl.maximum(x, y)
    tl.store(OUT + offs, t * 2.0 + \
             x, mask=live)
    tl.store(OUT + n + offs, \
             y, mask=live)


def reference(x, y):
    t = (x.astype(float).clip(max=y) - x.astype(float).clip(min=y))
    return t * 2.0 + x, y
