"""GPU tests of the flash-attention example (examples/attention.py, marker `gpu`): fp16 and bf16, causal and
not, head_dim 64 and 128, sequence lengths that are not multiples of the blocks, outputs poisoned with NaN,
against a float64 softmax(Q K^T / sqrt(d)) V; the same source under Triton where it is importable; the
mma.sync path (TRANSPILER_WGMMA=0) and small-block configurations that take other instruction shapes.

Run in a process of its own: a fault in tensor-core code poisons the CUDA context for the rest of the process.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))
import attention as A  # noqa: E402

pytestmark = pytest.mark.gpu


def _lib(dtype):
    if dtype == "bfloat16":
        pytest.importorskip("torch")
        return "torch"
    pytest.importorskip("cupy")
    return "cupy"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("seq", [77, 1000, 1153])
def test_attention_matches_float64(dtype, head_dim, causal, seq):
    A.run_case(_lib(dtype), dtype=dtype, shape=(2, 3, seq, head_dim), causal=causal)


@pytest.mark.parametrize("config", [dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2),
                                    dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=2),
                                    dict(BLOCK_M=64, BLOCK_N=32, num_warps=4, num_stages=3),
                                    dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=2),
                                    dict(BLOCK_M=64, BLOCK_N=64, num_warps=8, num_stages=2)],
                         ids=["64x64w4", "128x128w8", "64x32w4", "32x16w4", "64x64w8"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_other_configs(config, causal):
    A.run_case(_lib("float16"), dtype="float16", shape=(1, 4, 333, 64), causal=causal, config=config)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_waiting_for_every_wgmma_group(causal, monkeypatch):
    """The default leaves P @ V's group in flight into the next iteration; the variant that waits for it."""
    monkeypatch.setenv("TRANSPILER_WGMMA_CHAIN_IN_FLIGHT", "0")
    A.run_case(_lib("float16"), dtype="float16", shape=(1, 3, 700, 128), causal=causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_on_mma_sync(causal, monkeypatch):
    monkeypatch.setenv("TRANSPILER_WGMMA", "0")
    A.run_case(_lib("float16"), dtype="float16", shape=(1, 2, 500, 128), causal=causal)


def test_attention_strided_views():
    """Q, K, V as [batch, seq, heads, dim] tensors seen as [batch, heads, seq, dim] (the layout of fused QKV
    projections): strides that are not the contiguous ones."""
    torch = pytest.importorskip("torch")
    z, h, n, d = 2, 4, 300, 64
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v = (torch.randn(z, n, h, d, device="cuda", dtype=torch.float16, generator=gen).transpose(1, 2)
               for _ in range(3))
    out = torch.full((z, h, n, d), float("nan"), device="cuda", dtype=torch.float16)
    A.attention(q, k, v, out=out, causal=True)
    A.check_attention("attention (strided)", out, A.reference(q, k, v, causal=True), "float16")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_agrees_with_triton_on_the_same_source(causal):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from twins import load
    triton_module = load(ROOT / "examples" / "attention.py", "triton")
    z, h, n, d = 2, 3, 1000, 128
    gen = torch.Generator(device="cuda").manual_seed(11 + causal)
    q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    ours = torch.full_like(q, float("nan"))
    theirs = torch.full_like(q, float("nan"))
    A.attention(q, k, v, out=ours, causal=causal)
    triton_module.attention(q, k, v, out=theirs, causal=causal)
    expected = A.reference(q, k, v, causal=causal)
    A.check_attention("ours", ours, expected, "float16")
    A.check_attention("triton", theirs, expected, "float16")
    diff = (ours.double() - theirs.double()).abs().max().item()
    assert diff < 2e-2, f"ours and Triton differ by {diff}"
    assert np.isfinite(diff)
