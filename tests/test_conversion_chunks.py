"""Layout conversions through shared memory in chunks (`analysis/conversion_chunks.py`): a simulation of every
thread's writes and reads chunk by chunk shows each destination register reads the element it should, the
buffer holds one chunk, and a big accumulator's conversion no longer sets the kernel's shared memory."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis import conversion_chunks
from transpiler.analysis.layouts import blocked
from transpiler.analysis.tensor_cores import mma_layout, warp_grid
from transpiler.runtime.compiler import compile_offline, nvrtc_available


def _offset(layout, r, lane, warp):
    """Row-major offset of the element register r of (lane, warp) holds (padding does not change which slots
    collide, so the simulation leaves it out)."""
    coords = layout.coords(r, lane, warp)
    off = 0
    for c, s in zip(coords, layout.shape):
        off = off * s + c
    return off


def _chunk(plan, layout, r):
    return sum(1 << c for j, c in plan.register_bits(layout) if r >> j & 1)


def _simulate(src, dst, plan):
    """Run the conversion chunk by chunk; returns (elements read per destination slot, slots per chunk)."""
    src_part, dst_part = plan.squeeze(src), plan.squeeze(dst)
    warps = 1 << len(src.warp)
    got = {}
    for chunk in range(plan.count):
        buffer = {}
        for w in range(warps):
            for lane in range(32):
                for r in range(src.num_regs):
                    if _chunk(plan, src, r) == chunk:
                        slot = _offset(src_part, r, lane, w)
                        assert slot < int(np.prod(src_part.shape)), "outside the chunk buffer"
                        element = src.coords(r, lane, w)
                        assert buffer.setdefault(slot, element) == element, "two elements in one slot"
        for w in range(warps):
            for lane in range(32):
                for r in range(dst.num_regs):
                    if _chunk(plan, dst, r) == chunk:
                        got[(r, lane, w)] = buffer[_offset(dst_part, r, lane, w)]
        assert len(buffer) == int(np.prod(src_part.shape)), "a chunk's slots are not all written"
    return got


@pytest.mark.parametrize("m,n,num_warps,order", [(256, 256, 8, [1, 0]), (128, 256, 8, [1, 0]), (256, 128, 4, [1, 0]),
                                                 (256, 256, 8, [0, 1])])
def test_a_big_accumulator_converts_in_chunks_and_every_register_reads_its_element(m, n, num_warps, order):
    wm, wn = warp_grid(m, n, num_warps)
    acc, _, _ = mma_layout(m, n, wm, wn, num_warps)
    store = blocked((m, n), 4, order, num_warps)
    plan = conversion_chunks.plan(acc, store, 4)
    assert plan.count > 1 and m * n * 4 // plan.count <= conversion_chunks.BUDGET_BYTES
    got = _simulate(acc, store, plan)
    for (r, lane, w), element in got.items():
        assert element == store.coords(r, lane, w)


def test_a_block_within_the_budget_converts_in_one_pass():
    acc, _, _ = mma_layout(128, 128, 2, 2, 4)
    assert conversion_chunks.plan(acc, blocked((128, 128), 4, [1, 0], 4), 4).count == 1


@transpiler.jit
def _big_tile_gemm(A, B, C, P, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A big fp32 accumulator stored as partial sums (as stream-K's P buffer, here program (0, 0)'s tile) and as
    an fp16 tile; K is a multiple of BK."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
    if tl.program_id(0) + tl.program_id(1) == 0:
        tl.store(P + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _big_tile_args():
    m = n = k = 512
    return (np.zeros((m, k), np.float16), np.zeros((k, n), np.float16), np.zeros((m, n), np.float16),
            np.zeros((256, 256), np.float32), m, n, k)


def test_a_256x256_accumulator_fits_beside_its_pipeline_stages():
    variant = _big_tile_gemm.compiled_variant(*_big_tile_args(), BM=256, BN=256, BK=64, num_warps=8, num_stages=2)
    # two stages of A and B: 2 * (256*64 + 64*256) * 2 bytes; the 256 KiB conversion now runs in 64 KiB chunks
    assert variant.shared_bytes == 131072
    assert "through shared memory in 4 chunks" in variant.source


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_chunked_conversion_compiles(arch):
    source = _big_tile_gemm.cuda_source(*_big_tile_args(), BM=256, BN=256, BK=64, num_warps=8, num_stages=2)
    result = compile_offline(source, arch)
    assert not result.warnings, result.log


@pytest.mark.parametrize("shape,src_order,dst_order,size", [((32768,), [0], [0], (4, 1)), ((64, 64, 16), [2, 1, 0], [0, 1, 2], (4, 4)),
                                                            ((128, 256), [1, 0], [0, 1], (8, 1))])
def test_blocked_to_blocked_conversions_in_chunks_read_every_element(shape, src_order, dst_order, size):
    src = blocked(shape, size[0], src_order, 8)
    dst = blocked(shape, size[1], dst_order, 8)
    plan = conversion_chunks.plan(src, dst, 4)
    assert plan.count > 1
    for (r, lane, w), element in _simulate(src, dst, plan).items():
        assert element == dst.coords(r, lane, w)
