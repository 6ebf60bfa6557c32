"""How precise an array written through `tl.dot` can be expected to be when two correct paths (the compiled GPU
kernel and the CPU interpreter) compute it: the tolerance follows how the dot rounds its operands, not the
array's dtype.

Why. A dot rounds its operands to their type before multiplying. Two ways the paths part:
1. *Flips.* When an operand is a value the kernel computed in fp32 (a derived backward's cotangent `dZ` cast to
   fp16 for `dZ @ W^T` and `X^T @ dZ`, or rounded to tf32), the two paths' fp32 values of it differ in their
   last bits (the GPU sums the forward's dot in fp32 in tensor-core order, the interpreter in float64; tanhf
   and NumPy's tanh differ by an ulp), and where such a value lies next to a rounding boundary of the operand
   type the two paths round it to neighbouring values: one ulp of the operand type (2^-11 relative for fp16
   and tf32, 2^-8 for bf16) lands on a whole row of `dX` and a whole column of `dW`. Seen on the H200
   (fused_mlp's derived backward, 13 of 3,500 elements of one column of dW off by up to 1.4e-4 under
   float32's elementwise rtol 1e-4) and reproduced on the CPU by two interpreter runs that differ only in how
   the dot sums (tests/test_dot_rounding.py). Dots whose operands are both loaded data (moved, reshaped or
   cast: the same bits on both paths) have no flips.
2. *tf32 read as is.* On sm_90a a tf32 dot on `wgmma` reads the fp32 bits from shared memory as they are (the
   low 13 mantissa bits dropped, as Triton's Hopper code does: docs/language.md), while `mma.sync` and the
   interpreter round to nearest first: every operand, loaded or computed, may differ by up to one tf32 ulp,
   and the truncation shrinks products on average (seen on the H200: the fp32 fused_mlp backward's dX, the
   one wgmma dot of that kernel, off on every row). Bound: two operands of one ulp each, 2^-9 relative.
An array wider than the loosest of these of its kernel's dots is compared norm-wise, ||got - want|| / ||want||
under that bound (METHOD.md's measure), with NaN in the same places: flipped or truncated roundings pass, a
lost or doubled contribution of any tile does not.
"""
from __future__ import annotations

import numpy as np

from transpiler import dtypes as dt
from transpiler.parse.ir import OpKind

# Unit roundoff (half an ulp at 1) of each array dtype and dot operand precision.
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "tf32": 2.0 ** -11, "float16": 2.0 ** -11,
                 "bfloat16": 2.0 ** -8, "float8e4nv": 2.0 ** -4, "float8e5": 2.0 ** -3}
TF32_AS_IS = "tf32 read as is"
# The norm-wise bound of each way a dot's operands are rounded differently by the two paths (see above).
BOUND = dict(UNIT_ROUNDOFF, **{TF32_AS_IS: 2.0 ** -9})
_OPERAND_NAMES = {dt.float64: "float64", dt.float32: "float32", dt.float16: "float16", dt.bfloat16: "bfloat16",
                  dt.float8e4nv: "float8e4nv", dt.float8e5: "float8e5"}
LAUNCH_OPTIONS = ("num_warps", "num_stages", "stream", "maxnreg")


_PASSING_VALUES = (OpKind.PERMUTE, OpKind.RESHAPE, OpKind.BROADCAST, OpKind.EXPAND_DIMS, OpKind.SPLAT,
                   OpKind.CAST, OpKind.HINT)


def _loaded(value) -> bool:
    """Whether `value` is memory's data, moved, reshaped or cast (the same on both paths): not computed."""
    while True:
        op = getattr(value, "owner", None)
        if op is None:
            return False                # a loop-carried value or parameter: computed, for all we know
        if op.name == OpKind.LOAD:
            return True
        if op.name not in _PASSING_VALUES:
            return False
        value = op.operands[0]


def operand_precision(op, instruction=None) -> str | None:
    """How the two paths may round a dot op's operands differently (a key of BOUND; None: the same bits).
    `instruction` is the compiled path's plan kind for it ("wgmma", "mma", "fma"; None: unknown, taken as
    rounding like the interpreter)."""
    a, w = op.operands[:2]
    tf32 = a.dtype is dt.float32 and op.attrs.get("precision") not in ("ieee", "tf32x3")
    if tf32 and instruction == "wgmma":
        return TF32_AS_IS
    if _loaded(a) and _loaded(w):
        return None
    if a.dtype is dt.float32:
        return "tf32" if tf32 else "float32"
    return _OPERAND_NAMES.get(a.dtype)


def narrowest_dot_precision(ir, instructions=None) -> str | None:
    """The loosest operand rounding among the kernel's dots (None: none); `instructions` maps dot ops to
    their plan kinds (the analysis's `dots`) when the compiled path's choice is known."""
    found = [operand_precision(op, (instructions or {}).get(op)) for op in ir.walk() if op.name == OpKind.DOT]
    found = [p for p in found if p is not None]
    return max(found, key=BOUND.__getitem__) if found else None


