"""GPU: every kind of array argument a launch accepts, and the ones it must refuse.

CuPy arrays; torch tensors (fp32, bf16, and non-contiguous views whose strides the kernel is given
explicitly, including views that start off a 16-byte boundary and so select the unaligned specialization);
objects that expose only `__cuda_array_interface__`; objects that expose only `__dlpack__`; torch tensors
launched on a non-default torch stream. Refused with a LaunchError: NumPy arrays, CPU torch tensors, and a
bare DLPack capsule (runtime/args.py accepts the capsule's owner, the object with `__dlpack__`, not the capsule).
"""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.errors import LaunchError

pytestmark = pytest.mark.gpu


@transpiler.jit
def scale_kernel(X, Y, n, sx, sy, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(X + i * sx, mask=m)
    tl.store(Y + i * sy, x * 2, mask=m)


@transpiler.jit
def copy2d_kernel(X, Y, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask)
    tl.store(Y + rm[:, None] * sym + rn[None, :] * syn, x, mask=mask)


BLOCK = 256


def scale(x, y, n, sx=1, sy=1):
    scale_kernel[(transpiler.cdiv(n, BLOCK),)](x, y, n, sx, sy, BLOCK=BLOCK)


def sync():
    import cupy
    cupy.cuda.runtime.deviceSynchronize()


class OnlyCudaArrayInterface:
    """Exposes a device buffer through `__cuda_array_interface__` and nothing else."""

    def __init__(self, owner):
        self.owner = owner          # keeps the memory alive
        self.__cuda_array_interface__ = owner.__cuda_array_interface__


class OnlyDLPack:
    """Exposes a device buffer through the DLPack protocol and nothing else."""

    def __init__(self, owner):
        self.owner = owner

    def __dlpack__(self, *args, **kwargs):
        return self.owner.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.owner.__dlpack_device__()


# ---- CuPy ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "float64"])
def test_cupy_arrays(dtype):
    import cupy
    n = 1000
    x = cupy.asarray(np.random.default_rng().integers(0, 60, n).astype(dtype))
    y = cupy.full(n, 77, dtype=dtype)
    scale(x, y, n)
    sync()
    np.testing.assert_array_equal(cupy.asnumpy(y), (cupy.asnumpy(x).astype(np.float64) * 2).astype(dtype))


def test_cupy_strided_views_with_explicit_strides():
    import cupy
    base = cupy.asarray(np.random.default_rng().standard_normal(3 * 701).astype(np.float32))
    out = cupy.full(2 * 701, np.nan, dtype=cupy.float32)
    x, y = base[1::3], out[::2]         # x starts 4 bytes past the allocation: the unaligned variant
    scale(x, y, 701, x.strides[0] // 4, y.strides[0] // 4)
    sync()
    np.testing.assert_array_equal(cupy.asnumpy(out)[::2], cupy.asnumpy(base)[1::3] * 2)
    assert np.isnan(cupy.asnumpy(out)[1::2]).all(), "wrote between the strided elements"


# ---- torch ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int64"])
def test_torch_tensors(dtype):
    torch = pytest.importorskip("torch")
    n = 1234
    x = torch.randint(-100, 100, (n,), device="cuda").to(getattr(torch, dtype))
    y = torch.full((n,), -1, device="cuda").to(getattr(torch, dtype))
    scale(x, y, n)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)


def test_torch_bf16_rounds_like_torch():
    torch = pytest.importorskip("torch")
    x = torch.randn(5000, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x).fill_(float("nan"))
    scale(x, y, 5000)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)         # doubling is exact in bf16


def test_torch_transposed_and_offset_views_with_explicit_strides():
    torch = pytest.importorskip("torch")
    base = torch.randn(67, 45, device="cuda")
    x = base.t()                                        # 45 x 67, strides (1, 45): not contiguous
    y = torch.full((45, 70), float("nan"), device="cuda")[:, 3:]   # 45 x 67, starts 12 bytes in
    assert not x.is_contiguous() and not y.is_contiguous()
    grid = (transpiler.cdiv(45, 16), transpiler.cdiv(67, 32))
    copy2d_kernel[grid](x, y, 45, 67, x.stride(0), x.stride(1), y.stride(0), y.stride(1), BM=16, BN=32)
    torch.cuda.synchronize()
    assert torch.equal(y, x)


def test_torch_launch_runs_on_the_current_torch_stream():
    torch = pytest.importorskip("torch")
    n = 1 << 20
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.ones(n, device="cuda")
        x.mul_(3)                      # queued on `stream`; the kernel must run after it
        y = torch.empty_like(x)
        scale(x, y, n)
    stream.synchronize()
    assert torch.equal(y, torch.full_like(y, 6.0))


# ---- protocols -----------------------------------------------------------------------------------------------

def test_objects_with_only_cuda_array_interface():
    import cupy
    x = cupy.arange(999, dtype=cupy.float32)
    y = cupy.zeros(999, dtype=cupy.float32)
    scale(OnlyCudaArrayInterface(x), OnlyCudaArrayInterface(y), 999)
    sync()
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(999, dtype=np.float32) * 2)


def test_cuda_array_interface_of_a_strided_view():
    import cupy
    base = cupy.arange(3000, dtype=cupy.int32)
    y = cupy.zeros(1000, dtype=cupy.int32)
    view = base[2::3]
    scale(OnlyCudaArrayInterface(view), y, 1000, 3, 1)
    sync()
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(3000, dtype=np.int32)[2::3] * 2)


def test_objects_with_only_dlpack():
    import cupy
    x = cupy.arange(777, dtype=cupy.float64)
    y = cupy.zeros(777, dtype=cupy.float64)
    scale(OnlyDLPack(x), OnlyDLPack(y), 777)
    sync()
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(777, dtype=np.float64) * 2)


def test_torch_tensor_through_dlpack_owner():
    torch = pytest.importorskip("torch")
    x = torch.arange(500, device="cuda", dtype=torch.float32)
    y = torch.zeros(500, device="cuda", dtype=torch.float32)
    scale(OnlyDLPack(x), OnlyDLPack(y), 500)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)


# ---- refused -------------------------------------------------------------------------------------------------

def test_numpy_array_in_a_gpu_launch_is_refused():
    import cupy
    with pytest.raises(LaunchError, match="host memory"):
        scale(np.zeros(10, np.float32), cupy.zeros(10, cupy.float32), 10)


def test_cpu_torch_tensor_is_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(LaunchError, match="host memory"):
        scale(torch.zeros(10), torch.zeros(10, device="cuda"), 10)


def test_bare_dlpack_capsule_is_refused_with_a_clear_error():
    import cupy
    x = cupy.zeros(10, cupy.float32)
    with pytest.raises(LaunchError, match="unsupported type PyCapsule"):
        scale(x.__dlpack__(), cupy.zeros(10, cupy.float32), 10)
