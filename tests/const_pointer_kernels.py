"""Kernels with `tl.const` pointer parameters (Triton's read-only annotation): loads through them, block
pointers and tensor descriptors made from them, pointer casts that drop the const, and the writes Triton refuses.
Shared by the CPU and GPU tests and loaded by Triton itself as a second reference on the GPU."""
import transpiler
import transpiler.language as tl


# ---- kernels Triton compiles -----------------------------------------------------------------------------


@transpiler.jit
def scaled_copy_kernel(X: tl.const, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    tl.store(Y + offs, x * scale, mask=mask)


@transpiler.jit
def walk_const_pointer_kernel(X: tl.const, Y, n, steps, BLOCK: tl.constexpr):
    """A const pointer carried through a runtime loop (its type stays const) and summed from."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = X + offs
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(steps):
        acc += tl.load(p, mask=mask, other=0.0)
        p += n
    tl.store(Y + offs, acc, mask=mask)


@transpiler.jit
def block_pointer_from_const_kernel(X: tl.const, n, BLOCK: tl.constexpr):
    """Triton's block pointers do not keep the base's const: a store through one writes."""
    start = tl.program_id(0) * BLOCK
    bp = tl.make_block_ptr(X, (n,), (1,), (start,), (BLOCK,), (0,))
    tl.store(bp, tl.load(bp, boundary_check=(0,)) + 1.0, boundary_check=(0,))


@transpiler.jit
def cast_away_const_kernel(X: tl.const, n, BLOCK: tl.constexpr):
    """A cast to a plain pointer type drops the const (Triton compiles the store)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    writable = X.to(tl.pointer_type(tl.float32))
    tl.store(writable + offs, tl.load(X + offs, mask=mask) * 3.0, mask=mask)


@transpiler.jit
def _store_twice(P, offs, value, mask: tl.const):
    # `tl.const` on a helper's parameter changes nothing (Triton's code generator reads no helper annotation)
    tl.store(P + offs, value * 2.0, mask=mask)


@transpiler.jit
def const_on_helper_parameter_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    _store_twice(Y, offs, tl.load(X + offs, mask=mask), mask)


@transpiler.jit
def const_on_integer_parameter_kernel(X, Y, n: tl.const, BLOCK: tl.constexpr):
    """`tl.const` on an integer parameter changes nothing (Triton marks pointers only)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) + n, mask=mask)


# ---- kernels Triton refuses ------------------------------------------------------------------------------


@transpiler.jit
def store_through_const_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(Y + offs))


@transpiler.jit
def _write(P, offs):
    tl.store(P + offs, tl.load(P + offs) + 1.0)


@transpiler.jit
def store_in_helper_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    _write(X, tl.arange(0, BLOCK))


@transpiler.jit
def atomic_through_const_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    tl.atomic_add(X + tl.arange(0, BLOCK), 1.0)


@transpiler.jit
def store_through_cast_to_const_kernel(X, Y, n, BLOCK: tl.constexpr):
    tl.store(X.to(tl.pointer_type(tl.float32, const=True)), 1.0)


@transpiler.jit
def if_mixes_const_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    if n > 0:
        p = X
    else:
        p = Y
    tl.store(Y, tl.load(p))


@transpiler.jit
def ternary_mixes_const_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    p = X if n > 0 else Y
    tl.store(Y, tl.load(p))


@transpiler.jit
def _pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


@transpiler.jit
def return_mixes_const_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    tl.store(Y, tl.load(_pick(Y, X, n)))


@transpiler.jit
def loop_mixes_const_kernel(X: tl.const, Y, n, BLOCK: tl.constexpr):
    p = X
    for i in range(n):
        p = Y
    tl.store(Y, tl.load(p))
