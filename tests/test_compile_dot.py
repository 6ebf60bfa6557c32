"""CPU tests of `tl.dot`: every dot case compiles with NVRTC for sm_80 and sm_90a with no spills and no
warnings; the matmul example's specialization uses mma.sync, ldmatrix and cp.async; the analysis decisions
(instruction, warp grid, pipeline depth, staging) are pinned."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.runtime.compiler import compile_offline, nvrtc_available

from dot_kernels import CASES, dot_kernel, dot_epilogue_kernel, host_stand_ins, launch_args

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matmul as matmul_example  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")


def dot_source(case, arch=None):
    a, b, c, sa, sb, sc = host_stand_ins(case)
    _, args, options = launch_args(case, a, b, c, sa, sb, sc)
    return dot_kernel.compiled_variant(*args, arch=arch, **options)


def matmul_variant(dtype=tl.float16, config=None):
    m = n = k = 4096
    a = b = transpiler.StandIn(dtype)
    c = transpiler.StandIn(dtype)
    config = config or matmul_example.config_for(m, n, k)
    return matmul_example.matmul_kernel.compiled_variant(a, b, c, m, n, k, k, 1, n, 1, n, 1, ACTIVATION="leaky_relu",
                                                         **config)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dot_case_compiles_without_spills(case, arch):
    result = compile_offline(dot_source(case, arch).source, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.warnings


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_matmul_example_uses_tensor_cores_and_cp_async(dtype, arch):
    variant = matmul_variant(dtype)
    result = compile_offline(variant.source, arch)
    kind = "f16" if dtype is tl.float16 else "bf16"
    assert re.search(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{kind}\.{kind}\.f32", result.ptx)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in result.ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in result.ptx     # B is K x N, N contiguous
    assert "cp.async.cg.shared.global" in result.ptx and "cp.async.wait_group" in result.ptx
    assert result.spill_bytes == 0, result.log
    assert not result.warnings
    # num_stages tiles of A (BLOCK_M x BLOCK_K) and B (BLOCK_K x BLOCK_N), 2 bytes each
    c = matmul_example.config_for(4096, 4096, 4096)
    assert variant.shared_bytes >= c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2


def test_matmul_decisions_are_pinned():
    m = n = k = 4096
    a = b = c = np.ones((1, 1), np.float16)
    kernel = matmul_example.matmul_kernel
    _, analysis = kernel.analysis(a, b, c, m, n, k, k, 1, n, 1, n, 1, ACTIVATION="", BLOCK_M=128, BLOCK_N=256,
                                  BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
    (plan,) = analysis.dots.values()
    assert plan.kind == "mma" and (plan.warps_m, plan.warps_n) == (2, 4) and (plan.tiles_m, plan.tiles_n) == (4, 8)
    (pipe,) = analysis.pipelines.values()
    assert pipe.stages == 3
    assert sorted(s.vec for s in pipe.loads) == [8, 8]                # 16-byte cp.async for A and B
    assert [s.col_dim for s in pipe.loads] == [1, 1]                  # A: K contiguous, B: N contiguous
    assert len(pipe.main_dead_carried) == 2          # a_ptrs and b_ptrs are advanced by the prefetch only
    text = analysis.decisions.report()
    assert "mma.sync m16n8k16" in text and "3-stage cp.async pipeline" in text


def _bench_matmul(m, n, k, arch):
    """The bench's matmul (bench/kernels.py) at its configuration for the shape: (variant, analysis)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import kernels as bench_kernels
    a = transpiler.StandIn(tl.float16)
    args = (a, a, a, m, n, k, k, 1, n, 1, n, 1)
    config = bench_kernels.matmul_config(m, n, k)
    variant = bench_kernels.matmul_kernel.compiled_variant(*args, arch=arch, **config)
    _, analysis = bench_kernels.matmul_kernel.analysis(*args, arch=arch, **config)
    return variant, analysis, config


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_skinny_mma_reads_its_stage_whole_and_refills_it(arch, monkeypatch):
    """By default (TRANSPILER_MMA_REFILL_READ_STAGE; H200: +17% at 16x8192x8192) a 16 x 128 x 128 mma.sync tile
    over 4 warps (the decode-shaped bench matmul), whose fragments over the whole K and accumulator fit in 112
    registers, loads every fragment, a barrier frees the stage, and the copies of iteration i + num_stages
    refill it: num_stages iterations in flight, wait_group num_stages - 1."""
    monkeypatch.delenv("TRANSPILER_MMA_REFILL_READ_STAGE", raising=False)
    monkeypatch.delenv("TRANSPILER_MMA_FRAGMENT_REGISTERS", raising=False)
    variant, analysis, config = _bench_matmul(16, 8192, 8192, arch)
    (pipe,) = analysis.pipelines.values()
    (dot,) = analysis.dots.values()
    assert dot.kind == "mma" and pipe.refill_dot is not None
    assert pipe.distance == pipe.stages == config["num_stages"]
    assert "stage read into registers whole" in analysis.decisions.report()
    loop = variant.source.split("for (int k_ = 0;")[1].split("tp::cp_async_wait<0>();")[0]
    assert f"tp::cp_async_wait<{pipe.stages - 1}>();" in loop
    fragments, barrier, copies, mma = (loop.index(x) for x in ("tp::ldmatrix_x4(", "// all threads hold their",
                                                               "tp::cp_async_zfill", "tp::mma_m16n8k16_f16("))
    assert fragments < barrier < copies < mma              # every fragment read, then the refill, then the mmas
    assert "(stage + " not in loop                         # the copies go to the stage just read
    result = compile_offline(variant.source, arch)
    assert result.spill_bytes == 0 and not result.warnings, result.log
    assert variant.shared_bytes < 4 * 36 * 1024 + 8192     # the same 4 stages of 36 KiB as before


