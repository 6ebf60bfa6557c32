"""analysis/mask_runs.py (TRANSPILER_PREFIX_MASK=1): which masked accesses are tested on one lane of each run,
what the emitted test is, and that the source compiles without warnings or spills; on by default (TRANSPILER_PREFIX_MASK=0 turns it off)."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from example_specs import aligned, analysis_for, source_for
from prefix_mask_kernels import KINDS, masked_scale
from test_divisibility_keys import tile_copy_kernel
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import softmax as softmax_example  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")
AND_OF_8 = re.compile(r"if \((\w+)\[r\] && \1\[r \+ 1\] && .* && \1\[r \+ 7\]\)")


def _scale_args(dtype=np.float16, n=1000):
    x, y = aligned((n,), dtype), aligned((n,), dtype)
    return [x, y, 5, 997, 3]


def _prefix_ops(kernel, args, constexprs, num_warps=4):
    ir, analysis = analysis_for(kernel, args, constexprs, num_warps)
    return {op.name for op in analysis.mask_prefix}, analysis


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_prefix_decided_from_the_mask(kind, monkeypatch):
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "1")
    names, analysis = _prefix_ops(masked_scale, _scale_args(), dict(BLOCK=1024, KIND=kind))
    assert max(analysis.vector_width.values()) == 8           # 16-byte runs of halves, so the test is needed
    expected = {"load", "store"} if KINDS[kind][1] else set()
    assert names == expected, KINDS[kind][0]


def test_on_by_default_and_switched_off_by_zero(monkeypatch):
    monkeypatch.delenv("TRANSPILER_PREFIX_MASK", raising=False)
    names, _ = _prefix_ops(masked_scale, _scale_args(), dict(BLOCK=1024, KIND=0))
    assert names == {"load", "store"}
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "0")
    names, _ = _prefix_ops(masked_scale, _scale_args(), dict(BLOCK=1024, KIND=0))
    assert names == set()


@pytest.mark.parametrize("kind", [0, 4])
def test_emitted_test_of_a_run(kind, monkeypatch):
    """A prefix mask's run is tested on its last lane; any other mask's on every lane (the element path for a
    ragged run stays in both)."""
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "1")
    source = source_for(masked_scale, _scale_args(), dict(BLOCK=1024, KIND=kind))
    whole = re.findall(r"if \((\w+)\[r \+ 7\] /\* a prefix mask: the last lane decides \*/\) \{", source)
    if KINDS[kind][1]:
        assert len(whole) == 2 and not AND_OF_8.search(source), source
    else:
        assert not whole and len(AND_OF_8.findall(source)) == 2, source
    assert "element by element" in source


def test_two_dimensional_mask_with_a_uniform_row_term(monkeypatch):
    """`(rows < n_rows) & (cols < n_cols)`: the row term is constant along a run, the column term a prefix."""
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "1")
    x, y = aligned((8, 4096), np.float32), aligned((8, 4096), np.float32)
    args = [x, y, 8, 101, 4096, 4096]
    names, analysis = _prefix_ops(tile_copy_kernel, args, dict(BR=8, BC=128))
    assert names == {"load", "store"}
    assert "mask a prefix of each run of 4" in str(tile_copy_kernel.explain(*args, BR=8, BC=128))


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ragged_softmax_row_compiles_with_fewer_registers(arch, monkeypatch):
    """The ragged 16-bit softmax row of the bench (4093 columns, 4096-element rows, 8 warps): its 16 lane flags
    no longer live from the load to the store."""
    x, y = aligned((8, 4096), np.float16), aligned((8, 4096), np.float16)
    args = [y, x, 4096, 4096, 4093]
    registers = {}
    for switch in ("0", "1"):
        monkeypatch.setenv("TRANSPILER_PREFIX_MASK", switch)
        result = compile_offline(source_for(softmax_example.softmax_kernel, args, dict(BLOCK=4096), 16), arch)
        assert result.spill_bytes == 0 and not result.warnings, result.log
        registers[switch] = result.registers
    assert registers["1"] < registers["0"], registers


@needs_nvrtc
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_compiles_clean(kind, monkeypatch):
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "1")
    result = compile_offline(source_for(masked_scale, _scale_args(), dict(BLOCK=1024, KIND=kind)), "sm_90a")
    assert result.spill_bytes == 0 and not result.warnings, result.log


def test_pipelined_matmul_load_with_k_ragged_inside_runs(monkeypatch):
    """A's K mask (`offs_k < K - k * BLOCK_K`, K odd, rows 16-byte aligned) is a prefix of each run: the
    cp.async pipeline's copies test the run's last lane."""
    monkeypatch.setenv("TRANSPILER_PREFIX_MASK", "1")
    import matmul as example
    a, b, c = aligned((200, 1008), np.float16), aligned((1001, 136), np.float16), aligned((200, 136), np.float16)
    args = [a, b, c, 200, 136, 1001, 1008, 1, 136, 1, 136, 1]
    config = example.config_for(200, 136, 1001)
    warps, stages = config.pop("num_warps"), config.pop("num_stages")
    constexprs = dict(config, ACTIVATION="")
    ir, analysis = analysis_for(example.matmul_kernel, args, constexprs, warps, num_stages=stages)
    a_load = next(op for op in ir.walk() if op.name == "load")
    assert a_load in analysis.mask_prefix
    assert analysis.pipelines, "the loop is pipelined (the copies go through rules/pipeline.py)"
    source = source_for(example.matmul_kernel, args, constexprs, warps, num_stages=stages)
    assert re.search(r"if \(\w+\[\(\(r \+ 7\) & 7\)\] /\* a prefix mask: the last lane decides \*/\) \{", source)   # the run's last lane of K
