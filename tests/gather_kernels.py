"""`tl.gather` along either axis of a 2-D block, large enough that the one-hot composition it replaced spilled
(256 x 256), with indices outside the source (they give 0 here; Triton leaves them undefined, so the GPU test
compares with Triton only on indices inside)."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def gather_2d(X, IDX, Y, M, N, AXIS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    inside = (rows < M) & (cols < N)
    x = tl.load(X + rows * N + cols, mask=inside, other=0)
    idx = tl.load(IDX + rows * N + cols, mask=inside, other=0)
    tl.store(Y + rows * N + cols, tl.gather(x, idx, AXIS), mask=inside)


@transpiler.jit
def gather_in_loop(X, IDX, Y, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    idx = tl.load(IDX + offs, mask=offs < n, other=0)
    for _ in range(steps):            # the scratch is rewritten each iteration: a barrier before the writes
        x = tl.gather(x, idx, 0) * 2.0
    tl.store(Y + offs, x, mask=offs < n)
