"""Kernels that the torch custom-op tests wrap (`test_torch_ops.py`, `test_gpu_torch.py`), in Triton's dialect so
that `triton_twin.triton_twin_of` can load the same source under Triton as a second reference."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def affine_kernel(X, Y, n, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask).to(tl.float32)
    tl.store(Y + offs, (x * alpha + beta).to(Y.dtype.element_ty), mask=mask)


@transpiler.jit
def row_softmax_kernel(OUT, IN, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(IN + row * in_stride + cols, mask=valid, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(OUT + row * out_stride + cols, (e / tl.sum(e, axis=0)).to(OUT.dtype.element_ty), mask=valid)


@transpiler.jit
def add_into_kernel(ACC, X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ACC + offs, tl.load(ACC + offs, mask=mask) + tl.load(X + offs, mask=mask), mask=mask)
