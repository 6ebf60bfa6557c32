"""Kernels for arithmetic on int1 (boolean) blocks, in the Triton dialect only.

Triton types `+`, `-`, `*`, `//`, `%` and `-x` of two int1 blocks (or an int1 block and a Python bool) as
int1, computed as LLVM's i1, which wraps modulo 2 (true + true is false); a Python int makes it int32 and
another integer block makes it that block's type. Shared by the CPU tests (tests/test_bool_arithmetic.py) and
the GPU ones, which also load this file as Triton's (bench/twins.py). Inputs are int32 arrays of 0 and 1; the
results are stored as int32 so every result type reads back the same way.
"""
import transpiler
import transpiler.language as tl

# The OP codes of `bool_arith_kernel`, with the NumPy reference of each (on 0/1 int64 arrays) and the type
# Triton gives the result.
OPS = {
    "add": (0, lambda a, b: (a + b) % 2, "int1"),
    "sub": (1, lambda a, b: (a - b) % 2, "int1"),
    "mul": (2, lambda a, b: a * b, "int1"),
    "neg": (3, lambda a, b: (-a) % 2, "int1"),
    "invert": (4, lambda a, b: 1 - a, "int1"),
    "add_int": (5, lambda a, b: a + 3, "int32"),
    "add_true": (6, lambda a, b: (a + 1) % 2, "int1"),
    "floordiv_true": (7, lambda a, b: a, "int1"),
    "mod_true": (8, lambda a, b: a * 0, "int1"),
    "add_int8": (9, lambda a, b: a + 5 * b, "int8"),
    "sub_int16": (10, lambda a, b: a - 3 * b, "int16"),
    "true_sub": (11, lambda a, b: (1 - a) % 2, "int1"),
    "sum3": (12, lambda a, b: (a + b + a * b) % 2, "int1"),
}


@transpiler.jit
def bool_arith_kernel(A, B, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=0) != 0
    bi = tl.load(B + offs, mask=m, other=0)
    b = bi != 0
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = a - b
    elif OP == 2:
        r = a * b
    elif OP == 3:
        r = -a
    elif OP == 4:
        r = ~a
    elif OP == 5:
        r = a + 3
    elif OP == 6:
        r = a + True
    elif OP == 7:
        r = a // True
    elif OP == 8:
        r = a % True
    elif OP == 9:
        r = a + (bi * 5).to(tl.int8)
    elif OP == 10:
        r = a - (bi * 3).to(tl.int16)
    elif OP == 11:
        r = True - a
    else:
        r = a + b + a * b
    tl.static_print(r.dtype)
    tl.store(OUT + offs, r.to(tl.int32), mask=m)


@transpiler.jit
def _bool_add(x, y):
    return x + y


@transpiler.jit
def bool_scan_reduce_kernel(A, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    """OP 0: cumsum kept in int1 (a running parity); 1: tl.reduce with `+` on int1 (the parity), broadcast;
    2: the default cumsum (uint32, a running count)."""
    offs = tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=0) != 0
    if OP == 0:
        r = tl.cumsum(a, 0, dtype=tl.int1).to(tl.int32)
    elif OP == 1:
        r = (tl.zeros([BLOCK], dtype=tl.int32) + tl.reduce(a, 0, _bool_add).to(tl.int32))
    else:
        r = tl.cumsum(a, 0).to(tl.int32)
    tl.store(OUT + offs, r, mask=m)


@transpiler.jit
def bool_mixed_signedness_kernel(A, B, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    """Division of int1 (unsigned to Triton) by signed integers, which Triton refuses: OP 0 `a // 2`,
    1 `a % b` with b int32, 2 `a / 3`."""
    offs = tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=0) != 0
    bi = tl.load(B + offs, mask=m, other=1)
    if OP == 0:
        r = a // 2
    elif OP == 1:
        r = a % bi
    else:
        r = a / 3
    tl.store(OUT + offs, r, mask=m)
