"""The compiled-vs-interpreted tolerance of arrays written through dots with computed operands
(tests/dot_rounding.py), checked on the CPU: which kernels it applies to, that it explains the H200's fused_mlp
backward mismatch (reproduced here by two interpreter runs that differ only in how a dot sums), and that it
still fails a lost product, a lost tile and a doubled tile."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler.interpreter.evaluate_blocks as interpreter_dot
from dot_rounding import (BOUND, TF32_AS_IS, UNIT_ROUNDOFF, narrowest_dot_precision, nearest_model, normwise_error,
                          rounded_by_dot, tf32, unexplained_lines)
from transpiler.interpreter.registry import all_rules

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import fused_mlp  # noqa: E402

SHAPE = (40, 50, 70)        # M, N, K of the H200 case: dW is 70 x 50 = 3,500 elements, one program


def _inputs(dtype, seed, shape=SHAPE):
    m, n, k = shape
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(dtype), (rng.standard_normal((k, n)) / math.sqrt(k)).astype(dtype),
            (0.5 * rng.standard_normal(n)).astype(dtype), rng.standard_normal((m, n)).astype(dtype))


def _backward(dtype):
    """(the derived kernel, its launch arguments) of fused_mlp's backward on SHAPE."""
    x, w, b, dy = _inputs(dtype, 0)
    m, n, k = SHAPE
    grads = {"X": np.zeros((m, k), np.float32), "W": np.zeros((k, n), np.float32),
             "Bias": np.zeros(n, np.float32), "Y": dy}
    d, values, _, _, _ = fused_mlp.mlp_kernel.backward._prepare(
        (x, w, b, dy, m, n, k, k, n, n), dict(grads=grads, accumulate=False, **fused_mlp.TILES))
    return d.kernel, values


def _backward_ir(dtype):
    kernel, values = _backward(dtype)
    return kernel.ir(*values)


@pytest.mark.parametrize("dtype,precision", [("float16", "float16"), ("float32", "tf32")])
def test_the_derived_backward_rounds_its_cotangent_to_the_dot_precision(dtype, precision):
    assert narrowest_dot_precision(_backward_ir(dtype)) == precision
    assert rounded_by_dot("float32", precision) and not rounded_by_dot("float16", precision)


def test_on_sm_90a_the_fp32_backward_has_one_tf32_dot_on_wgmma_which_reads_its_operands_as_they_are():
    """The H200's fp32 dX mismatch: dX's dot (dZ @ W^T: W through tl.trans, K-major) goes to wgmma, the others
    keep mma.sync (round to nearest, as the interpreter): the GPU test compares dX with the truncated model."""
    kernel, values = _backward("float32")
    kinds_by_arch = {}
    for arch, kinds, rounding in (("sm_90a", ["mma", "mma", "wgmma"], TF32_AS_IS), ("sm_80", ["mma"] * 3, "tf32")):
        ir, analysis = kernel.analysis(*values, num_warps=4, arch=arch)
        kinds_by_arch[arch] = {op: plan.kind for op, plan in analysis.dots.items()}
        assert sorted(kinds_by_arch[arch].values()) == kinds
        assert narrowest_dot_precision(ir, kinds_by_arch[arch]) == rounding
    (wgmma,) = [op for op, kind in kinds_by_arch["sm_90a"].items() if kind == "wgmma"]
    assert wgmma.operands[1].owner.name == "permute", "the wgmma dot is dZ @ tl.trans(W): dX's"


def test_a_forward_whose_dots_read_loaded_data_keeps_the_elementwise_tolerance():
    x, w, b, y = _inputs("float16", 0)
    m, n, k = SHAPE
    ir = fused_mlp.mlp_kernel.ir(x, w, b, y, m, n, k, k, n, n, **fused_mlp.TILES)
    assert narrowest_dot_precision(ir) is None


class _Float32SumsNumPy:
    """NumPy as seen by the interpreter's dot rule, except that float64 matmuls sum in float32, 16 products of
    k at a time (a tensor core's k-steps): the GPU's order and precision of the sums."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def matmul(a, b):
        if a.dtype != np.float64:
            return np.matmul(a, b)
        out = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for k0 in range(0, a.shape[1], 16):
            out = out + np.matmul(a[:, k0:k0 + 16].astype(np.float32), b[k0:k0 + 16].astype(np.float32))
        return out.astype(np.float64)


def _interpreted_backward(dtype, seed):
    x, w, b, dy = _inputs(dtype, seed)
    m, n, k = SHAPE
    grads = {"X": np.zeros((m, k), np.float32), "W": np.zeros((k, n), np.float32),
             "Bias": np.zeros(n, np.float32), "Y": dy}
    fused_mlp.mlp_kernel.backward.interpret[fused_mlp._grid(m, n, fused_mlp.TILES)](
        x, w, b, np.zeros((m, n), x.dtype), m, n, k, k, n, n, grads=grads, accumulate=False, **fused_mlp.TILES)
    return x, grads["W"], grads


def _float64_cotangent(dtype, seed):
    """(x, w, dZ) in float64: dZ = dY * gelu'(X @ W + b), from the rounded inputs."""
    x, w, b, dy = (a.astype(np.float64) for a in _inputs(dtype, seed))
    return x, w, dy * fused_mlp._gelu_and_slope(x @ w + b)[1]


