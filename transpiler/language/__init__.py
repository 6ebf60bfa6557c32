"""`transpiler.language`: Triton's `triton.language` names and semantics, for what this project implements.

Use it as Triton's: `import transpiler.language as tl`. Each function below declares a builtin (its body is
never run in a compiled kernel; see `core.py`). Differences from Triton are listed in docs/language.md.
"""
from __future__ import annotations

import sys as _sys

from .. import dtypes as _dtypes
from ..dtypes import (bfloat16, block_type, dtype, float8e4b8, float8e4b15, float8e4nv, float8e5, float8e5b16,
                      float16, float32, float64, int1, int8, int16, int32, int64, pointer_type, uint8, uint16, uint32,
                      uint64)
from . import catalogue as _catalogue
from . import extra  # `tl.extra.cuda.libdevice`, `tl.extra.libdevice`
from .core import builtin, const, constexpr, tensor, tensor_descriptor
from .standard import (bitonic_merge, cat, flip, gather, histogram, interleave, join, ravel, softmax, sort, split,
                       swizzle2d, topk)

void = _dtypes.void
bool_ = int1
pi32_t = pointer_type(int32)
TRITON_MAX_TENSOR_NUMEL = 1048576     # Triton's limit on a block's elements (tl.static_assert in kernels reads it)


# ---- program and block construction --------------------------------------------------------------------


@builtin
def program_id(axis=0):
    """Index of this program along grid `axis` (0, 1 or 2), an int32 scalar."""


@builtin
def num_programs(axis=0):
    """Number of programs along grid `axis`, an int32 scalar."""


@builtin
def arange(start, end):
    """int32 block `[start, start+1, ..., end-1]`; `end - start` must be a power of two."""


@builtin
def full(shape, value, dtype):
    """Block of `shape` filled with `value`."""


@builtin
def zeros(shape, dtype):
    """Block of `shape` filled with zeros."""


@builtin
def zeros_like(input):
    """Zeros with the shape and dtype of `input`."""


@builtin
def full_like(input, value, dtype=None):
    """`value` with the shape (and dtype unless given) of `input`."""


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """Convert `input` to `dtype`; with `bitcast=True` reinterpret the bits (same width)."""


# ---- memory ---------------------------------------------------------------------------------------------


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    """Load a block (or scalar) through `pointer`; masked-off lanes read `other` (undefined when None)."""


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Store `value` through `pointer` where `mask` is true."""


# ---- atomics --------------------------------------------------------------------------------------------


def _atomic_rmw(name, what):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        pass

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Atomically {what} where `mask` is true; returns the old values. `sem`: 'acq_rel' (default), "
                  "'acquire', 'release' or 'relaxed'; `scope`: 'gpu' (default), 'cta' or 'sys'.")
    return builtin(fn)


atomic_add = _atomic_rmw("atomic_add", "add `val` to `*pointer`")
atomic_max = _atomic_rmw("atomic_max", "replace `*pointer` by `max(*pointer, val)`")
atomic_min = _atomic_rmw("atomic_min", "replace `*pointer` by `min(*pointer, val)`")
atomic_and = _atomic_rmw("atomic_and", "replace `*pointer` by `*pointer & val`")
atomic_or = _atomic_rmw("atomic_or", "replace `*pointer` by `*pointer | val`")
atomic_xor = _atomic_rmw("atomic_xor", "replace `*pointer` by `*pointer ^ val`")
atomic_xchg = _atomic_rmw("atomic_xchg", "store `val` to `*pointer`")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically store `val` to `*pointer` where `*pointer == cmp` (bitwise); returns the old values."""


# ---- block pointers -------------------------------------------------------------------------------------


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A pointer to the `block_shape` block at `offsets` of the tensor (`shape`, `strides`) at `base`."""


@builtin
def advance(base, offsets):
    """The block pointer `base` moved by `offsets` (one per dimension); `base` itself is unchanged."""


# ---- tensor descriptors ---------------------------------------------------------------------------------


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A descriptor of the tensor (`shape`, `strides`, the last stride 1) at `base`, read and written in
    `block_shape` blocks: `desc.load(offsets)`, `desc.store(offsets, value)`; outside the tensor, loads give the
    padding (zero or NaN) and stores write nothing."""


@builtin
def load_tensor_descriptor(desc, offsets):
    """`desc.load(offsets)`: the block of `desc` whose first element is at `offsets`."""


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """`desc.store(offsets, value)`: write `value` (a block of the descriptor's block shape) at `offsets`."""


