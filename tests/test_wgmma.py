"""CPU tests of warpgroup MMA (sm_90a): the matmul example's 128x128x64 fp16 specialization compiles to
`wgmma.mma_async` with both operands read through descriptors, no ldmatrix and no spills; the decisions
(instruction, warpgroups, swizzle modes, descriptor strides, pipeline distance) are pinned; the tiles' slab
layout is the hardware's 128/64/32-byte swizzle on byte addresses; the accumulator layout is the PTX one;
sm_80 and TRANSPILER_WGMMA=0 keep mma.sync, with the reason in the explain report."""
from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest

import transpiler
import transpiler.language as tl
from transpiler import dtypes
from transpiler.analysis.tensor_cores import plan_wgmma, wgmma_layout
from transpiler.emit_cuda.tiles import OperandView, SharedTile
from transpiler.emit_cuda.wgmma import descriptor
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matmul as matmul_example  # noqa: E402
from dot_kernels import AT_CASES, dot_at_kernel  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")
CONFIG = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)


def _args(dtype=tl.float16):
    a = b = c = transpiler.StandIn(dtype)
    return (a, b, c, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1)


def _variant(arch, config=CONFIG, dtype=tl.float16):
    return matmul_example.matmul_kernel.compiled_variant(*_args(dtype), ACTIVATION="leaky_relu", arch=arch, **config)


@needs_nvrtc
@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_example_on_sm90a_is_wgmma_from_shared_memory(dtype):
    result = compile_offline(_variant("sm_90a", dtype=dtype).source, "sm_90a")
    kind = "f16" if dtype is tl.float16 else "bf16"
    # two m64 instructions per k16 step: four k steps of a 64-deep block, in each of the loop's two versions
    # (the TMA ring and its cp.async fallback, analysis/tma.py)
    assert len(re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.{kind}\.{kind} ", result.ptx)) == 16
    for needed in ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                   "cp.async.cg.shared.global", "cp.async.wait_group"):
        assert needed in result.ptx, needed
    assert "ldmatrix" not in result.ptx and "mma.sync" not in result.ptx
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.warnings


@needs_nvrtc
def test_example_without_a_target_keeps_mma_sync_on_sm90a():
    result = compile_offline(_variant(None).source, "sm_90a")
    assert "mma.sync.aligned.m16n8k16" in result.ptx and "wgmma" not in result.ptx


def test_wgmma_off_switch_keeps_mma_sync_and_says_why(monkeypatch):
    """The switch makes sm_90a's source the one for any device; analysis asked for sm_90a itself says why."""
    from transpiler.analysis import analyze
    from transpiler.options import CompileOptions
    monkeypatch.setenv("TRANSPILER_WGMMA", "0")
    constexprs = {k: v for k, v in CONFIG.items() if not k.startswith("num_")}
    ir = matmul_example.matmul_kernel.ir(*_args(), ACTIVATION="", **constexprs)
    analysis = analyze(ir, CompileOptions(num_warps=CONFIG["num_warps"], num_stages=CONFIG["num_stages"],
                                          arch="sm_90a"))
    (plan,) = analysis.dots.values()
    assert plan.kind == "mma"
    assert "TRANSPILER_WGMMA=0" in analysis.decisions.report()


def test_decisions_are_pinned():
    _, analysis = matmul_example.matmul_kernel.analysis(*_args(), ACTIVATION="", **CONFIG, arch="sm_90a")
    (plan,) = analysis.dots.values()
    w = plan.wgmma
    assert plan.kind == "wgmma" and (w.groups_m, w.groups_n, w.tiles_m, w.n, w.k) == (1, 1, 2, 128, 16)
    assert w.helper == "tp::wgmma_m64n128k16_f16"
    (pipe,) = analysis.pipelines.values()
    assert pipe.stages == 3 and pipe.distance == 2 and pipe.async_dot is None      # waited for in its iteration
    assert [s.col_dim for s in pipe.loads] == [1, 1] and all(s.zero_fill for s in pipe.loads)
    # A: 128 x 64 fp16, K along 128-byte rows: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
    a = OperandView(SharedTile("a", (128, 64), 1, dtypes.float16, True))
    assert descriptor(a, 1) == descriptor(a, 1).__class__(mode=1, lbo=16, sbo=1024, transposed=0)
    # B: 64 x 128 fp16 with N along 256-byte rows: two 128-byte slabs of 64 rows each, N-major (transposed).
    b = OperandView(SharedTile("b", (64, 128), 1, dtypes.float16, True))
    d = descriptor(b, 0)
    assert (d.mode, d.lbo, d.sbo, d.transposed) == (1, 64 * 128, 1024, 1)
    report = matmul_example.matmul_kernel.explain(*_args(), ACTIVATION="", **CONFIG, arch=None)
    assert "mma.sync m16n8k16" in report


def test_explain_for_sm90a_names_wgmma():
    report = matmul_example.matmul_kernel.explain(*_args(), ACTIVATION="", **{**CONFIG, "num_warps": 8})
    assert "wgmma" not in report
    _, analysis = matmul_example.matmul_kernel.analysis(*_args(), ACTIVATION="", **{**CONFIG, "num_warps": 8},
                                                        arch="sm_90a")
    text = analysis.decisions.report()
    assert "wgmma.mma_async m64n128k16 (fp16), warpgroups 2x1" in text


