"""CPU tests of the flash-attention example on sm_90a: both products on warpgroup MMA, P @ V in the register-A
form (P's registers are the A fragments: no shared-memory round trip), no spills, no NVRTC warnings; the
decisions pinned; the register-A fragment layout checked against the PTX fragment formula; a register-A
operand in another layout converted (and recorded as such); sm_80 and TRANSPILER_WGMMA=0 keep mma.sync."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis.tensor_cores import plan_wgmma, wgmma_a_layout, wgmma_layout
from transpiler import dtypes
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import attention as attention_example  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")
CONFIG = dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=4)
PTX_TYPE = {tl.float16: "f16", tl.bfloat16: "bf16"}


def _variant(arch, dtype=tl.float16, head_dim=128, causal=True, config=CONFIG, seq=4096, heads=32):
    s = transpiler.StandIn(dtype)
    args = (s, s, s, s, 0.088, heads, seq) + (heads * seq * head_dim, seq * head_dim, head_dim, 1) * 4
    return attention_example.attention_kernel.compiled_variant(*args, HEAD_DIM=head_dim, CAUSAL=causal, arch=arch,
                                                               **config)


def _register_a_wgmmas(ptx, kind):
    """wgmma instructions whose A operand is a list of 4 registers (the register-A form)."""
    return re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.{kind}\.{kind} \{{[^}}]*\}}, "
                      r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+", ptx)


def _descriptor_wgmmas(ptx, kind):
    return re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.{kind}\.{kind} \{{[^}}]*\}}, %rd\d+, "
                      r"%rd\d+", ptx)


@needs_nvrtc
@pytest.mark.parametrize("dtype,head_dim,causal", [(tl.float16, 128, True), (tl.bfloat16, 128, False),
                                                   (tl.float16, 64, False)])
def test_attention_on_sm90a_multiplies_p_from_registers(dtype, head_dim, causal):
    variant = _variant("sm_90a", dtype, head_dim, causal)
    result = compile_offline(variant.source, "sm_90a")
    kind = PTX_TYPE[dtype]
    # each of the two inner loops (unmasked blocks, masked blocks): Q @ K^T, head_dim / 16 wgmmas with A (Q) and
    # B (K) read through descriptors; P @ V, BLOCK_N / 16 = 4 wgmmas with P in registers
    assert _register_a_wgmmas(result.ptx, kind) == [str(head_dim)] * 8
    assert _descriptor_wgmmas(result.ptx, kind) == ["64"] * (2 * head_dim // 16)
    assert "mma.sync" not in result.ptx and "ldmatrix" not in result.ptx
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.warnings
    # P never goes through shared memory; Q is written to its tile once, before the loops
    assert "dot operands: registers to shared memory" not in variant.source
    assert variant.source.count("dot operands the loop does not change") == 1


def test_attention_decisions_are_pinned():
    ir, analysis = _analysis("sm_90a")
    tensor_cores = [d.what for d in analysis.decisions.for_pass("tensor_cores")]
    qk = ("dot 128x64x128: wgmma.mma_async m64n64k16 (fp16), warpgroups 2x1, each 64x64 = 1 instruction(s) per k "
          "step; both operands from shared memory through descriptors")
    pv = ("dot 128x128x64: wgmma.mma_async m64n128k16 (fp16), warpgroups 2x1, each 64x128 = 1 instruction(s) per k "
          "step; A from registers (the register-A form), B from shared memory through a descriptor")
    assert tensor_cores == [qk, pv, qk, pv]
    layout = [d.what for d in analysis.decisions.for_pass("layout") if "wgmma A" in d.what]
    assert layout == ["A read in place as wgmma A fragments (no conversion)"] * 2
    pipeline = [d.what for d in analysis.decisions.for_pass("pipeline")]
    assert [p for p in pipeline if "cp.async pipeline" in p] == [
        # the unmasked key loop (K and V loaded without masks), then the masked one
        "4-stage cp.async pipeline for the loads on line 42 (16 B cp.async), line 59 (16 B cp.async)",
        "4-stage cp.async pipeline for the loads on line 40 (16 B cp.async), line 57 (16 B cp.async)"]
    # P @ V's group runs on while the next iteration waits for its stage and issues Q @ K^T
    in_flight = [d for d in analysis.decisions.for_pass("pipeline") if "in flight" in d.what]
    assert [d.line for d in in_flight] == [60, 60] and "2 iteration(s) ahead" in in_flight[0].why


def test_attention_with_three_stages_waits_for_every_group():
    _, analysis = _analysis("sm_90a", dict(CONFIG, num_stages=3))
    assert not [d for d in analysis.decisions.for_pass("pipeline") if "in flight" in d.what]


@needs_nvrtc
def test_attention_in_flight_group_is_retired_by_the_next_wait():
    variant = _variant("sm_90a", tl.float16, 128, False)
    result = compile_offline(variant.source, "sm_90a")
    # per loop: Q @ K^T waits for everything (retiring the previous P @ V), P @ V waits for the one before
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned (\d)", result.ptx).count("1") == 2
    assert "the previous iteration's group, left in flight, is done" in variant.source
    assert variant.source.count("the last iteration's wgmma group") == 2
    assert result.spill_bytes == 0 and not result.warnings, result.warnings


def _analysis(arch, config=CONFIG, head_dim=128):
    from example_specs import analysis_for, aligned
    import numpy as np
    args = [aligned(64, np.float16) for _ in range(4)] + [0.088, 32, 4096] + [32 * 4096 * head_dim, 4096 * head_dim,
                                                                             head_dim, 1] * 4
    constexprs = dict(HEAD_DIM=head_dim, BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], CAUSAL=True)
    return analysis_for(attention_example.attention_kernel, args, constexprs, config["num_warps"], None,
                        config["num_stages"], arch)


def test_register_a_layout_is_the_ptx_fragment_and_the_accumulator_of_n_equal_k():
    for m, k, warps in ((128, 64, 8), (128, 64, 4), (64, 32, 4), (256, 128, 8)):
        shape, why = plan_wgmma(m, 128, k, dtypes.float16, dtypes.float32, warps, a_in_registers=True)
        assert shape is not None, why
        layout = wgmma_a_layout(m, k, shape, warps)
        rows_per_group = 64 * shape.tiles_m
        for warp in range(warps):
            w, group = warp % 4, warp // 4
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for mt in range(shape.tiles_m):
                    for step in range(k // 16):
                        for i in range(8):     # PTX: element i of the m16n8k16 A fragment
                            r = i + 8 * step + 8 * (k // 16) * mt
                            expect = (group % shape.groups_m * rows_per_group + 64 * mt + 16 * w + g
                                      + 8 * ((i >> 1) & 1), 16 * step + 2 * t + (i & 1) + 8 * (i >> 2))
                            assert layout.coords(r, lane, warp) == expect
        # the product of a dot with N = this K, split over the same warpgroups, is already in this layout
        qk_shape, _ = plan_wgmma(m, k, 64, dtypes.float16, dtypes.float32, warps)
        if (qk_shape.groups_m, qk_shape.tiles_m) == (shape.groups_m, shape.tiles_m):
            assert wgmma_layout(m, k, qk_shape, warps) == layout


def test_register_a_counts_its_fragments_against_the_register_file():
    # 64x256 accumulators (128 registers) plus 64x512 fp16 A fragments (128 registers) on 4 warps: too many
    shape, why = plan_wgmma(64, 256, 512, dtypes.float16, dtypes.float32, 4, a_in_registers=True)
    assert shape is None and "accumulator and A fragment registers" in why
    shape, _ = plan_wgmma(64, 256, 512, dtypes.float16, dtypes.float32, 4)
    assert shape is not None


@transpiler.jit
def scaled_a_kernel(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    c = tl.dot((a * 2.0).to(tl.float16), b)
    tl.store(C + rm[:, None] * BN + rn[None, :], c)


@needs_nvrtc
def test_register_a_operand_in_another_layout_is_converted():
    a, c = transpiler.StandIn(tl.float16), transpiler.StandIn(tl.float32)
    variant = scaled_a_kernel.compiled_variant(a, a, c, BM=64, BN=64, BK=64, num_warps=4, arch="sm_90a")
    explained = scaled_a_kernel.explain(a, a, c, BM=64, BN=64, BK=64, num_warps=4, arch="sm_90a")
    assert "A converted to the wgmma A-fragment layout through shared memory" in explained
    assert "register-A form" in explained
    result = compile_offline(variant.source, "sm_90a")
    assert len(_register_a_wgmmas(result.ptx, "f16")) == 4
    assert result.spill_bytes == 0 and not result.warnings


@needs_nvrtc
def test_attention_keeps_mma_sync_on_sm80_and_without_wgmma(monkeypatch):
    result = compile_offline(_variant(None).source, "sm_80")
    assert "mma.sync.aligned.m16n8k16" in result.ptx and "wgmma" not in result.ptx
    assert result.spill_bytes == 0
    monkeypatch.setenv("TRANSPILER_WGMMA", "0")
    source = _variant("sm_90a", config=dict(CONFIG, num_stages=2)).source
    assert "wgmma" not in source.split("---- end of tile helpers")[-1]


@transpiler.jit
def rescale_first_kernel(Q, K, V, Out, n_blocks, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm, rn, rd = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for j in range(n_blocks):
        acc = acc * 0.5                     # the carried product, read before this iteration's first dot
        k = tl.load(K + rd[:, None] + (j * BN + rn)[None, :] * D)
        s = tl.dot(q, k)
        v = tl.load(V + (j * BN + rn)[:, None] * D + rd[None, :])
        acc = tl.dot(s.to(tl.float16), v, acc)
    tl.store(Out + rm[:, None] * D + rd[None, :], acc)


def test_a_product_read_before_the_first_dot_is_not_left_in_flight():
    h, f = transpiler.StandIn(tl.float16), transpiler.StandIn(tl.float32)
    explained = rescale_first_kernel.explain(h, h, h, f, 8, BM=64, BN=64, D=64, num_warps=4, num_stages=4,
                                             arch="sm_90a")
    assert "A from registers (the register-A form)" in explained and "4-stage cp.async pipeline" in explained
    assert "in flight" not in explained
