"""CPU tests pinning two analysis decisions: which loads of neighbouring fields are combined into one access,
and which loops are software-pipelined (and why not, when they are not)."""
from __future__ import annotations

import numpy as np

import transpiler
import transpiler.language as tl


@transpiler.jit
def fields_kernel(P, OUT, n, STRIDE: tl.constexpr, ORDER: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    if ORDER == "forward":
        a = tl.load(P + STRIDE * i + 0, mask=m, other=0.0)
        b = tl.load(P + STRIDE * i + 1, mask=m, other=0.0)
    else:
        b = tl.load(P + STRIDE * i + 1, mask=m, other=0.0)
        a = tl.load(P + STRIDE * i + 0, mask=m, other=0.0)
    c = tl.load(P + STRIDE * i + 2, mask=m, other=0.0)
    d = tl.load(P + STRIDE * i + 3, mask=m, other=0.0)
    tl.store(OUT + i, a * b + c - d, mask=m)


def _analysis(kernel, *args, **kw):
    return kernel.analysis(*args, **kw)[1]


def test_four_neighbouring_fields_become_one_16_byte_load():
    p, out = np.ones(4096, np.float32), np.ones(1024, np.float32)
    analysis = _analysis(fields_kernel, p, out, 1000, STRIDE=4, ORDER="forward", BLOCK=256)
    groups = set(analysis.combined_loads.values())
    assert len(groups) == 1 and next(iter(groups)).fields == 4
    assert "16-byte access per element" in analysis.decisions.report()
    source = fields_kernel.cuda_source(p, out, 1000, STRIDE=4, ORDER="forward", BLOCK=256)
    assert "tp::load<4" in source


def test_fields_are_not_combined_when_the_record_is_not_aligned_or_field_0_is_not_first():
    p, out = np.ones(4096, np.float32), np.ones(1024, np.float32)
    # a stride of 5 fields: records start at 20-byte steps, not 16-byte aligned
    assert not _analysis(fields_kernel, p, out, 1000, STRIDE=5, ORDER="forward", BLOCK=256).combined_loads
    # field 1 is loaded before field 0: the combined access would need field 0's pointer first
    assert not _analysis(fields_kernel, p, out, 1000, STRIDE=4, ORDER="backward", BLOCK=256).combined_loads


@transpiler.jit
def gathered_dot_kernel(A, B, IDX, C, K, GATHER: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        rows = tl.load(IDX + r) if GATHER else r
        a = tl.load(A + rows[:, None] * K + (k + r)[None, :])
        b = tl.load(B + (k + r)[:, None] * BLOCK + r[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + r[:, None] * BLOCK + r[None, :], acc)


def _dot_args():
    a = np.ones((32, 256), np.float16)
    b = np.ones((256, 32), np.float16)
    return a, b, np.zeros(32, np.int32), np.ones((32, 32), np.float32), 256


def test_loads_feeding_a_dot_are_pipelined_with_the_asked_depth():
    analysis = _analysis(gathered_dot_kernel, *_dot_args(), GATHER=False, BLOCK=32, num_stages=4)
    (plan,) = analysis.pipelines.values()
    assert plan.stages == 4 and len(plan.loads) == 2
    assert "4-stage cp.async pipeline" in analysis.decisions.report()


def test_a_gathered_address_or_one_stage_is_not_pipelined():
    gathered = _analysis(gathered_dot_kernel, *_dot_args(), GATHER=True, BLOCK=32)
    assert not gathered.pipelines
    assert "depends on a 'load'" in gathered.decisions.report()
    one_stage = _analysis(gathered_dot_kernel, *_dot_args(), GATHER=False, BLOCK=32, num_stages=1)
    assert not one_stage.pipelines and "num_stages=1" in one_stage.decisions.report()


def test_the_unpipelined_gather_dot_compiles_without_spills():
    import pytest
    from transpiler.runtime.compiler import compile_offline, nvrtc_available
    if not nvrtc_available():
        pytest.skip("NVRTC not installed")
    source = gathered_dot_kernel.cuda_source(*_dot_args(), GATHER=True, BLOCK=32)
    assert "registers to shared memory" in source and "cp_async<" not in source.split("extern \"C\"")[1]
    result = compile_offline(source, "sm_90a")
    assert "mma.sync" in result.ptx and result.spill_bytes == 0 and not result.warnings
