"""Host tensor descriptors (`transpiler.tools.tensor_descriptor.TensorDescriptor`, Triton's
`triton.tools.tensor_descriptor`) as kernel arguments: the kernel sees the descriptor `tl.make_tensor_descriptor`
would have made (runtime/tuple_args.py flattens it into its base, shape and strides; the block shape and padding
specialize), on the interpreter and through NVRTC, checked against NumPy float64."""
import numpy as np
import pytest

import host_descriptor_kernels as hk
import transpiler
import transpiler.language as tl
from transpiler.tools.tensor_descriptor import TensorDescriptor

from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def scale_case(rng, host, M=70, N=92, BM=32, BN=32):
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M, N), np.nan, np.float32)
    xs = (TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor.from_tensor(y, [BM, BN])) if host else (x, y)
    return hk.scale_tiles_kernel, (*xs, M, N, 1.5), dict(BLOCK_M=BM, BLOCK_N=BN), \
        (transpiler.cdiv(M, BM), transpiler.cdiv(N, BN)), [y], [x.astype(np.float64) * 1.5]


def matmul_case(rng, M=100, N=72, K=136, BM=64, BN=64, BK=32):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    descs = (TensorDescriptor(a, [M, K], [K, 1], [BM, BK]), TensorDescriptor(b, [N, K], [K, 1], [BN, BK]),
             TensorDescriptor(c, [M, N], [N, 1], [BM, BN]))
    return hk.matmul_descriptor_kernel, (*descs, M, N, K), dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK), \
        (transpiler.cdiv(M, BM), transpiler.cdiv(N, BN)), [c], [a.astype(np.float64) @ b.astype(np.float64).T]


def nan_padding_case(rng, rows=37, cols=20, BR=16, BC=32):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, 2), np.nan, np.float32)
    desc = TensorDescriptor.from_tensor(x, [BR, BC], padding="nan")
    want = np.stack([x.max(axis=1), np.full(rows, BC - cols)], axis=1).astype(np.float64)
    return hk.row_max_nan_padded_kernel, (desc, out, rows, cols), dict(BLOCK_R=BR, BLOCK_C=BC), \
        (transpiler.cdiv(rows, BR),), [out], [want]


CASES = {"scale-host": lambda rng: scale_case(rng, True), "scale-pointer": lambda rng: scale_case(rng, False),
         "matmul": matmul_case, "nan-padding": nan_padding_case}
TOLERANCE = {"matmul": dict(rtol=2e-2, atol=5e-2)}


@pytest.mark.parametrize("name", list(CASES))
def test_host_descriptors_in_the_interpreter_match_numpy(name):
    kernel, args, consts, grid, outs, wants = CASES[name](np.random.default_rng(1))
    kernel.interpret[grid](*args, **consts)
    for got, want in zip(outs, wants):
        np.testing.assert_allclose(got.astype(np.float64), want, **TOLERANCE.get(name, dict(rtol=1e-6)))


@needs_nvrtc
@pytest.mark.parametrize("name", list(CASES))
def test_host_descriptor_kernels_compile_without_warnings(name):
    kernel, args, consts = CASES[name](np.random.default_rng(2))[:3]
    for arch in ("sm_80", "sm_90a"):
        src = kernel.cuda_source(*args, arch=arch, **consts)
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


def test_block_shape_and_padding_select_variants():
    x = np.zeros((64, 64), np.float32)
    y = np.zeros((64, 64), np.float32)
    sources = {hk.scale_tiles_kernel.cuda_source(TensorDescriptor.from_tensor(x, [b, 32]),
                                                 TensorDescriptor.from_tensor(y, [b, 32]), 64, 64, 1.0,
                                                 BLOCK_M=b, BLOCK_N=32) for b in (16, 32)}
    assert len(sources) == 2


def test_a_host_descriptor_is_a_tensor_descriptor_in_the_kernel():
    @transpiler.jit
    def probe(d, out):
        tl.store(out, 1 if isinstance(d, tl.tensor_descriptor) else 0)
    x, out = np.zeros((8, 8), np.float32), np.zeros(1, np.int32)
    probe.interpret[(1,)](TensorDescriptor.from_tensor(x, [8, 8]), out)
    assert out[0] == 1
    assert "d_0" in probe.cuda_source(TensorDescriptor.from_tensor(x, [8, 8]), out)


@pytest.mark.parametrize("shape,strides,block,padding,message", [
    ([8, 8], [8, 2], [8, 8], "zero", "contiguous"), ([8, 8], [8, 1], [8], "zero", "one stride and one block"),
    ([8, 8], [8, 1], [8, 8], "inf", "padding"), ([], [], [], "zero", "1 to 5")])
def test_host_descriptor_refuses_what_triton_refuses(shape, strides, block, padding, message):
    with pytest.raises(ValueError, match=message):
        TensorDescriptor(np.zeros(64, np.float32), shape, strides, block, padding)


def test_a_host_descriptor_block_too_narrow_is_refused_at_the_kernel():
    x, y = np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32)
    args = (TensorDescriptor.from_tensor(x, [8, 2]), TensorDescriptor.from_tensor(y, [8, 2]), 8, 8, 1.0)
    with pytest.raises(transpiler.CompileTimeError, match="at least 16 bytes"):
        hk.scale_tiles_kernel.cuda_source(*args, BLOCK_M=8, BLOCK_N=2)
    with pytest.raises(transpiler.CompileTimeError, match="at least 16 bytes"):
        hk.scale_tiles_kernel.interpret[(1, 4)](*args, BLOCK_M=8, BLOCK_N=2)


def test_set_allocator_is_accepted_as_in_triton():
    # Triton needs it for in-kernel descriptors' scratch; ours need none, so kernels' wrappers that call it run
    calls = []
    transpiler.set_allocator(lambda size, alignment, stream: calls.append(size))
    kernel, args, consts, grid, outs, wants = CASES["scale-pointer"](np.random.default_rng(3))
    kernel.interpret[grid](*args, **consts)
    np.testing.assert_allclose(outs[0], wants[0], rtol=1e-6)
    assert calls == []
