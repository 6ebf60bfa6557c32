"""How precise an array written through `tl.dot` can be expected to be when two correct paths (the compiled GPU
kernel and the CPU interpreter) compute it: the tolerance follows the dot's operand precision, not the array's.

Why. A dot rounds its operands to their type before multiplying: fp16/bf16 operands are what they are, fp32
operands under Triton's default `input_precision="tf32"` are rounded to 10 mantissa bits (both paths do it the
same way, round to nearest). When an operand is a value the kernel computed in fp32 (a derived backward's
cotangent `dZ` cast to fp16 for `dZ @ W^T` and `X^T @ dZ`, or rounded to tf32), the two paths' fp32 values of
it differ in their last bits (the GPU sums the forward's dot in fp32 in tensor-core order, the interpreter in
float64; tanhf and NumPy's tanh differ by an ulp), and where such a value lies next to a rounding boundary of
the operand type the two paths round it to neighbouring values: one ulp of the operand type (2^-11 relative
for fp16 and tf32, 2^-8 for bf16) lands on a whole row of `dX` and a whole column of `dW`. Seen on the H200
(fused_mlp's derived backward, 13 of 3,500 elements of one column of dW off by up to 1.4e-4 under float32's
elementwise rtol 1e-4) and reproduced on the CPU by two interpreter runs that differ only in how the dot sums
(tests/test_dot_rounding.py). So an array wider than the narrowest operand precision of the kernel's dots is
compared norm-wise, ||got - want|| / ||want|| under that precision's unit roundoff (METHOD.md's measure), with
NaN in the same places: a few flipped roundings pass, a lost or doubled contribution of any tile does not.
Dots whose operands are both loaded data (moved, reshaped or cast: the same bits on both paths) round the same
values the same way and keep the array's own elementwise tolerance.
"""
from __future__ import annotations

import numpy as np

from transpiler import dtypes as dt
from transpiler.parse.ir import OpKind

# Unit roundoff (half an ulp at 1) of each dot operand precision.
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "tf32": 2.0 ** -11, "float16": 2.0 ** -11,
                 "bfloat16": 2.0 ** -8, "float8e4nv": 2.0 ** -4, "float8e5": 2.0 ** -3}
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


def operand_precision(op) -> str | None:
    """The precision a dot op rounds a computed operand to before multiplying (None: its operands are loaded
    data, the same bits on both paths, or its products are exact integers)."""
    a, w = op.operands[:2]
    if _loaded(a) and _loaded(w):
        return None
    if a.dtype is dt.float32:
        return "float32" if op.attrs.get("precision") in ("ieee", "tf32x3") else "tf32"
    return _OPERAND_NAMES.get(a.dtype)


def narrowest_dot_precision(ir) -> str | None:
    """The least precise operand precision among the kernel's dots with a computed operand (None: none)."""
    found = [operand_precision(op) for op in ir.walk() if op.name == OpKind.DOT]
    found = [p for p in found if p is not None]
    return max(found, key=UNIT_ROUNDOFF.__getitem__) if found else None


def launch_dot_precision(kernel, args, kwargs) -> str | None:
    """`narrowest_dot_precision` of the specialization a `kernel.run(*args, **kwargs)` launch selects."""
    return narrowest_dot_precision(kernel.ir(*args, **{k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}))


def rounded_by_dot(array_dtype: str, precision: str | None) -> bool:
    """Whether an array of `array_dtype` may carry the dot operand rounding of `precision` (it is wider)."""
    return precision is not None and array_dtype in UNIT_ROUNDOFF and \
        UNIT_ROUNDOFF[array_dtype] < UNIT_ROUNDOFF[precision]


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
    bound = UNIT_ROUNDOFF[precision]
    assert error <= bound, (f"{err_msg}: norm-wise error {error:.2e} above {precision}'s unit roundoff "
                            f"{bound:.2e} (the kernel's dots multiply in {precision})")


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


def unexplained_lines(x, w, dz, got, want, precision, rtol=1e-4, atol=1e-5):
    """For `dX = dZ @ W^T` and `dW = X^T @ dZ` with dZ rounded to `precision` before both dots (float64
    `x` [M, K], `w` [K, N], `dz` [M, N] the float64 value of dZ): the lines (("dW", column) or ("dX", row))
    whose got - want beyond (rtol, atol) are not one-ulp flips of dZ's rounding (`flips_explaining`)."""
    bad = []
    for name, diff, ref, cands, steps in (
            ("dW", got["W"] - want["W"], want["W"], lambda n: x, lambda n: ulp(dz[:, n], precision)),
            ("dX", (got["X"] - want["X"]).T, want["X"].T, lambda m: w.T, lambda m: ulp(dz[m, :], precision))):
        allowed = rtol * np.abs(ref) + atol
        for line in np.flatnonzero(np.any(np.abs(diff) > allowed, axis=0)):
            if flips_explaining(diff[:, line], cands(line), steps(line), allowed[:, line]) is None:
                bad.append((name, int(line)))
    return bad
