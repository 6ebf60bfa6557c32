"""GPU tests of TMA staging (marker `gpu`, sm_90a): matmuls whose tiles the pass in analysis/tma.py has the Tensor
Memory Accelerator bring in, against a float64 product of the same inputs and, where Triton is importable, against
Triton's build of the same source.

Every operand lives in a wider allocation (a row pitch that is a multiple of 16 elements, so the specialization
proves the tensor maps' strides aligned) whose padding columns hold NaN: a box that read past the extent the
analysis derived from the masks would poison the product. M, N and K are not multiples of the blocks, so edge
tiles take the cp.async version of the loop (the wrap guard fails there) while interior tiles take the TMA ring.
Outputs are poisoned (NaN) before each launch. Run in a process of its own: a fault in TMA code poisons the CUDA
context for the rest of the process.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import transpiler.language as tl  # noqa: E402

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

REL_ERROR = {"float16": 2e-3, "bfloat16": 1e-2}


def _needs_hopper():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA needs an sm_90 GPU")


def _padded(rng, rows, cols, dtype, pitch=None):
    """A [rows, cols] view of a [rows, pitch] tensor whose extra columns are NaN (pitch: next multiple of 64)."""
    pitch = pitch or -(-cols // 64) * 64 + 64
    full = torch.full((rows, pitch), float("nan"), dtype=getattr(torch, dtype), device="cuda")
    view = full[:, :cols]
    view.copy_(torch.tensor(rng.standard_normal((rows, cols)), dtype=getattr(torch, dtype)))
    return view


def _check(got, expected, dtype):
    got = got.double().cpu().numpy()
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} of {got.size} elements NaN (unwritten or padding read)"
    rel = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert rel < REL_ERROR[dtype], f"relative error {rel:.2e} (allowed {REL_ERROR[dtype]:.0e})"


def _f64(x):
    return x.double().cpu().numpy()


def _takes_tma(kernel, *args, **kwargs):
    report = kernel.explain(*args, **kwargs)
    assert "TMA + mbarrier ring" in report, report


TUTORIAL_CONFIGS = [   # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
    (128, 128, 64, 4, 3),
    (128, 128, 32, 4, 4),
    (128, 256, 64, 8, 3),
    (64, 128, 64, 4, 2),
    (128, 64, 32, 4, 4),
    (256, 128, 64, 8, 3),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("config", TUTORIAL_CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_tutorial_matmul_wrapped_rows_ragged_k(dtype, config):
    """examples/matmul.py: rows wrap (% M, % N) and K is masked; TMA where a tile does not wrap."""
    _needs_hopper()
    import matmul as example
    bm, bn, bk, warps, stages = config
    m, n, k = 1000, 1008, 1000
    rng = np.random.default_rng(hash((dtype, config)) & 0xFFFF)
    a, b = _padded(rng, m, k, dtype), _padded(rng, k, n, dtype)
    c = torch.full((m, n), float("nan"), dtype=getattr(torch, dtype), device="cuda")
    cfg = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
    _takes_tma(example.matmul_kernel, a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), ACTIVATION="",
               arch="sm_90a", **cfg)
    example.matmul(a, b, out=c, config=cfg)
    _check(c, _f64(a) @ _f64(b), dtype)


@pytest.mark.parametrize("b_transposed", [False, True])
def test_dot_kernel_masked_both_ways(b_transposed):
    """tests/dot_kernels.py: masks on rows and K (no wrap), B stored [K, N] or [N, K] and transposed."""
    _needs_hopper()
    from dot_kernels import dot_kernel
    m, n, k = 333, 517, 700
    rng = np.random.default_rng(7)
    a = _padded(rng, m, k, "float16")
    b_store = _padded(rng, n, k, "float16") if b_transposed else _padded(rng, k, n, "float16")
    c = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
    sb = (b_store.stride(1), b_store.stride(0)) if b_transposed else tuple(b_store.stride())
    args = (a, b_store, c, m, n, k, *a.stride(), *sb, *c.stride())
    meta = dict(BM=128, BN=128, BK=64, B_TRANSPOSED=b_transposed, ACC_IN_DOT=True, PRECISION="ieee",
                ACC_TYPE=tl.float32)
    _takes_tma(dot_kernel, *args, arch="sm_90a", num_warps=4, num_stages=3, **meta)
    dot_kernel[(-(-m // 128), -(-n // 128))](*args, num_warps=4, num_stages=3, **meta)
    b64 = _f64(b_store).T if b_transposed else _f64(b_store)
    _check(c, _f64(a) @ b64, "float16")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("b_stored_nk", [False, True])
def test_block_pointer_matmul(dtype, b_stored_nk):
    """tests/block_ptr_kernels.py: boundary_check=(0, 1), padding 'zero': the map's extents are the shapes."""
    _needs_hopper()
    from block_ptr_kernels import bp_matmul_kernel
    m, n, k = 300, 250, 520
    rng = np.random.default_rng(11)
    a = _padded(rng, m, k, dtype)
    b_store = _padded(rng, n, k, dtype) if b_stored_nk else _padded(rng, k, n, dtype)
    c = torch.full((m, n), float("nan"), dtype=getattr(torch, dtype), device="cuda")
    sb = (b_store.stride(1), b_store.stride(0)) if b_stored_nk else tuple(b_store.stride())
    args = (a, b_store, c, m, n, k, *a.stride(), *sb, *c.stride())
    meta = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, B_ORDER=(0, 1) if b_stored_nk else (1, 0))
    _takes_tma(bp_matmul_kernel, *args, arch="sm_90a", num_warps=4, num_stages=4, **meta)
    bp_matmul_kernel[(-(-m // 128), -(-n // 128))](*args, num_warps=4, num_stages=4, **meta)
    b64 = _f64(b_store).T if b_stored_nk else _f64(b_store)
    _check(c, _f64(a) @ b64, dtype)


@pytest.mark.parametrize("warps, stages", [(4, 3), (8, 4)])
def test_persistent_matmul(warps, stages):
    """tests/tma_kernels.py: grid = number of SMs, tl.range over the output tiles, the k loop inside; each tile
    runs the ring again (barriers initialised per run)."""
    _needs_hopper()
    from tma_kernels import persistent_matmul_kernel
    m, n, k = 1100, 1040, 777
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rng = np.random.default_rng(warps)
    a, b = _padded(rng, m, k, "float16"), _padded(rng, k, n, "float16")
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    args = (a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())
    meta = dict(BLOCK_M=128, BLOCK_N=128 if warps == 4 else 256, BLOCK_K=64, GROUP_M=8, NUM_SMS=sms)
    _takes_tma(persistent_matmul_kernel, *args, arch="sm_90a", num_warps=warps, num_stages=stages, **meta)
    persistent_matmul_kernel[(sms,)](*args, num_warps=warps, num_stages=stages, **meta)
    _check(c, _f64(a) @ _f64(b), "float16")


def test_gathered_rows_stay_on_cp_async_and_are_right():
    _needs_hopper()
    from tma_kernels import gathered_rows_matmul_kernel
    m, n, k = 300, 256, 200
    rng = np.random.default_rng(3)
    a = _padded(rng, 500, k, "float16")
    rows = torch.tensor(rng.integers(0, 500, m), dtype=torch.int32, device="cuda")
    b = _padded(rng, k, n, "float16")
    c = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
    args = (a, rows, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))
    report = gathered_rows_matmul_kernel.explain(*args, arch="sm_90a", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    assert "tiles copied by cp.async, not TMA" in report
    gathered_rows_matmul_kernel[(3, 2)](*args, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    _check(c, _f64(a)[rows.cpu().numpy()] @ _f64(b), "float16")


def test_tutorial_matmul_agrees_with_triton():
    """The same source under Triton (bench/twins.py) gives the same product, to fp16 rounding."""
    _needs_hopper()
    from triton_twin import triton_twin_of
    twin = triton_twin_of(ROOT / "examples" / "matmul.py")
    import matmul as example
    m, n, k = 2000, 1536, 1000
    rng = np.random.default_rng(5)
    a, b = _padded(rng, m, k, "float16"), _padded(rng, k, n, "float16")
    ours = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    theirs = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)
    example.matmul(a, b, out=ours, config=cfg)
    twin.matmul(a, b, out=theirs, config=cfg)
    _check(ours, _f64(theirs), "float16")
    _check(ours, _f64(a) @ _f64(b), "float16")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tensor_descriptor_matmul(dtype):
    """tests/tma_kernels.py: tl.make_tensor_descriptor / desc.load / desc.store; the loads take the TMA ring and
    the store clips at the tensor's edge (the padding columns of C stay NaN)."""
    _needs_hopper()
    from tma_kernels import td_matmul_kernel
    m, n, k = 333, 200, 456
    rng = np.random.default_rng(13)
    a, b = _padded(rng, m, k, dtype), _padded(rng, k, n, dtype)
    c_full = torch.full((m, 320), float("nan"), dtype=getattr(torch, dtype), device="cuda")
    c = c_full[:, :n]
    args = (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))
    meta = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    _takes_tma(td_matmul_kernel, *args, arch="sm_90a", num_warps=4, num_stages=3, **meta)
    td_matmul_kernel[(-(-m // 128), -(-n // 128))](*args, num_warps=4, num_stages=3, **meta)
    _check(c, _f64(a) @ _f64(b), dtype)
    assert torch.isnan(c_full[:, n:]).all()


@pytest.mark.parametrize("shift, pad", [(5, "zero"), (-7, "nan")])
def test_tensor_descriptor_shift_pads_and_clips(shift, pad):
    _needs_hopper()
    from tma_kernels import td_shift_kernel
    m, n = 37, 50
    x = torch.randn((m, 64), device="cuda")
    y = torch.full((m, 64), -1.0, device="cuda")
    td_shift_kernel[(3, 4)](x[:, :n], y[:, :n], m, n, 64, 64, SHIFT=shift, PAD=pad, BM=16, BN=16)
    xh = x.cpu().numpy()
    expected = np.full((m, n), 0.0 if pad == "zero" else np.nan, np.float32)
    cols = np.arange(n) + shift
    inside = (cols >= 0) & (cols < n)
    expected[:, inside] = xh[:, cols[inside]]
    np.testing.assert_array_equal(y[:, :n].cpu().numpy(), expected)
    assert (y[:, n:] == -1.0).all()