# ---- shape manipulation ---------------------------------------------------------------------------------


@builtin
def broadcast_to(input, *shape):
    """Broadcast `input` to `shape`."""


@builtin
def broadcast(input, other):
    """Broadcast two blocks against each other; returns both."""


@builtin
def expand_dims(input, axis):
    """Insert a size-1 dimension at `axis` (an int or a sequence of ints)."""


@builtin
def reshape(input, *shape, can_reorder=False):
    """Reshape `input` (row-major element order) to `shape`."""


@builtin
def view(input, *shape):
    """Deprecated Triton alias of `reshape` that may reorder; here it keeps row-major order."""


@builtin
def trans(input, *dims):
    """Transpose a 2-D block (or permute by `dims`)."""


@builtin
def permute(input, *dims):
    """Permute the dimensions of `input`."""


# ---- elementwise math -----------------------------------------------------------------------------------


@builtin
def where(condition, x, y):
    """`x` where `condition` is true, else `y`, with broadcasting and promotion."""


@builtin
def minimum(x, y, propagate_nan=None):
    """Elementwise minimum; NaN loses to a number unless `propagate_nan=tl.PropagateNan.ALL`."""


@builtin
def maximum(x, y, propagate_nan=None):
    """Elementwise maximum; NaN loses to a number unless `propagate_nan=tl.PropagateNan.ALL`."""


@builtin
def clamp(x, min, max, propagate_nan=None):
    """`minimum(maximum(x, min), max)` for floats."""


def _unary_math(name, doc):
    def fn(x):
        pass

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


# One builtin per row of the math catalogue (`language/catalogue.py`): tl.exp, tl.sqrt, tl.abs, ...
for _function in _catalogue.FUNCTIONS:
    globals()[_function.name] = _unary_math(_function.name, _function.doc)


@builtin
def fma(x, y, z):
    """x * y + z with one rounding."""


@builtin
def cdiv(x, div):
    """Ceiling division `(x + div - 1) // div`."""


@builtin
def div_rn(x, y):
    """x / y rounded to nearest (floats)."""


@builtin
def fdiv(x, y, ieee_rounding=False):
    """Floating-point division."""


@builtin
def umulhi(x, y):
    """High 32 bits of the 64-bit product of two uint32/int32 values."""


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Run the PTX `asm` (operands `$0`, `$1`, ...: outputs first) on each element of the broadcast `args`, or
    on each `pack` elements of a thread, narrow ones packed into 32-bit registers; the result has `dtype` (a tuple
    of dtypes gives a tuple of results). Compiled only: the interpreter cannot run PTX."""


# ---- reductions -----------------------------------------------------------------------------------------


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """Sum along `axis` (all axes when None). Integers narrower than 32 bits sum as (u)int32."""


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Maximum along `axis`; with `return_indices`, also the (first) index of it."""


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Minimum along `axis`; with `return_indices`, also the (first) index of it."""


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """Index of the maximum along `axis` (int32); ties go to the smallest index."""


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """Index of the minimum along `axis` (int32); ties go to the smallest index."""


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    """Bitwise xor of the elements along `axis` (integers)."""


@builtin
def add(x, y, sanitize_overflow=True):
    """`x + y` (Triton's function behind the operator)."""


@builtin
def sub(x, y, sanitize_overflow=True):
    """`x - y` (Triton's function behind the operator)."""


@builtin
def mul(x, y, sanitize_overflow=True):
    """`x * y` (Triton's function behind the operator)."""


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """`scalar_fn` (a @jit function of scalars, which may branch on them) applied to every element of the
    broadcast `args`; one block per value it returns."""


@builtin
def condition(arg1, disable_licm=False):
    """`while tl.condition(c, disable_licm=...)`: the loop condition `c` (the hint has no counterpart here)."""


@builtin
def reduce_or(input, axis, keep_dims=False):
    """Bitwise or of the elements along `axis` (integers)."""


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce `input` (a block or a tuple of blocks) along `axis` with a @transpile `combine_fn`."""


# ---- scans ----------------------------------------------------------------------------------------------


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive running sum along `axis` (from the end with `reverse`); narrow integers sum as (u)int32."""


@builtin
def cumprod(input, axis=0, reverse=False):
    """Inclusive running product along `axis` (from the end with `reverse`)."""


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan of `input` (a block or a tuple of blocks) along `axis` with a @transpile `combine_fn`."""


# ---- matrix multiply ------------------------------------------------------------------------------------


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=float32):
    """Matrix product of two 2-D blocks (+ `acc`)."""


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=float32):
    """Matrix product of two microscaled blocks (formats "e2m1", "e4m3", "e5m2", "bf16", "fp16"; scales uint8
    e8m0 codes per 32 elements of K, or None), computed as Triton does without microscaled tensor cores:
    upcast to bf16 (fp16 if either format is fp16), scaled, then `tl.dot` (fp32 result)."""


# ---- compiler hints and debugging -----------------------------------------------------------------------


@builtin
def multiple_of(input, values):
    """Promise that every element of `input` is a multiple of `values`."""


@builtin
def max_contiguous(input, values):
    """Promise that `input` runs in contiguous groups of `values` elements."""


@builtin
def max_constancy(input, values):
    """Promise that `input` is constant in groups of `values` elements."""


@builtin
def assume(cond):
    """Promise that `cond` holds (Triton passes it to LLVM; here it is accepted and checked by nothing)."""


@builtin
def static_assert(cond, msg=""):
    """Compile-time assertion on constexpr values."""


@builtin
def static_print(*values, sep=" ", end="\n"):
    """Print constexpr values and types at compile time."""


@builtin
def device_print(prefix, *args, hex=False):
    """printf from the device: the prefix, then each argument's values."""


@builtin
def device_assert(cond, msg="", mask=None):
    """Trap when `cond` is false somewhere `mask` holds (checked only in debug mode, TRANSPILER_DEBUG=1, as in
    Triton)."""


@builtin
def debug_barrier():
    """A block-wide barrier (`__syncthreads()`)."""


# ---- iteration ------------------------------------------------------------------------------------------


@builtin
def range(arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, disallow_acc_multi_buffer=False,
          flatten=False, warp_specialize=False):
    """A runtime loop: `for i in tl.range(lo, hi, step, num_stages=...)`."""


@builtin
def static_range(arg1, arg2=None, step=None):
    """A loop unrolled at compile time; bounds must be constexpr."""


# ---- random numbers (language code, inlined like @transpile helpers: see random.py) -------------------------

from . import random  # noqa: E402,F401  (`tl.random`, as in Triton)
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x,  # noqa: E402
                     randn, randn4x, uint_to_uniform_float)