@needs_nvrtc
def test_ldmatrix_reads_a_shared_base_made_once_per_product(monkeypatch):
    """Each operand's stage gets its 32-bit shared address once per product and every ldmatrix adds the lane's
    offset and a constant to it (TRANSPILER_MMA_SHARED_BASE), with the k steps that do not meet the lane's bits
    added, not XORed (TRANSPILER_TILE_IMMEDIATES). With both off, the skinny loop took 212 registers and 216 SASS
    instructions under the H200's NVRTC 13.0 (168 and 137 with them; bench/NOTES.md, issue 12 session 10): here
    the two builds are compared by register count."""
    registers = {}
    for setting in ("1", "0"):
        monkeypatch.setenv("TRANSPILER_MMA_SHARED_BASE", setting)
        monkeypatch.setenv("TRANSPILER_TILE_IMMEDIATES", setting)
        variant, _, _ = _bench_matmul(16, 4096, 14336, "sm_90a")
        loop = variant.source.split("for (int k_ = 0;")[1].split("tp::cp_async_wait<0>();")[0]
        if setting == "1":
            assert "const unsigned a_tile_smem = tp::smem_addr(a_stages + (stage) * 2048);" in loop
            assert "const unsigned b_tile_smem = tp::smem_addr(b_stages + (stage) * 16384);" in loop
            reads = [line for line in loop.splitlines() if "tp::ldmatrix" in line]
            assert reads and all("_tile_smem + 2 * ((" in line for line in reads)
            assert "+ tp::swizzle<256, 2>(kk, 0)" in loop and "((kk) & 64)" in loop     # k steps as immediates
        else:
            assert "tp::smem_addr(" not in loop and "&(a_stages + (stage) * 2048)[" in loop
        result = compile_offline(variant.source, "sm_90a")
        assert result.spill_bytes == 0 and not result.warnings, result.log
        registers[setting] = result.registers
    assert registers["1"] < registers["0"], registers


