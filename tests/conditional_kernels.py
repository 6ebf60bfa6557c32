"""Kernels with conditional expressions (`a if cond else b`) on runtime conditions, in the Triton dialect only.

Triton lowers such an expression to an scf.if: only the taken branch runs, so a branch may load from an
address valid only under the condition, or store, or update atomically. Shared by the CPU tests
(tests/test_conditional_expressions.py) and the GPU ones, which also load this file as Triton's
(bench/twins.py).
"""
import transpiler
import transpiler.language as tl


@transpiler.jit
def _gathered(X, i):
    return tl.load(X + i) * 2.0


@transpiler.jit
def guarded_gather_kernel(X, IDX, OUT, N, VIA_HELPER: tl.constexpr):
    """OUT[p] = 2 X[IDX[p]] where IDX[p] < N, else -1: the other indices are far outside X."""
    pid = tl.program_id(0)
    i = tl.load(IDX + pid)
    if VIA_HELPER:
        x = _gathered(X, i) if i < N else -1.0
    else:
        x = tl.load(X + i) * 2.0 if i < N else -1.0
    tl.store(OUT + pid, x)


@transpiler.jit
def guarded_block_kernel(X, ROWS, OUT, N_ROWS, N_COLS, BLOCK: tl.constexpr):
    """Row p of OUT is row ROWS[p] of X plus 1 where that row exists, else zeros."""
    pid = tl.program_id(0)
    row = tl.load(ROWS + pid)
    cols = tl.arange(0, BLOCK)
    m = cols < N_COLS
    v = tl.load(X + row * N_COLS + cols, mask=m, other=0.0) + 1.0 if row < N_ROWS else tl.zeros([BLOCK], tl.float32)
    tl.store(OUT + pid * N_COLS + cols, v, mask=m)


@transpiler.jit
def guarded_atomic_kernel(OLD, COUNT):
    """Even programs take a ticket from COUNT (their old value), odd ones write -1."""
    pid = tl.program_id(0)
    old = tl.atomic_add(COUNT, 1) if pid % 2 == 0 else -1
    tl.store(OLD + pid, old)


@transpiler.jit
def pure_conditional_kernel(X, OUT, N, BLOCK: tl.constexpr):
    """Branches without loads or effects: a select."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    y = x * 3.0 if pid % 2 == 0 else x - 1.0
    tl.store(OUT + pid * BLOCK + offs, y, mask=offs < N)


@transpiler.jit
def block_condition_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    y = tl.load(X + offs) if x > 0 else x
    tl.store(OUT + offs, y, mask=offs < N)


@transpiler.jit
def mixed_types_kernel(X, H, OUT, GUARDED: tl.constexpr):
    pid = tl.program_id(0)
    if GUARDED:
        y = tl.load(X + pid) if pid % 2 == 0 else tl.load(H + pid)
    else:
        x, h = tl.load(X + pid), tl.load(H + pid)
        y = x * 2.0 if pid % 2 == 0 else h
    tl.store(OUT + pid, y)