class PropagateNan:
    """Whether `minimum`/`maximum` return NaN when either input is NaN (ALL) or prefer the number (NONE)."""

    NONE = 0
    ALL = 0xFFFF


from . import math  # noqa: E402  (`tl.math.*`: a module, as in Triton; older code's libdevice names too)

# Older Triton's `triton.language.libdevice` module: the same module as `tl.extra.libdevice`.
libdevice = extra.libdevice
_sys.modules[__name__ + ".libdevice"] = libdevice


# Methods a block value offers (`x.to(tl.float16)`, `x.sum(axis=0)`): method name -> builtin name.
TENSOR_METHODS = {
    "to": "cast", "sum": "sum", "max": "max", "min": "min", "argmax": "argmax", "argmin": "argmin",
    "reshape": "reshape", "view": "view", "trans": "trans", "permute": "permute", "broadcast_to": "broadcast_to",
    "expand_dims": "expand_dims", "reduce": "reduce", "xor_sum": "xor_sum", "reduce_or": "reduce_or", "advance": "advance",
    "cumsum": "cumsum", "cumprod": "cumprod", "associative_scan": "associative_scan",
    "atomic_add": "atomic_add", "atomic_max": "atomic_max", "atomic_min": "atomic_min", "atomic_and": "atomic_and",
    "atomic_or": "atomic_or", "atomic_xor": "atomic_xor", "atomic_xchg": "atomic_xchg", "atomic_cas": "atomic_cas",
    "cast": "cast", "cdiv": "cdiv", "softmax": "softmax", "ravel": "ravel", "flip": "flip", "split": "split",
    "sort": "sort", "topk": "topk", "histogram": "histogram", "gather": "gather",
    **{f.name: f.name for f in _catalogue.FUNCTIONS},     # x.exp(), x.sqrt(), ...: every catalogue function
}

# Attributes a block value offers that are computed on access, as in Triton (`x.T` is `tl.trans(x)`).
TENSOR_PROPERTIES = {"T": "trans"}

# `tl.random` is reachable as an attribute, as in Triton, but `from transpiler.language import *` must not
# shadow the standard library's `random`.
__all__ = [n for n in dir() if not n.startswith("_") and n not in ("random", "math")]
