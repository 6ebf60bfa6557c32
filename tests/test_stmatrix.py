"""CPU tests of stmatrix layout conversions (analysis/stmatrix.py, emitter.convert): an mma/wgmma accumulator cast
to 16 bits is written to shared memory by stmatrix.x4 on the sm_90a source, one instruction per four 8x8 blocks,
its addresses the blocks the layout's bits move; other element sizes, layouts, pitches, targets and the switch
keep the element stores. On the GPU the same conversions run in every wgmma matmul and attention test
(tests/test_gpu_dot.py, test_gpu_tma.py, test_gpu_attention.py)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis.layouts import LinearLayout, blocked
from transpiler.analysis.stmatrix import plan_stmatrix
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matmul as matmul_example  # noqa: E402

LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
ACC = LinearLayout((128, 128), ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64), (64, 0)), LANES,
                   ((16, 0), (32, 0)))
CONFIG = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4)


def _args():
    a = transpiler.StandIn(tl.float16)
    return (a, a, a, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1)


def test_an_accumulator_layout_is_written_in_blocks():
    plan = plan_stmatrix(ACC, 2, 136, "sm_90a")
    assert plan.pairs == ((8, 0), (0, 8), (0, 16), (0, 32), (0, 64), (64, 0)) and plan.warps == ((16, 0), (32, 0))


@pytest.mark.parametrize("layout, itemsize, pitch, arch", [
    (ACC, 4, 136, "sm_90a"),                         # fp32: no 16-bit blocks
    (ACC, 2, 132, "sm_90a"),                         # a 264-byte pitch leaves block rows 8-byte aligned
    (ACC, 2, 136, None),                             # the source for every device (sm_80 has no stmatrix)
    (blocked((128, 128), 8, [1, 0], 4), 2, 136, "sm_90a"),    # not a fragment layout
    (LinearLayout((128, 128), ((0, 1), (4, 0), (0, 8), (0, 16), (0, 32), (0, 64), (64, 0)), LANES,
                  ((16, 0), (32, 0))), 2, 136, "sm_90a"),     # a register bit moving 4 rows splits a block
    (LinearLayout((16, 16), ((0, 1), (8, 0)), LANES, ((0, 0), (0, 0))), 2, 24, "sm_90a"),  # two pairs, not four
])
def test_other_conversions_keep_element_stores(layout, itemsize, pitch, arch):
    assert plan_stmatrix(layout, itemsize, pitch, arch) is None


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("TRANSPILER_STMATRIX", "0")
    assert plan_stmatrix(ACC, 2, 136, "sm_90a") is None
    assert "stmatrix_x4(" not in matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a",
                                                                          **CONFIG)


def test_the_epilogue_addresses_follow_the_layout_bits():
    source = matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **CONFIG)
    assert "for (int quad = 0; quad < 16; ++quad)" in source          # 128 registers / 8 per instruction
    # lane bit 3 moves 8 rows, lane bit 4 8 columns; the warps 16 and 32 rows; quad bits 0-2 columns 16-64, bit 3
    # row 64
    assert ("const int sm_row = (lane & 7) ^ (((lane >> 3) & 1) * 8) ^ (((warp >> 0) & 1) * 16) ^ "
            "(((warp >> 1) & 1) * 32);") in source
    assert "const int sm_col = (((lane >> 4) & 1) * 8);" in source
    assert "(sm_row ^ ((((quad >> 3) & 1) * 64))) * 136" in source
    sm80 = matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", **CONFIG)
    assert "stmatrix" not in sm80


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")
def test_sixteen_stmatrix_replace_sixty_four_stores():
    variant = matmul_example.matmul_kernel.compiled_variant(*_args(), ACTIVATION="", arch="sm_90a", **CONFIG)
    result = compile_offline(variant.source, "sm_90a")
    assert result.spill_bytes == 0 and not result.warnings, result.log
    assert len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", result.ptx)) == 16
    assert not re.search(r"st\.shared\.(b32|u32|b16|u16)", result.ptx)


def _element_index(layout, r, lane, warp, pitch):
    row, col = layout.coords(r, lane, warp)
    return row * pitch + col


def _stmatrix_writes(layout, pitch):
    """index -> (warp, lane, register) the emitted stmatrix conversion stores there, from its C expressions
    evaluated here (they use only *, >>, & and ^, which Python orders as C does) and stmatrix's definition: lane
    L addresses row L % 8 of block L // 8; that row's element c comes from lane 4 * (L % 8) + c // 2, register
    pair L // 8 (elements c % 2 of the pair)."""
    from transpiler.emit_cuda.emitter import _stmatrix_addresses
    parts = _stmatrix_addresses(plan_stmatrix(layout, 2, pitch, "sm_90a"))
    writes = {}
    for warp in range(1 << len(layout.warp)):
        for quad in range(layout.num_regs // 8):
            for lane_addr in range(32):
                env = dict(lane=lane_addr, warp=warp, quad=quad)
                row = eval(parts["lane_row"], {}, env) ^ eval(parts["q_row"], {}, env)
                col = eval(parts["lane_col"], {}, env) ^ eval(parts["q_col"], {}, env)
                block, block_row = lane_addr // 8, lane_addr % 8
                for c in range(8):
                    lane = 4 * block_row + c // 2
                    writes.setdefault(row * pitch + col + c, set()).add((warp, lane, 8 * quad + 2 * block + c % 2))
    return writes


@pytest.mark.parametrize("layout", [
    ACC,                                                                    # wgmma 128x128, one warpgroup
    LinearLayout((128, 128), ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64)), LANES,
                 ((16, 0), (32, 0), (64, 0))),                              # attention's two warpgroups
    LinearLayout((16, 128), ((0, 1), (8, 0), (0, 8)), LANES, ((0, 16), (0, 32), (0, 64), (0, 0))),  # mma, 16 rows
    LinearLayout((64, 64), ((0, 1), (0, 8), (8, 0), (32, 0)), LANES, ((16, 0), (0, 16), (0, 32))),
], ids=["wgmma", "two-warpgroups", "mma-16-rows", "mixed-bits"])
def test_stmatrix_stores_each_register_where_the_element_stores_would(layout):
    pitch = layout.shape[1] + 8
    writes = _stmatrix_writes(layout, pitch)
    expected = {}
    for warp in range(1 << len(layout.warp)):
        for lane in range(32):
            for r in range(layout.num_regs):
                expected.setdefault(_element_index(layout, r, lane, warp, pitch), set()).add((warp, lane, r))
    assert writes == expected
