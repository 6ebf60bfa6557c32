"""Harness kernels and helpers shared by the interpreter tests.

The harness kernels load their inputs, apply an operation given as a constexpr function, record the
result's dtype in a constexpr list (`SINK`) and store the result (the store casts it to the output array's
element type). Outputs are poisoned before every run so a kernel that does nothing cannot pass.
"""
import numpy as np

import transpiler.language as tl
from transpiler.interpreter import interpret


def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr, SINK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    result = OP(tl.load(x_ptr + offs, mask=mask))
    SINK.append(result.dtype)
    tl.store(out_ptr + offs, result, mask=mask)


def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr, SINK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    result = OP(tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask))
    SINK.append(result.dtype)
    tl.store(out_ptr + offs, result, mask=mask)


def block_for(n):
    """The smallest power of two >= n (block sizes must be powers of two)."""
    return 1 << max(0, int(n) - 1).bit_length()


def poisoned(n, np_dtype):
    """An output array filled with NaN (floats) or a sentinel (integers)."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind == "f":
        return np.full(n, np.nan, dtype=np_dtype)
    if np_dtype.kind == "b":
        return np.zeros(n, dtype=np_dtype)
    return np.full(n, 0x5A, dtype=np_dtype)


def run_unary(op, x, out_dtype):
    """(result array, result tl.dtype) of `op` applied to the block loaded from `x`."""
    out, sink = poisoned(x.size, out_dtype), []
    interpret(unary_kernel, (1,), (x, out, x.size), dict(OP=op, BLOCK=block_for(x.size), SINK=sink))
    return out, sink[0]


def run_binary(op, x, y, out_dtype):
    out, sink = poisoned(x.size, out_dtype), []
    interpret(binary_kernel, (1,), (x, y, out, x.size), dict(OP=op, BLOCK=block_for(x.size), SINK=sink))
    return out, sink[0]


def bf16_reference(values):
    """float64 values rounded to bf16 (8 significant bits, ties to even), computed without bit tricks."""
    values = np.asarray(values, dtype=np.float64)
    mantissa, exponent = np.frexp(values)  # mantissa in [0.5, 1)
    return np.ldexp(np.round(mantissa * 256.0) / 256.0, exponent)  # np.round: ties to even


def store_block(out_ptr, value):
    """Store a block of rank 0, 1 or 2 (power-of-two sizes) row-major at out_ptr."""
    shape = value.shape
    if len(shape) == 0:
        tl.store(out_ptr, value)
    elif len(shape) == 1:
        tl.store(out_ptr + tl.arange(0, shape[0]), value)
    else:
        tl.store(out_ptr + tl.arange(0, shape[0])[:, None] * shape[1] + tl.arange(0, shape[1])[None, :], value)


def block_kernel(x_ptr, out_ptr, idx_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                 SINK: tl.constexpr):
    """Load x as an (M, N) block, or an (N,) block when M is None; apply OP; store its one or two results."""
    if M is None:
        x = tl.load(x_ptr + tl.arange(0, N))
    else:
        x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    result = OP(x)
    results = result if isinstance(result, tuple) else (result,)
    SINK.extend((r.dtype, r.shape) for r in results)
    store_block(out_ptr, results[0])
    if len(results) > 1:
        store_block(idx_ptr, results[1])


def run_block(op, x, out_dtype, idx_dtype=np.int32):
    """(values, indices or None, [(dtype, shape) per result]) of `op` on the block loaded from `x`."""
    out, idx, sink = poisoned(x.size, out_dtype), poisoned(x.size, idx_dtype), []
    m, n = (None, x.shape[0]) if x.ndim == 1 else x.shape
    interpret(block_kernel, (1,), (x, out, idx), dict(OP=op, M=m, N=n, SINK=sink))
    shape = sink[0][1]
    size = int(np.prod(shape)) if shape else 1
    values = out[:size].reshape(shape)
    indices = idx[:size].reshape(sink[1][1]) if len(sink) > 1 else None
    return values, indices, sink
