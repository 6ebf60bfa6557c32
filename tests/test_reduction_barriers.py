"""Barriers of cross-warp reductions in a loop (analysis/shared_memory.py `_unguarded_reductions`): a loop body
with two or more of them outside any `if` writes each buffer without a barrier before it (the other one's
barrier orders the reads of the previous iteration); one alone, or one inside an `if`, keeps it. Results on a
GPU: the unpacked row-loop cases of tests/test_gpu_membound.py (softmax and norm rows folded at 4 warps)."""
import re

import numpy as np
import pytest

import membound_kernels as K
import transpiler
import transpiler.language as tl
from example_specs import source_for


@pytest.fixture(autouse=True)
def _programs_not_packed(monkeypatch):
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")     # programs of several warps: reductions cross warps
    monkeypatch.setenv("TRANSPILER_PROGRAM_WARPS", "0")     # on the launch's warps: the 16-byte rows stay folded


@transpiler.jit
def sum_then_conditional_max(X, OUT, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    s = tl.sum(x, axis=0)
    if row % 2 == 0:
        s += tl.max(x, axis=0)
    tl.store(OUT + row, s)


def _loop_body(src):
    return src[src.index("for (int row = row_start"):]


def _barriers_around_writes(body):
    """For each cross-warp write (`if ((lane & 31) == 0) ...`): whether a barrier comes right before it."""
    return [bool(m.group(1)) for m in re.finditer(r"(__syncthreads\(\);\s*)?if \(\(lane & 31\) == 0\)", body)]


def test_a_softmax_row_loop_has_one_barrier_per_reduction():
    case = K.softmax_case(np.random.default_rng(0), 64, 4000, 4096, np.float16, num_warps=16)
    body = _loop_body(source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"]))
    assert _barriers_around_writes(body) == [False, False]
    assert body.count("__syncthreads();") == 2


def test_a_norm_row_loop_has_one_barrier_per_reduction():
    case = K.norm_case(np.random.default_rng(0), 64, 2048, 2048, np.float16, num_warps=8)
    body = _loop_body(source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"]))
    assert _barriers_around_writes(body) == [False, False]


def test_a_single_reduction_in_the_loop_keeps_its_barrier_before_the_write():
    case = K.argmax_case(np.random.default_rng(0), 64, 1024, 1024, np.float16)
    body = _loop_body(source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"]))
    assert _barriers_around_writes(body) == [True]


def test_a_reduction_under_an_if_is_no_barrier_the_other_can_count_on():
    args = [np.zeros((8, 500), np.float32), np.zeros(8, np.float32), 500]
    body = _loop_body(source_for(sum_then_conditional_max, args, dict(BLOCK=512)))
    assert _barriers_around_writes(body) == [True, True]


def test_switch_keeps_every_barrier(monkeypatch):
    monkeypatch.setenv("TRANSPILER_LOOP_REDUCTION_BARRIER", "1")
    case = K.softmax_case(np.random.default_rng(0), 64, 4000, 4096, np.float16, num_warps=16)
    body = _loop_body(source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"]))
    assert _barriers_around_writes(body) == [True, True]
