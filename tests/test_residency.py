"""CPU: how many wgmma programs share an SM (analysis/residency.py). The bench matmul's 128 x 128 tile with 64 KiB
of stages (3 programs per SM by its shared memory and ptxas' registers) is launched with enough shared memory
that only 2 fit, said in the source and in explain; with the switch at 0, on sm_80's source, and where the
kernel's own shared memory already keeps a third out, nothing is reserved."""
import sys
from pathlib import Path

import pytest

import transpiler
import transpiler.language as tl
from transpiler.runtime.compiler import nvrtc_available
from transpiler.runtime.occupancy import blocks_per_sm, cubin_resources, limits_for

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from twins import load  # noqa: E402

KERNELS = load(Path(__file__).resolve().parent.parent / "bench" / "kernels.py", "ours")
A = transpiler.StandIn(tl.float16)


def _variant(m, n, k, arch="sm_90a", **config):
    cfg = dict(KERNELS.matmul_config(m, n, k), **config)
    return KERNELS.matmul_kernel.compiled_variant(A, A, A, m, n, k, k, 1, n, 1, n, 1, arch=arch, **cfg)


def _explain(m, n, k, **config):
    cfg = dict(KERNELS.matmul_config(m, n, k), **config)
    return str(KERNELS.matmul_kernel.explain(A, A, A, m, n, k, k, 1, n, 1, n, 1, arch="sm_90a", **cfg))


def test_the_bench_matmul_is_held_at_two_programs_per_sm():
    var = _variant(4096, 4096, 4096)
    assert var.shared_bytes == 77824            # 3 x (77824 + 1024) > 228 KiB >= 2 x (77824 + 1024)
    assert "// launched with 77824 bytes: at most 2 program(s) per SM" in var.source
    lines = var.source.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("// launched with"))
    assert lines[at - 1].endswith("66560 bytes of dynamic shared memory")       # what the buffers use
    text = _explain(4096, 4096, 4096)
    assert "why [residency]: at most 2 program(s) per SM" in text
    assert "shared memory: 77824 bytes per program at launch (the buffers use" in text


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
def test_registers_alone_would_have_let_three_in():
    var = _variant(4096, 4096, 4096)
    limits, used = limits_for("sm_90a"), cubin_resources(var.cubin("sm_90a"))
    assert blocks_per_sm(used.registers, 128, var.shared_bytes, limits) == 2
    assert blocks_per_sm(used.registers, 128, var.shared_bytes - 77824 + 66560, limits) == 3


def test_switch_off_sm80_and_large_stages_reserve_nothing(monkeypatch):
    assert _variant(4096, 4096, 4096, arch=None).shared_bytes < 77824       # mma.sync source: no rule
    big = _variant(4096, 4096, 4096, BLOCK_K=64, num_stages=3)              # 96 KiB of stages: 2 at most already
    assert "launched with" not in big.source and big.shared_bytes < 3 * 1024 * 100
    monkeypatch.setenv("TRANSPILER_WGMMA_TILES_PER_SM", "0")
    off = _variant(4096, 4096, 4096)
    assert "launched with" not in off.source and off.shared_bytes == 66560


def test_smaller_accumulators_allow_more_programs():
    # a 64 x 64 accumulator may share an SM with 7 others; its 33 KiB (stages and epilogue) already keep a
    # ninth out, so nothing is reserved
    var = _variant(4096, 4096, 4096, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_stages=4)
    assert 9 * (var.shared_bytes + 1024) > 228 * 1024 and "launched with" not in var.source
    # 128 x 256 (8 warps): one program per SM, reserved where its stages would let two in
    wide = _variant(4096, 4096, 4096, BLOCK_N=256, BLOCK_K=32, num_warps=8, num_stages=3)
    assert "at most 1 program(s) per SM" in wide.source and 2 * (wide.shared_bytes + 1024) > 228 * 1024