@pytest.mark.parametrize("m", [16, 32])
def test_refill_switch_off_and_over_budget_keep_the_k_step_order(m, monkeypatch):
    """TRANSPILER_MMA_REFILL_READ_STAGE=0 gives the 16-row tile the k-step order; by default the 32-row tile
    (160 registers of fragments and accumulator, over the budget of 128: at 192 it ran 13% slower on the H200)
    keeps it too. Then the copies go one iteration later, num_stages - 1 ahead."""
    if m == 16:
        monkeypatch.setenv("TRANSPILER_MMA_REFILL_READ_STAGE", "0")
    else:
        monkeypatch.delenv("TRANSPILER_MMA_REFILL_READ_STAGE", raising=False)
    monkeypatch.delenv("TRANSPILER_MMA_FRAGMENT_REGISTERS", raising=False)
    _, analysis, config = _bench_matmul(m, 8192, 8192, "sm_80")
    (pipe,) = analysis.pipelines.values()
    assert pipe.refill_dot is None and pipe.distance == config["num_stages"] - 1
    assert ("stage read k step by k step" in analysis.decisions.report()) == (m == 32)


def test_large_mma_tile_keeps_the_k_step_refill(monkeypatch):
    """By default a 128 x 128 accumulator over 4 warps is 128 registers alone: the dot reads its stage k step by
    k step and the copies refill the stage of the previous iteration (num_stages - 1 ahead)."""
    monkeypatch.delenv("TRANSPILER_MMA_REFILL_READ_STAGE", raising=False)
    m = n = k = 4096
    a = b = c = np.ones((1, 1), np.float16)
    _, analysis = matmul_example.matmul_kernel.analysis(a, b, c, m, n, k, k, 1, n, 1, n, 1, ACTIVATION="",
                                                        BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                                                        num_warps=4, num_stages=4, arch="sm_80")
    (pipe,) = analysis.pipelines.values()
    assert pipe.refill_dot is None and pipe.distance == 3
    assert "stage read k step by k step" in analysis.decisions.report()


def test_odd_strides_fall_back_to_registers():
    """K = 333 with fp16: rows are not 16-byte aligned, so no cp.async; the dot still compiles."""
    case = next(c for c in CASES if c.shape == (77, 45, 333) and c.dtype == "float16")
    source = dot_source(case).source
    assert "cp_async" not in source.split("namespace tp")[-1].split("end of device helpers")[-1]
    assert "registers to shared memory" in source


@needs_nvrtc
def test_dot_result_feeds_epilogue_ops():
    a = np.ones((64, 32), np.float16)
    b = np.ones((32, 64), np.float16)
    args = (a, b, np.ones(64, np.float32), np.ones((64, 64), np.float16), np.ones(64, np.float32), 64, 64, 32)
    variant = dot_epilogue_kernel.compiled_variant(*args, BM=64, BN=64, BK=32)
    result = compile_offline(variant.source, "sm_90a")
    assert "mma.sync" in result.ptx and result.spill_bytes == 0 and not result.warnings


@pytest.mark.parametrize("bad, message", [
    ("shape", "do not multiply"),
    ("small", "at least 16"),
    ("dtype", "one dtype"),
])
def test_dot_errors(bad, message):
    @transpiler.jit
    def k(A, B, C, WHICH: tl.constexpr):
        r = tl.arange(0, 32)
        s = tl.arange(0, 8)
        a = tl.load(A + r[:, None] * 32 + r[None, :])
        if WHICH == "shape":
            b = tl.load(B + tl.arange(0, 16)[:, None] * 32 + r[None, :])
        elif WHICH == "small":
            b = tl.load(B + r[:, None] * 8 + s[None, :])
        else:
            b = tl.load(B + r[:, None] * 32 + r[None, :]).to(tl.float32)
        c = tl.dot(a, b)
        tl.store(C + r[:, None] * 32 + r[None, :], c)

    x = np.ones((32, 32), np.float16)
    with pytest.raises((transpiler.ShapeError, transpiler.DTypeError)) as info:
        k.cuda_source(x, x, x.astype(np.float32), WHICH=bad)
    assert message in str(info.value)
    assert "tl.dot" in str(info.value)
