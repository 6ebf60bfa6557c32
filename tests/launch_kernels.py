"""The kernel of the launch fast-path tests (tests/test_gpu_launch_fast_path.py), in a module of its own so that
`triton_twin_of` can load the same source under Triton."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def axpy(X, Y, Out, n, alpha, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(Out + i, alpha * tl.load(X + i, mask=m) + tl.load(Y + i, mask=m), mask=m)
