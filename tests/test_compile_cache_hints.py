"""Every cache modifier and eviction policy of tl.load / tl.store is spelled with its device helper and
compiles with NVRTC for sm_80 and sm_90a without warnings or spills; a load without an eviction hint inlines
none of the hinted-load helpers."""
import numpy as np
import pytest

from cache_hint_kernels import cases, hinted_copy
from transpiler.runtime.compiler import compile_offline, nvrtc_available

CASES = cases()
N = 1000     # not a multiple of the block: the ragged run takes the element path


def _source(constexprs, arch=None):
    x, out = np.random.default_rng(0).standard_normal(N).astype(np.float32), np.empty(N, np.float32)
    return hinted_copy.cuda_source(out, x, N, BLOCK=512, arch=arch, **constexprs)


def _expected_load_call(c):
    if c["EVICT"] in ("evict_first", "evict_last"):
        return f"tp::load_evict<4, tp::EVICT_{c['EVICT'][6:].upper()}>("
    if c["VOLATILE"]:
        return "tp::load_volatile<4>("
    return f"tp::load_cached<4, tp::CACHE_{c['LOAD_CACHE'][1:].upper()}>(" if c["LOAD_CACHE"] else "tp::load<4>("


@pytest.mark.parametrize("name,constexprs", CASES, ids=[c[0] for c in CASES])
def test_each_hint_is_spelled_with_its_helper(name, constexprs):
    src = _source(constexprs)
    assert _expected_load_call(constexprs) in src
    store = constexprs["STORE_CACHE"]
    assert (f"tp::store_cached<4, tp::CACHE_{store[1:].upper()}>(" if store else "tp::store<4>(") in src
    hinted = constexprs["EVICT"] in ("evict_first", "evict_last")     # the hint replaces the cache modifier
    cached = bool(constexprs["LOAD_CACHE"] and not hinted or store)
    assert ("enum Cache" in src) == cached
    assert ("#define TP_LD_HINT" in src) == hinted and ("enum Evict" in src) == hinted


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,constexprs", CASES, ids=[c[0] for c in CASES])
def test_each_hint_compiles_without_warnings(name, constexprs, arch):
    result = compile_offline(_source(constexprs, arch if arch == "sm_90a" else None), arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log
