"""Streaming stores (analysis/streaming_stores.py): under TRANSPILER_STREAM_STORES=1, a row kernel's block
stores to pointer arguments it never reads use the evict-first cache operator; nothing changes by default, nor
for a store the kernel reads back, a store with the user's own cache modifier, or a kernel without a reduction."""
import numpy as np
import pytest

import membound_kernels as K
from example_specs import analysis_for, source_for


def _case(name):
    rng = np.random.default_rng(0)
    return {"softmax": lambda: K.softmax_case(rng, 8, 100, 128),      # 16-byte rows: vector stores
            "store_then_load": lambda: K.store_then_load_case(rng, 5, 33),
            "norm": lambda: K.norm_case(rng, 5, 77, 80),
            "plain_copy": lambda: dict(kernel=K.plain_copy, args=[np.zeros(4096, np.float32),
                                                                 np.zeros(4096, np.float32), 4096],
                                       constexprs=dict(BLOCK=1024), num_warps=4)}[name]()


def _stores(case):
    _, analysis = analysis_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    return analysis.decisions.for_pass("streaming_stores")


def test_off_by_default():
    case = _case("softmax")
    assert _stores(case) == [] and "CACHE_CS" not in source_for(case["kernel"], case["args"], case["constexprs"],
                                                                 case["num_warps"])


@pytest.mark.parametrize("name, chosen", [("softmax", 1), ("norm", 1), ("store_then_load", 0), ("plain_copy", 0)])
def test_write_only_outputs_of_row_kernels_are_stored_evict_first(name, chosen, monkeypatch):
    monkeypatch.setenv("TRANSPILER_STREAM_STORES", "1")
    case = _case(name)
    decisions = _stores(case)
    assert len(decisions) == chosen
    src = source_for(case["kernel"], case["args"], case["constexprs"], case["num_warps"])
    assert ("tp::CACHE_CS" in src) == bool(chosen)
    for d in decisions:
        assert "never read by the kernel" in d.why
