"""Tensor descriptors made in the kernel (`tl.make_tensor_descriptor`, `desc.load`, `desc.store`,
`tl.load_tensor_descriptor`, `tl.store_tensor_descriptor`; parse/semantic_tensor_desc.py, which the
interpreter runs too): the interpreter against NumPy on ragged shapes (reads outside the tensor give
the padding, writes outside it do nothing: the columns past the tensor hold NaN and must stay NaN), the compiled
source on sm_90a staged by TMA and on sm_80 by cp.async (NVRTC, no spills), and Triton's rules refused with
located errors. GPU runs are in tests/test_gpu_tma.py."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis import analyze
from transpiler.options import CompileOptions
from transpiler.errors import TranspilerError
from transpiler.runtime.compiler import compile_offline, nvrtc_available
from tma_kernels import td_matmul_kernel, td_shift_kernel

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")
H = transpiler.StandIn(tl.float16)


def _padded(rng, rows, cols, pitch, dtype=np.float16):
    full = np.full((rows, pitch), np.nan, dtype)
    full[:, :cols] = rng.standard_normal((rows, cols))
    return full


def test_interpreted_matmul_is_right_and_reads_nothing_outside():
    rng = np.random.default_rng(1)
    m, n, k = 100, 72, 200
    a, b = _padded(rng, m, k, 208), _padded(rng, k, n, 80)
    c = np.full((m, 80), np.nan, np.float16)
    td_matmul_kernel.interpret[(2, 2)](a[:, :k], b[:, :n], c[:, :n], m, n, k, 208, 80, 80,
                                       BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    expected = a[:, :k].astype(np.float64) @ b[:, :n].astype(np.float64)
    np.testing.assert_allclose(c[:, :n].astype(np.float64), expected, rtol=1e-2, atol=2e-2)
    assert np.isnan(c[:, n:]).all()          # the store wrote nothing past N


@pytest.mark.parametrize("shift, pad", [(5, "zero"), (-7, "nan"), (40, "zero")])
def test_interpreted_shift_pads_and_clips(shift, pad):
    rng = np.random.default_rng(2)
    m, n = 37, 50
    x = rng.standard_normal((m, 64)).astype(np.float32)
    y = np.full((m, 64), -1.0, np.float32)
    td_shift_kernel.interpret[(3, 4)](x[:, :n], y[:, :n], m, n, 64, 64, SHIFT=shift, PAD=pad, BM=16, BN=16)
    fill = 0.0 if pad == "zero" else np.nan
    expected = np.full((m, n), fill, np.float32)
    cols = np.arange(n) + shift
    inside = (cols >= 0) & (cols < n)
    expected[:, inside] = x[:, cols[inside]]
    np.testing.assert_array_equal(y[:, :n], expected)
    assert (y[:, n:] == -1.0).all()


def test_descriptor_loads_in_a_dot_loop_take_tma_on_sm90a():
    ir = td_matmul_kernel.ir(H, H, H, 1000, 1000, 1000, 1024, 1024, 1024, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    analysis = analyze(ir, CompileOptions(arch="sm_90a"))
    (plan,) = analysis.tma.values()
    assert plan.guards == [] and [t.box for t in plan.loads] == [(64, 128), (64, 64)]
    assert [repr(e) for e in plan.loads[0].extents] == ["K", "M"]


@needs_nvrtc
@pytest.mark.parametrize("arch, needed, absent", [("sm_90a", "cp.async.bulk.tensor", "mma.sync"),
                                                  ("sm_80", "cp.async.cg.shared.global", "cp.async.bulk")])
def test_descriptor_matmul_compiles(arch, needed, absent):
    variant = td_matmul_kernel.compiled_variant(H, H, H, 1000, 1000, 1000, 1024, 1024, 1024, BLOCK_M=128,
                                                BLOCK_N=128, BLOCK_K=64, arch=arch)
    result = compile_offline(variant.source, arch)
    assert needed in result.ptx and absent not in result.ptx
    assert result.spill_bytes == 0 and not result.warnings


@transpiler.jit
def _strided_last_kernel(X, N, s0, s1, B: tl.constexpr):
    d = tl.make_tensor_descriptor(X, [N, N], [s0, s1], [B, B])
    d.store([0, 0], d.load([0, 0]) + 1)


@transpiler.jit
def _narrow_block_kernel(X, N, s0):
    d = tl.make_tensor_descriptor(X, [N, N], [s0, 1], [16, 2])
    d.store([0, 0], d.load([0, 0]))


@transpiler.jit
def _offsets_kernel(X, N, s0):
    d = tl.make_tensor_descriptor(X, [N, N], [s0, 1], [16, 16])
    d.store([0, 0], d.load([0]))


@transpiler.jit
def _not_a_descriptor_kernel(X):
    tl.load_tensor_descriptor(X, [0])


F = transpiler.StandIn(tl.float32)


@pytest.mark.parametrize("kernel, args, meta, words", [
    (_strided_last_kernel, (F, 64, 64, 2), dict(B=16), "must be contiguous"),
    (_narrow_block_kernel, (F, 64, 64), {}, "at least 16 bytes"),
    (_offsets_kernel, (F, 64, 64), {}, "needs 2 offsets"),
    (_not_a_descriptor_kernel, (F,), {}, "needs a tensor descriptor"),
])
def test_refusals_are_located(kernel, args, meta, words):
    with pytest.raises(TranspilerError) as info:
        kernel.cuda_source(*args, **meta)
    assert words in str(info.value) and info.value.loc is not None and info.value.loc.line is not None


def test_interpreter_refuses_the_same():
    x = np.zeros((64, 64), np.float32)
    with pytest.raises(TranspilerError, match="must be contiguous"):
        _strided_last_kernel.interpret[(1,)](x, 64, 64, 2, B=16)
    with pytest.raises(TranspilerError, match="needs 2 offsets"):
        _offsets_kernel.interpret[(1,)](x, 64, 64)


@transpiler.jit
def _atomic_kernel(X, N, s0):
    d = tl.make_tensor_descriptor(X, [N, N], [s0, 1], [16, 16])
    d.atomic_add([0, 0], tl.zeros((16, 16), dtype=tl.float32))


def test_descriptor_atomics_are_not_supported_yet():
    with pytest.raises(TranspilerError, match="not supported yet"):
        _atomic_kernel.cuda_source(F, 64, 64)
    with pytest.raises(TranspilerError, match="not supported yet"):
        _atomic_kernel.interpret[(1,)](np.zeros((64, 64), np.float32), 64, 64)
