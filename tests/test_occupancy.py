"""Register feedback for occupancy (runtime/occupancy.py), and elementwise values computed once per run of equal
elements: the arithmetic of programs per SM, the decision to compile again, the refusal to keep a cubin that
spills, and both on real kernels through NVRTC on the CPU."""
import sys
from pathlib import Path

import numpy as np
import pytest

from transpiler.runtime import occupancy as occ
from transpiler.runtime.compiler import compile_offline, compile_tuned, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import layernorm  # noqa: E402
import softmax  # noqa: E402

H100 = occ.limits_for("sm_90a")
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (cupy + nvidia-cuda-nvrtc) not installed")


@pytest.mark.parametrize("registers, threads, shared, blocks", [
    (40, 512, 128, 3),      # 1280 registers per warp: 51 warps fit, three programs of 16
    (32, 512, 128, 4),      # the thread limit (2048) binds
    (33, 512, 0, 3),        # registers go per warp in units of 256: 33 costs as much as 40
    (128, 256, 64, 2),
    (255, 1024, 0, 0),      # a program that cannot fit at all
    (16, 128, 100 * 1024, 2),   # shared memory binds (228 KiB per SM, 1 KiB reserved per program)
])
def test_programs_per_sm(registers, threads, shared, blocks):
    assert occ.blocks_per_sm(registers, threads, shared, H100) == blocks


def test_register_budget_is_the_largest_count_that_keeps_the_step():
    for blocks, threads in ((4, 512), (3, 512), (2, 256), (5, 256), (16, 128)):
        budget = occ.register_budget(blocks, threads, H100)
        assert budget % 8 == 0
        assert occ.blocks_per_sm(budget, threads, 0, H100) >= blocks
        assert occ.blocks_per_sm(budget + 8, threads, 0, H100) < blocks or budget == 255


@pytest.mark.parametrize("registers, threads, shared, arch, want", [
    (40, 512, 128, "sm_90a", 4),    # the softmax case: 32 registers are 80% of 40
    (59, 512, 128, "sm_90a", 3),    # three programs allow 40, 68% of 59: worth a try (it spills: dropped)
    (43, 1024, 128, "sm_90a", 2),   # one program of 32 warps -> two at 32 registers
    (120, 512, 128, "sm_90a", None),  # two programs would allow 64: too far below 120
    (32, 512, 128, "sm_90a", None),  # already at the thread limit
    (128, 256, 64, "sm_90a", 3),    # three programs allow 80 of 128 (62%): tried (layernorm 12288 spills there)
    (63, 256, 64, "sm_90a", 5),     # five programs allow 48, 76% of 63: worth a try
    (48, 128, 0, "sm_90a", None),   # ten programs of 128 threads already overlap: left as ptxas chose
    (40, 512, 60 * 1024, "sm_90a", None),   # shared memory, not registers, limits occupancy
    (40, 512, 128, "sm_75", None),  # an architecture without a table entry: left alone
])
def test_next_step(registers, threads, shared, arch, want):
    assert occ.next_step(occ.CubinResources(registers, 0), threads, shared, arch) == want


def test_a_spilling_first_compile_is_not_tightened():
    assert occ.next_step(occ.CubinResources(40, 8), 512, 0, "sm_90a") is None


ELIGIBLE = "extern \"C\" __global__ void __launch_bounds__(512, TP_MIN_BLOCKS_PER_SM) k("


def _fake_compiler(monkeypatch, resources):
    """A compile stand-in whose i-th cubin has resources[i]; records the options of each compile."""
    calls = []
    by_cubin = {}

    def compile_with(options):
        cubin = f"cubin{len(calls) + 1}".encode()
        by_cubin[cubin] = resources[len(calls)]
        calls.append(options)
        return cubin
    monkeypatch.setattr(occ, "cubin_resources", lambda cubin: by_cubin[cubin])
    return compile_with, calls


def test_the_bounded_compile_is_kept_when_it_does_not_spill(monkeypatch):
    fake, calls = _fake_compiler(monkeypatch, [occ.CubinResources(40, 0), occ.CubinResources(32, 0)])
    cubin, result = occ.compile_for_occupancy(fake, ELIGIBLE, 128, "sm_90a")
    assert calls == [(), ("-DTP_MIN_BLOCKS_PER_SM=4",)]
    assert cubin == b"cubin2"
    assert result == occ.Occupancy(registers=32, min_blocks=4, blocks_per_sm=4)


def test_the_bounded_compile_is_dropped_when_it_spills(monkeypatch):
    fake, calls = _fake_compiler(monkeypatch, [occ.CubinResources(40, 0), occ.CubinResources(32, 16)])
    cubin, result = occ.compile_for_occupancy(fake, ELIGIBLE, 128, "sm_90a")
    assert cubin == b"cubin1"
    assert result == occ.Occupancy(registers=40, min_blocks=1, blocks_per_sm=3, tried=4)
    assert "was tried and spilled" in result.describe()