@pytest.mark.parametrize("dtype,precision", [("float16", "float16"), ("float32", "tf32")])
def test_float32_sums_flip_roundings_that_the_operand_precision_explains_and_real_errors_do_not(
        dtype, precision, monkeypatch):
    """Seeds in order until float32's elementwise tolerance (rtol 1e-4, atol 1e-5) fails between the two
    summations (the H200's symptom: part of one column of dW); the norm-wise operand-precision bound holds
    there, and fails a dW missing one product X[m,k]*dZ[m,n], a lost 32-row tile and a doubled one. The lines
    beyond the elementwise tolerance are fitted as one-ulp changes of single dZ elements (what the GPU test of
    the example checks), which a lost product is not."""
    for seed in range(12):
        x, float64_sums, want = _interpreted_backward(dtype, seed)
        with monkeypatch.context() as patch:
            patch.setattr(interpreter_dot, "np", _Float32SumsNumPy())
            _, float32_sums, got = _interpreted_backward(dtype, seed)
        off = ~np.isclose(float32_sums, float64_sums, rtol=1e-4, atol=1e-5)
        if off.any():
            break
    else:
        pytest.fail("no seed showed a flipped rounding: the reproduction no longer reproduces")
    assert len(set(np.argwhere(off)[:, 1])) == 1, "a flipped dZ element moves one column of dW"
    bound = BOUND[precision]
    assert normwise_error(float32_sums, float64_sums) < bound / 4

    lost_product = float64_sums.copy()
    column = float64_sums.std(axis=0).argmax()
    row = np.abs(float64_sums[:, column]).argmax()
    lost_product[row, column] -= float64_sums[row, column] / math.sqrt(len(x))   # one of M random terms
    lost_tile, doubled_tile = float64_sums.copy(), float64_sums.copy()
    lost_tile[32:64] = 0
    doubled_tile[32:64] *= 2
    for wrong in (lost_product, lost_tile, doubled_tile):
        assert normwise_error(wrong, float64_sums) > bound

    # Each line of dW and dX beyond float32's tolerance is one-ulp flips of dZ's rounding; a lost product is not.
    x64, w64, dz = _float64_cotangent(dtype, seed)
    assert unexplained_lines(x64, w64, dz, got, want, precision) == []
    assert unexplained_lines(x64, w64, dz, dict(got, W=lost_product), want, precision) == [("dW", column)]


def test_normwise_error_fails_unwritten_elements():
    want = np.arange(1.0, 7.0)
    got = want.copy()
    got[3] = np.nan
    assert normwise_error(got, want) == float("inf")
    assert normwise_error(want, want) == 0.0


def _dx_dot_read_as_is(real_dot):
    """The interpreter's dot rule, with dX's dot (fp32 [64, 64] @ [64, 32] in this kernel) taking its tf32
    operands as they are, as sm_90a's wgmma does."""
    def dot(input, other, *args, **kwargs):
        if input.dtype.name == "fp32" and tuple(input.shape) == (64, 64) and tuple(other.shape) == (64, 32):
            real = interpreter_dot.round_to_tf32
            interpreter_dot.round_to_tf32 = lambda v: tf32(v, as_is=True).astype(np.float32)
            try:
                return real_dot(input, other, *args, **kwargs)
            finally:
                interpreter_dot.round_to_tf32 = real
        return real_dot(input, other, *args, **kwargs)
    return dot


def test_tf32_operands_read_as_is_shrink_products_beyond_flips_within_the_bound(monkeypatch):
    """dX's dot emulated as wgmma reads it: norm-wise above tf32's unit roundoff (flips alone never are), within
    BOUND[TF32_AS_IS]; the product models tell the two apart (the GPU test's check)."""
    _, _, want = _interpreted_backward("float32", 3)
    with monkeypatch.context() as patch:
        patch.setitem(all_rules(), "dot", _dx_dot_read_as_is(all_rules()["dot"]))
        _, _, got = _interpreted_backward("float32", 3)
    error = normwise_error(got["X"], want["X"])
    assert UNIT_ROUNDOFF["tf32"] < error < BOUND[TF32_AS_IS], error
    assert normwise_error(got["W"], want["W"]) < 1e-6          # dW's dot rounds to nearest on both
    x, w, b, dy = (a.astype(np.float64) for a in _inputs("float32", 3))
    dz = dy * fused_mlp._gelu_and_slope(tf32(x) @ tf32(w) + b)[1]
    assert nearest_model(got["X"], dz, w.T)[0] == "as is"
    assert nearest_model(want["X"], dz, w.T)[0] == "to nearest"
