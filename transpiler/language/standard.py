"""Triton's `standard` library functions: `tl.softmax`, `tl.ravel`, `tl.swizzle2d`, `tl.flip`, and the
two-block shape functions `tl.join`, `tl.split`, `tl.interleave`, `tl.cat`.

The typing rules build each from other builtins (`parse/semantic_standard.py`); the interpreter runs the same
rules, their ops evaluated on NumPy (`interpreter/eager.py`).
"""
from __future__ import annotations

from .core import builtin, constexpr_function


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """exp(x - max) / sum(exp(x - max)) along `dim` (0 when None)."""


@builtin
def ravel(x, can_reorder=False):
    """`x` flattened to one dimension (row-major)."""


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map row-major program indices (i, j) of a size_i x size_j grid to column-major order within groups of
    size_g rows (grouped tile ordering for L2 reuse); returns (new_i, new_j)."""


@builtin
def flip(x, dim=None):
    """Reverse `x` along `dim` (the last dimension when None); the dimension must be a power of two."""


@builtin
def join(a, b):
    """Stack two blocks of one shape along a new last dimension of size 2."""


@builtin
def split(a):
    """Split a block whose last dimension has size 2 into two blocks."""


@builtin
def interleave(a, b):
    """Interleave two blocks along their last dimension."""


@builtin
def cat(input, other, can_reorder=False):
    """Concatenate two 1-D blocks (Triton supports only `can_reorder=True`: the order is unspecified)."""


@builtin
def sort(x, dim=None, descending=False):
    """`x` sorted along its last dimension (a power of two), ascending unless `descending`."""


@builtin
def bitonic_merge(x, dim=None, descending=0):
    """A bitonic `x` (each row one ascending run, then one descending) sorted along its last dimension."""


@builtin
def topk(x, k, dim=None):
    """The `k` largest elements of each row of `x` (along the last dimension), in descending order."""


@builtin
def histogram(input, num_bins, mask=None):
    """int32 counts of the values 0 .. num_bins - 1 in the 1-D block `input` (where `mask` is true);
    values outside that range are not counted."""


@builtin
def gather(src, index, axis):
    """`out[..., i, ...] = src[..., index[..., i, ...], ...]` along `axis`: `index` (integers) has the rank
    of `src` and its size in every other dimension."""


# Triton's compile-time helpers of `triton.language.standard`, which library code imports by their private
# names (`from triton.language.standard import _log2`: FlagGems' bitonic sorts and top-k).
@constexpr_function
def _log2(i):
    """floor(log2(i)) of a positive integer (0 for 1)."""
    return max(int(i).bit_length() - 1, 0)


@constexpr_function
def _is_power_of_two(i):
    return i != 0 and (i & (i - 1)) == 0


def __getattr__(name):
    """`triton.language.standard.X` for the rest of Triton's standard library (`zeros_like`, `max`, `cumsum`,
    ...): code written against Triton imports them from here; they are `transpiler.language`'s."""
    if not name.startswith("__"):
        import transpiler.language as language
        if hasattr(language, name):
            return getattr(language, name)
    raise AttributeError(f"module 'tl.standard' has no attribute '{name}'")
