"""CPU tests of the batched (3-D) `tl.dot`: its typing (as Triton 3.6's front end types it), the located
refusals of shapes that do not multiply, the tensor-core pass's plan (mma.sync per batch, warps along the
batch first; FMA where no instruction fits), NVRTC compiles for sm_80 and sm_90a without warnings or spills,
and the interpreter against a float64 NumPy product on random inputs with ragged sizes."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis.tensor_cores import batched_layout, mma_layout
from transpiler.runtime.compiler import compile_offline, nvrtc_available

import dot3d_kernels as dk
import dot_kernels

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def _launch(case, rng):
    a, b, acc = dk.make_inputs(case, rng)
    c = dk.poisoned(a.shape[:2] + (b.shape[2],), dk.output_dtype(case))
    args, constexprs = dk.launch_args(case, a, b, c, acc)
    return a, b, acc, c, args, constexprs


@pytest.mark.parametrize("case", dk.CASES, ids=[c.id for c in dk.CASES])
def test_interpreted_batched_dot_matches_numpy(case):
    a, b, acc, c, args, constexprs = _launch(case, np.random.default_rng(3))
    dk.bmm_kernel.interpret[dk.grid(case)](*args, **constexprs)
    rtol, atol = dk.tolerance(case, case.shape[3])
    np.testing.assert_allclose(c.astype(np.float64), dk.reference(case, a, b, acc), rtol=rtol, atol=atol)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", dk.CASES, ids=[c.id for c in dk.CASES])
def test_batched_dot_compiles_without_spills_on_its_instruction(case, arch):
    _, _, _, _, args, constexprs = _launch(case, np.random.default_rng(0))
    variant = dk.bmm_kernel.compiled_variant(*args, arch=arch, **constexprs)
    result = compile_offline(variant.source, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.warnings
    assert ("mma.sync.aligned" in result.ptx) == (case.expected == "mma")
    assert "wgmma" not in result.ptx


def test_batched_layout_puts_the_batch_on_warps_then_registers():
    per_batch, _, _ = mma_layout(32, 16, 2, 1, 2)
    layout = batched_layout(per_batch, 8, 2)            # 8 batches over 4 warps: 2 along the batch
    seen = {}
    for warp in range(4):
        for lane in range(32):
            for r in range(layout.num_regs):
                seen.setdefault(layout.coords(r, lane, warp), (warp, lane, r))
    assert len(seen) == 8 * 32 * 16                     # every element held, no two threads' copies missing
    assert {layout.coords(0, 0, w)[0] for w in range(4)} == {0, 1}          # low warp bit: the batch
    assert layout.coords(layout.num_regs // 4, 0, 0)[0] == 2                # high register bits: batches 2, 4
    assert layout.coords(layout.num_regs // 2, 0, 0)[0] == 4
    assert [c[1:] for c in (layout.coords(r, 5, 2) for r in range(8))] == \
        [per_batch.coords(r, 5, 1) for r in range(8)]                       # each batch: the 2-D accumulator


def test_explain_records_the_batched_plan():
    case = dk.BY_ID["f16_b5_ragged_kloop"]
    _, _, _, _, args, constexprs = _launch(case, np.random.default_rng(0))
    text = dk.bmm_kernel.explain(*args, **constexprs)
    assert "dot 2 batches of 32x32x32: mma.sync m16n8k16" in text
    assert "warps 2 along the batch (1 batch(es) each)" in text


@needs_nvrtc
def test_batched_product_feeds_reductions_and_broadcasts():
    rng = np.random.default_rng(5)
    n_batch, m, n, k = 3, 40, 20, 24
    a = rng.standard_normal((n_batch, m, k)).astype(np.float16)
    b = rng.standard_normal((n_batch, k, n)).astype(np.float16)
    c = dk.poisoned((m, n), np.float32)
    blocks = dict(BLOCK_B=4, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    dk.bmm_epilogue_kernel.interpret[(2,)](a, b, c, n_batch, m, n, k, **blocks)
    s = np.matmul(a.astype(np.float64), b.astype(np.float64)) * 0.5
    expected = (s - s.max(axis=2, keepdims=True)).sum(axis=0)
    np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-2)
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(dk.bmm_epilogue_kernel.compiled_variant(a, b, c, n_batch, m, n, k, arch=arch,
                                                                         **blocks).source, arch)
        assert result.spill_bytes == 0 and not result.warnings, result.log


@transpiler.jit
def _typed_dot(A, B, C, BB: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               IN: tl.constexpr, OUT: tl.constexpr, PRECISION: tl.constexpr):
    ob = tl.arange(0, BB)
    om = tl.arange(0, M)
    on = tl.arange(0, N)
    ok = tl.arange(0, K)
    a = tl.load(A + ob[:, None, None] * M * K + om[None, :, None] * K + ok[None, None, :]).to(IN)
    b = tl.load(B + ob[:, None, None] * K * N + ok[None, :, None] * N + on[None, None, :]).to(IN)
    c = tl.dot(a, b, out_dtype=OUT, input_precision=PRECISION)
    tl.static_assert(c.dtype == C.dtype.element_ty)
    tl.static_assert(c.shape[0] == BB and c.shape[1] == M and c.shape[2] == N)
    tl.store(C + ob[:, None, None] * M * N + om[None, :, None] * N + on[None, None, :], c)


# (input dtype, out_dtype, the product's dtype): Triton 3.6's front end on this machine gives the same
# (int8 -> int32 and fp64 -> fp64 whatever out_dtype says; fp16 -> out_dtype; fp32 and bf16 -> fp32, an
# out_dtype of tl.float16 ignored).
TYPES = [(tl.float16, tl.float32, np.float32), (tl.float16, tl.float16, np.float16),
         (tl.bfloat16, tl.float32, np.float32), (tl.float32, tl.float32, np.float32),
         (tl.int8, tl.float32, np.int32), (tl.float64, tl.float32, np.float64),
         (tl.float32, tl.float16, np.float32), (tl.bfloat16, tl.float16, np.float32)]


@pytest.mark.parametrize("in_dtype,out_dtype,result", TYPES, ids=[f"{t[0].name}-{t[1].name}" for t in TYPES])
def test_batched_dot_types_as_triton_does(in_dtype, out_dtype, result):
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (2 * 16 * 32,)).astype(np.float32)
    b = rng.integers(-3, 4, (2 * 32 * 16,)).astype(np.float32)
    c = np.zeros((2, 16, 16), result)
    _typed_dot.interpret[(1,)](a, b, c, BB=2, M=16, N=16, K=32, IN=in_dtype, OUT=out_dtype, PRECISION="ieee")
    expected = np.matmul(a.reshape(2, 16, 32).astype(np.float64), b.reshape(2, 32, 16))
    np.testing.assert_array_equal(c, expected.astype(result))      # small integers: every product exact
    _typed_dot.cuda_source(a, b, c, BB=2, M=16, N=16, K=32, IN=in_dtype, OUT=out_dtype, PRECISION="ieee")


@transpiler.jit
def _mismatched_dot(A, C, SA: tl.constexpr, SB: tl.constexpr):
    a = tl.zeros(SA, dtype=tl.float16)
    b = tl.zeros(SB, dtype=tl.float16)
    c = tl.dot(a, b)  # <-
    tl.store(C + tl.arange(0, 16), tl.sum(tl.reshape(c, (c.numel,)), axis=0) + tl.zeros((16,), tl.float32))


@pytest.mark.parametrize("sa,sb,words", [
    ((2, 16, 16), (4, 16, 16), "the batch sizes of shapes \\[2, 16, 16\\] and \\[4, 16, 16\\] differ"),
    ((2, 16, 16), (16, 16), "two 2-D blocks \\(or two 3-D ones, batched\\)"),
    ((2, 16, 32), (2, 16, 16), "do not multiply"),
    ((2, 16, 8), (2, 8, 16), "K of at least 16")])
def test_batched_dots_that_do_not_multiply_are_refused_at_their_line(sa, sb, words):
    out = np.zeros(16, np.float32)
    for run in (lambda: _mismatched_dot.cuda_source(out, out, SA=sa, SB=sb),
                lambda: _mismatched_dot.interpret[(1,)](out, out, SA=sa, SB=sb)):
        with pytest.raises(transpiler.TranspilerError, match=words) as info:
            run()
        assert info.value.loc is not None


SMALL_2D = [c for c in dot_kernels.CASES if min(c.block[:2]) < 16 and c.dtype != "bfloat16"]


@pytest.mark.parametrize("case", SMALL_2D, ids=[c.id for c in SMALL_2D])
def test_small_2d_dots_interpret_as_numpy_and_run_on_fma(case):
    """M or N below 16 (Triton's CUDA front end takes them): the interpreter against float64 NumPy (fp32
    operands rounded to tf32 under "tf32"), and the compiled plan is FMA."""
    a, b = dot_kernels.make_inputs(case, np.random.default_rng(11))
    np_dtype = {"float16": np.float16, "float32": np.float32}[case.dtype]
    a, b = a.astype(np_dtype), b.astype(np_dtype)
    b_mem = np.ascontiguousarray(b.T) if case.b_transposed else b
    c = dk.poisoned(case.shape[:2], np.float32)
    grid, args, options = dot_kernels.launch_args(case, a, b_mem, c, dot_kernels.element_strides(a),
                                                  dot_kernels.b_strides(case, b_mem), dot_kernels.element_strides(c))
    dot_kernels.dot_kernel.interpret[grid](*args, **options)
    tf32 = case.dtype == "float32" and case.precision == "tf32"
    a64, b64 = (dk._tf32(a), dk._tf32(b)) if tf32 else (a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(c, a64 @ b64, rtol=1e-5, atol=1e-4)
    assert "FMA on CUDA cores" in dot_kernels.dot_kernel.explain(*args, **options)


@needs_nvrtc
def test_transposed_and_broadcast_batched_operands():
    grid, args, constexprs, ref = dk.transposed_case(np.random.default_rng(9))
    dk.bmm_transposed_kernel.interpret[grid](*args, **constexprs)
    np.testing.assert_allclose(args[3], ref, rtol=2e-3, atol=2e-2)
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(dk.bmm_transposed_kernel.compiled_variant(*args, arch=arch, **constexprs).source,
                                 arch)
        assert result.spill_bytes == 0 and not result.warnings, result.log
        assert "mma.sync.aligned.m16n8k16" in result.ptx