def launch_dot_precision(kernel, args, kwargs, arch=None) -> str | None:
    """`narrowest_dot_precision` of the specialization a `kernel.run(*args, **kwargs)` launch selects; with
    `arch` (e.g. "sm_90a") the analysis says which dots run on wgmma."""
    constexprs = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
    if arch is None:
        return narrowest_dot_precision(kernel.ir(*args, **constexprs))
    options = {k: kwargs[k] for k in ("num_warps", "num_stages", "maxnreg") if kwargs.get(k) is not None}
    ir, analysis = kernel.analysis(*args, arch=arch, **options, **constexprs)
    return narrowest_dot_precision(ir, {op: plan.kind for op, plan in analysis.dots.items()})


def rounded_by_dot(array_dtype: str, precision: str | None) -> bool:
    """Whether an array of `array_dtype` may carry the dot operand rounding `precision` (it is wider)."""
    return precision is not None and array_dtype in UNIT_ROUNDOFF and UNIT_ROUNDOFF[array_dtype] < BOUND[precision]


def normwise_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want|| / ||want|| over the finite elements; inf where NaN or inf positions differ."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(want)) or not np.array_equal(np.isinf(got), np.isinf(want)):
        return float("inf")
    finite = np.isfinite(want)
    scale = float(np.linalg.norm(want[finite]))
    diff = float(np.linalg.norm(got[finite] - want[finite]))
    return diff / scale if scale > 0 else diff


def assert_close_to_operand_precision(got, want, precision: str, err_msg: str = ""):
    error = normwise_error(got, want)
    bound = BOUND[precision]
    assert error <= bound, (f"{err_msg}: norm-wise error {error:.2e} above {bound:.2e}, the bound of the "
                            f"kernel's dot operands ({precision})")


def ulp(values: np.ndarray, precision: str) -> np.ndarray:
    """One ulp of `precision` at each of `values` (normal numbers)."""
    mantissa_bits = {"float16": 10, "tf32": 10, "bfloat16": 7}[precision]
    exponent = np.floor(np.log2(np.maximum(np.abs(values), 1e-30)))
    return np.exp2(exponent - mantissa_bits)


def flips_explaining(diff_line, candidates, step_ulps, allowed, most=4):
    """The rounding flips that explain one line of a gradient difference, or None.

    `diff_line` (L,) is got - want along a column of dW (or a row of dX); `candidates` (C, L) the line each
    flipped operand element c would add, per unit of its change (X's rows for a column of dW, W's columns
    for a row of dX); `step_ulps` (C,) one ulp of the operand precision at each operand element; `allowed`
    (L,) the elementwise tolerance of what is left. Greedily takes the candidate the difference points to,
    its change fitted by least squares, which must be one operand ulp (0.45-1.1 of it: at a binade edge the
    step is the lower side's ulp); returns [(c, change in ulps)] once what is left is within `allowed`."""
    left = np.asarray(diff_line, np.float64).copy()
    norms = np.einsum("cl,cl->c", candidates, candidates)
    found = []
    while np.any(np.abs(left) > allowed):
        if len(found) == most:
            return None
        fit = candidates @ left / np.maximum(norms, 1e-300)
        c = int(np.argmax(np.abs(fit) * np.sqrt(norms)))
        ratio = fit[c] / step_ulps[c]
        if not 0.45 <= abs(ratio) <= 1.1:
            return None
        found.append((c, float(ratio)))
        left -= fit[c] * candidates[c]
    return found


def unexplained_lines(x, w, dz, got, want, precision, rtol=1e-4, atol=1e-5, lines=("dW", "dX")):
    """For `dX = dZ @ W^T` and `dW = X^T @ dZ` with dZ rounded to `precision` before both dots (float64
    `x` [M, K], `w` [K, N], `dz` [M, N] the float64 value of dZ): the lines (("dW", column) or ("dX", row),
    of the gradients named in `lines`) whose got - want beyond (rtol, atol) are not one-ulp flips of dZ's
    rounding (`flips_explaining`)."""
    bad = []
    for name, diff, ref, cands, steps in (
            ("dW", got["W"] - want["W"], want["W"], lambda n: x, lambda n: ulp(dz[:, n], precision)),
            ("dX", (got["X"] - want["X"]).T, want["X"].T, lambda m: w.T, lambda m: ulp(dz[m, :], precision))):
        if name not in lines:
            continue
        allowed = rtol * np.abs(ref) + atol
        for line in np.flatnonzero(np.any(np.abs(diff) > allowed, axis=0)):
            if flips_explaining(diff[:, line], cands(line), steps(line), allowed[:, line]) is None:
                bad.append((name, int(line)))
    return bad


def tf32(values, as_is=False) -> np.ndarray:
    """float64 copies of `values` as fp32 rounded to tf32: to nearest, ties away (cvt.rna, mma.sync and the
    interpreter), or read as is (the low 13 bits dropped: wgmma from shared memory)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    if not as_is:
        bits = bits + np.uint32(0x1000)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


def product_models(left, right):
    """{"to nearest": ..., "as is": ...}: left @ right in float64 from tf32 operands rounded each way."""
    return {"to nearest": tf32(left) @ tf32(right), "as is": tf32(left, True) @ tf32(right, True)}


def nearest_model(got, left, right) -> tuple:
    """(name of the product model `got` is nearest to norm-wise, {name: norm-wise error})."""
    errors = {name: normwise_error(got, model) for name, model in product_models(left, right).items()}
    return min(errors, key=errors.get), errors
