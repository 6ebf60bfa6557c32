"""The bitonic network behind `tl.sort`, `tl.topk` and `tl.bitonic_merge`, written once for both paths.

A block whose element count is a power of two is viewed as a hypercube ([2] * log2(numel)); the last
dimension's log2(n) innermost axes are the sort's bits. Merge stage s (1 .. log2(n)) sorts runs of 2**s
elements, alternately ascending and descending (the order bit is the axis just above the run) until the
last stage, which uses the requested order; each of its s rounds compares every element with its partner
across one axis (the pair's xor-sum xored with itself, on the bit pattern, so any dtype moves exactly) and
keeps the smaller or larger one. `topk` sorts runs of k, then repeatedly keeps the larger of each pair of
runs (a max over the axis above the run) and merges again. The operations are the same as Triton's
`standard.sort_impl` (including its comparison `(x > y) != (flip ^ is_right)`), so ties and NaNs end up in
the order Triton gives them. `ops` supplies the block operations: the typing rules
(`parse/semantic_standard.py`), which the interpreter runs as well (`interpreter/eager.py`).
"""
from __future__ import annotations


def log2_exact(n: int):
    """log2 of a power of two, else None."""
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def _hypercube_of(ops, x, dim, what):
    """(shape, log2 of the last dimension, log2 of the element count) of a block the network may run on."""
    shape = list(ops.shape(x))
    if not shape:
        ops.fail(f"{what} needs a block, not a scalar")
    if dim not in (None, len(shape) - 1, -1):
        ops.fail(f"{what} works along the last dimension only (Triton's restriction), not dim {dim}")
    numel = 1
    for s in shape:
        numel *= s
    log_n, n_dims = log2_exact(shape[-1]), log2_exact(numel)
    if log_n is None or n_dims is None:
        ops.fail(f"{what} needs power-of-two dimensions, got shape {shape}")
    return shape, log_n, n_dims


def sort_network(ops, x, k=None, dim=None, descending=False):
    """`x` sorted along its last dimension (ascending unless `descending`); with `k`, the k largest of each
    row in descending order (`tl.topk`)."""
    shape, log_n, n_dims = _hypercube_of(ops, x, dim, "tl.sort / tl.topk")
    log_k = log_n if k is None else log2_exact(k)
    if log_k is None or log_k > log_n:
        ops.fail(f"tl.topk's k must be a power of two no larger than the dimension ({shape[-1]}), got {k}")
    descending = 1 if descending else 0
    h = ops.reshape(x, [2] * n_dims)
    for stage in range(1, log_k + 1):
        h = _merge(ops, h, stage, 2 if stage < log_n else descending)
    for stage in range(log_k + 1, log_n + 1):
        axis = len(ops.shape(h)) - 1 - log_k
        h = ops.max(h, axis) if descending else ops.min(h, axis)
        h = _merge(ops, h, log_k, 2 if stage < log_n else descending)
    return ops.reshape(h, shape[:-1] + [2 ** log_k])


def merge_network(ops, x, dim=None, descending=False):
    """`tl.standard.bitonic_merge`: the last merge stage alone along the last dimension (a bitonic row, one
    ascending run then one descending, comes out sorted), as Triton's `_bitonic_merge`."""
    shape, log_n, n_dims = _hypercube_of(ops, x, dim, "tl.bitonic_merge")
    h = _merge(ops, ops.reshape(x, [2] * n_dims), log_n, 1 if descending else 0)
    return ops.reshape(h, shape)


def _merge(ops, h, stage, order):
    """One bitonic merge stage: order 0 ascending, 1 descending, 2 alternating by runs of 2**stage."""
    flip = _indicator(ops, len(ops.shape(h)), stage) if order == 2 else order
    for i in range(stage):
        h = _compare_and_swap(ops, h, flip, stage - 1 - i)
    return h


def _indicator(ops, n_dims, j):
    """0 / 1 along hypercube axis n_dims - 1 - j (the j-th innermost), size 1 elsewhere."""
    return ops.reshape(ops.arange(2), [1] * (n_dims - j - 1) + [2] + [1] * j)


def _compare_and_swap(ops, h, flip, i):
    n_dims = len(ops.shape(h))
    bits = ops.to_bits(h)
    partner = ops.from_bits(ops.xor(bits, ops.xor_sum(bits, n_dims - 1 - i)), h)
    is_right = _indicator(ops, n_dims, i)
    swap = ops.ne(ops.gt(h, partner), ops.xor(flip, is_right))
    return ops.where(swap, partner, h)
