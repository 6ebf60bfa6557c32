"""A kernel whose optional input is tested as a pointer (`if bias_ptr:`, vLLM's scaled-mm epilogue): given an
array the branch runs (the pointer is not null), given None it is folded away. Shared by the CPU and GPU tests
and loaded by Triton itself as a second reference on the GPU."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def add_optional_bias_kernel(X, BIAS, OUT, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(X + row * n_cols + cols, mask=mask) * 2.0
    if BIAS:
        y += tl.load(BIAS + cols, mask=mask)
    if not BIAS:
        y = -y
    tl.store(OUT + row * n_cols + cols, y, mask=mask)