def test_kernels_without_the_macro_compile_once(monkeypatch):
    fake, calls = _fake_compiler(monkeypatch, [occ.CubinResources(40, 0)])
    cubin, result = occ.compile_for_occupancy(fake, "__launch_bounds__(512) k(", 0, "sm_90a")
    assert (cubin, result, len(calls)) == (b"cubin1", None, 1)


def _softmax(block, dtype=np.float16):
    x = np.zeros((4, block), dtype)
    return softmax.softmax_kernel.compiled_variant(x, x, block, block, block, BLOCK=block,
                                                   num_warps=softmax.num_warps_for(block))


def _layernorm(n):
    x, w, m = np.zeros((4, n), np.float16), np.zeros(n, np.float16), np.zeros(4, np.float32)
    block = 1 << (n - 1).bit_length()
    return layernorm.layernorm_kernel.compiled_variant(x, x, w, w, m, m, n, n, n, 1e-5, BLOCK=block,
                                                       num_warps=min(max(block // 256, 1), 8))


@needs_nvrtc
@pytest.mark.parametrize("min_blocks, spills", [(None, False), (3, True), (4, True)])
def test_registers_and_spills_read_from_the_cubin_agree_with_ptxas(min_blocks, spills):
    # fp16 softmax over 16384 columns: 59 registers unbounded; 40 under 3 programs per SM spills a little.
    var = _softmax(16384)
    options = (f"-DTP_MIN_BLOCKS_PER_SM={min_blocks}",) if min_blocks else ()
    compiled = compile_offline(var.source, "sm_90a", extra_options=options)
    read = occ.cubin_resources(compiled.cubin)
    assert read.registers == compiled.registers
    assert read.spills == (compiled.spill_bytes > 0) == spills


def test_a_cubin_without_records_reads_as_unknown():
    assert occ.cubin_resources(b"not an ELF file") is None


@needs_nvrtc
def test_fp16_softmax_over_8192_columns_gets_four_programs_per_sm_without_spills(monkeypatch):
    var = _softmax(8192)
    plain = compile_offline(var.source, "sm_90a")
    assert plain.registers > 32      # ptxas' own choice: three programs per SM
    _, result = compile_tuned(var.source, var.name, "sm_90a", var.shared_bytes)
    assert (result.min_blocks, result.blocks_per_sm) == (4, 4)
    bounded = compile_offline(var.source, "sm_90a", extra_options=("-DTP_MIN_BLOCKS_PER_SM=4",))
    assert bounded.registers <= 32 and bounded.spill_bytes == 0


@needs_nvrtc
def test_one_program_of_32_warps_becomes_two(monkeypatch):
    x = np.zeros((4, 16384), np.float16)
    var = softmax.softmax_kernel.compiled_variant(x, x, 16384, 16384, 16384, BLOCK=16384, num_warps=32)
    _, result = compile_tuned(var.source, var.name, "sm_90a", var.shared_bytes)
    assert (result.min_blocks, result.blocks_per_sm) == (2, 2) and result.registers <= 32


@needs_nvrtc
def test_without_the_define_the_bound_is_the_plain_one():
    # An explicit minimum of 1 lets ptxas take up to 255 registers (168 for this layernorm, one program per
    # SM); without the define the kernel must compile exactly as under __launch_bounds__(256).
    var = _layernorm(12288)
    assert compile_offline(var.source, "sm_90a").registers == compile_offline(
        var.source.replace("#ifdef TP_MIN_BLOCKS_PER_SM", "#if 0"), "sm_90a").registers <= 128
    _, result = compile_tuned(var.source, var.name, "sm_90a", var.shared_bytes)
    assert (result.min_blocks, result.blocks_per_sm, result.tried) == (1, 2, 3)


def test_tensor_core_kernels_keep_the_plain_bound():
    import transpiler
    import transpiler.language as tl
    import matmul
    stand_in = transpiler.StandIn(tl.float16)
    source = matmul.matmul_kernel.cuda_source(stand_in, stand_in, stand_in, 4096, 4096, 4096, 4096, 1, 4096, 1,
                                              4096, 1, ACTIVATION="", **matmul.config_for(4096, 4096, 4096))
    assert "mma.sync" in source
    assert "TP_MIN_BLOCKS_PER_SM" not in source and "__launch_bounds__(" in source


def test_a_mask_constant_over_each_vector_is_computed_once_per_run():
    # N is a multiple of 16 and each thread holds runs of 8 consecutive columns: `cols < N` is the same over
    # a run, so the compare reads the run's first register and the C compiler folds the other seven.
    source = _layernorm(4096).source
    assert "valid[r] = cols[(r & ~7)] < N;" in source


def test_a_mask_that_may_change_inside_a_run_is_computed_per_register():
    x = np.zeros((4, 781), np.float32)
    source = softmax.softmax_kernel.cuda_source(x, x, 781, 781, 781, BLOCK=1024, num_warps=4)
    assert "valid[r] = cols[r] < n_cols;" in source and "cols[run]" not in source

