"""Kernels with planted faults, for the sanitizer sweep's controls (bench/sanitize.py): each must be reported
by its tool, or the sweep's zeros mean nothing."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def planted_oob_store(X, far, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + far + offs, 1.0)                 # far past the allocation: memcheck's invalid write


@transpiler.jit
def planted_uninit_read(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)    # X was never written: initcheck