@pytest.mark.parametrize("m, n, k, warps, why", [
    (16, 64, 64, 4, "M a multiple of 64"),
    (64, 64, 32, 2, "whole number of warpgroups"),
    (64, 512, 32, 4, "at most 256"),
    (64, 8, 16, 4, "1024-byte swizzle atoms"),
    # 512 threads hold at most 128 registers each: 128 accumulators leave none for addresses (ptxas gave up)
    (256, 256, 64, 16, "accumulator registers per thread exceed"),
    (128, 256, 64, 4, "accumulator registers per thread exceed"),
])
def test_shapes_wgmma_cannot_take_fall_back_with_a_reason(m, n, k, warps, why):
    shape, reason = plan_wgmma(m, n, k, dtypes.float16, dtypes.float32, warps)
    assert shape is None and why in reason


def test_fp16_accumulation_and_other_dtypes_stay_on_mma_sync():
    assert plan_wgmma(64, 64, 32, dtypes.float16, dtypes.float16, 4)[0] is None
    assert "not built yet" in plan_wgmma(64, 64, 32, dtypes.int8, dtypes.float32, 4)[1]
    assert "no instruction" in plan_wgmma(64, 64, 32, dtypes.float32, dtypes.float32, 4, precision="ieee")[1]
    assert "no instruction" in plan_wgmma(64, 64, 32, dtypes.float64, dtypes.float64, 4)[1]
    # tf32, int8 and fp8 take wgmma with K-major tiles (tests/test_wgmma_dtypes.py)
    assert plan_wgmma(64, 64, 32, dtypes.float32, dtypes.float32, 4)[0].k == 8


def _hardware_swizzle(linear, span):
    """The wgmma/TMA swizzle of a byte offset inside a span-wide canonical layout (CuTe Swizzle<b,4,3>)."""
    mask = {128: 7, 64: 3, 32: 1}[span]
    return linear ^ (((linear >> 7) & mask) << 4)


@pytest.mark.parametrize("shape, col_dim, dt", [((64, 128), 1, dtypes.float16), ((128, 64), 1, dtypes.bfloat16),
                                                 ((64, 32), 1, dtypes.float16), ((256, 16), 1, dtypes.float16),
                                                 ((128, 256), 0, dtypes.float16), ((64, 512), 1, dtypes.float16)])
def test_slab_tiles_are_the_hardware_swizzle(shape, col_dim, dt):
    tile = SharedTile("t", shape, col_dim, dt, True)
    es, span = dt.itemsize, tile.span_bytes
    rows, row_bytes = tile.rows, tile.row_bytes
    seen = set()
    for coords in itertools.product(range(shape[0]), range(shape[1])):
        row, col = coords[1 - col_dim], coords[col_dim]
        byte = col * es
        linear = (byte // span) * rows * span + row * span + byte % span    # slab, row, byte in the row
        assert tile.offset_value(coords) * es == _hardware_swizzle(linear, span), (coords, row_bytes)
        seen.add(tile.offset_value(coords))
    assert len(seen) == shape[0] * shape[1]


@pytest.mark.parametrize("n, tiles_m, groups_m, groups_n, warps", [(128, 2, 1, 1, 4), (256, 1, 2, 1, 8),
                                                                     (64, 1, 1, 2, 8), (32, 1, 1, 1, 4)])
def test_accumulator_layout_is_the_ptx_one(n, tiles_m, groups_m, groups_n, warps):
    from transpiler.analysis.tensor_cores import WgmmaShape
    shape = WgmmaShape("f16", groups_m, groups_n, tiles_m, n)
    m, ncols = 64 * tiles_m * groups_m, n * groups_n
    layout = wgmma_layout(m, ncols, shape, warps)
    for warp, lane, reg in itertools.product(range(warps), range(32), range(layout.num_regs)):
        wg, w = warp // 4, warp % 4
        mt, i = reg // (n // 2), reg % (n // 2)
        row = 64 * tiles_m * (wg % groups_m) + 64 * mt + 16 * w + (lane >> 2) + 8 * ((i >> 1) & 1)
        col = n * (wg // groups_m) + 8 * (i >> 2) + 2 * (lane & 3) + (i & 1)
        assert layout.coords(reg, lane, warp) == (row, col)


@needs_nvrtc
@pytest.mark.parametrize("bm, bn, bk, warps, stages, shape", AT_CASES)
def test_a_given_transposed_is_read_m_major(bm, bn, bk, warps, stages, shape):
    import numpy as np
    m, n, k = shape
    at, b, c = np.ones((k, m), np.float16), np.ones((k, n), np.float16), np.ones((m, n), np.float32)
    variant = dot_at_kernel.compiled_variant(at, b, c, m, n, k, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                             num_stages=stages, arch="sm_90a")
    assert re.search(r"tp::wgmma_m64n\d+k16_f16<1, 1>", variant.source)       # A M-major, B N-major
    result = compile_offline(variant.source, "sm_90a")
    assert result.spill_bytes == 0 and not result.warnings, result.log


@pytest.mark.skipif(not nvrtc_available(), reason="needs NVRTC")
def test_a_tile_whose_accumulators_overflow_the_register_file_compiles_on_mma_sync():
    """256 x 256 with 16 warps: wgmma's accumulators cannot spill, so ptxas aborted; mma.sync compiles."""
    import numpy as np
    from test_conversion_chunks import _big_tile_gemm
    m, n, k = 700, 608, 320
    args = (np.ones((m, k), np.float16), np.ones((k, n), np.float16), np.ones((m, n), np.float16),
            np.ones((256, 256), np.float32), m, n, k)
    src = _big_tile_gemm.cuda_source(*args, BM=256, BN=256, BK=64, num_warps=16, num_stages=2, arch="sm_90a")
    assert "wgmma.mma_async" not in src and "mma.sync" in src
    compile_offline(src, "sm_90a")
