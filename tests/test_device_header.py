"""Only the device helpers a kernel uses are inlined (emit_cuda/device_header.py)."""
import re

from example_specs import BY_NAME, source_of
from transpiler.emit_cuda.device_header import used_helpers
from transpiler.emit_cuda.emitter import templates_dir


def _header():
    return (templates_dir() / "device.cuh").read_text()


def _defined(source):
    """Names the inlined header defines as functions (`__forceinline__ ... name(`)."""
    return set(re.findall(r"__forceinline__ [\w<>:, ]*?\b(\w+)\(", source.split("end of device helpers")[0]))


PRAGMA = "#pragma once   // (an #include for nvcc; inlined into the .cu for NVRTC without this line)\n"


def test_a_kernel_naming_every_helper_gets_the_whole_header_back():
    header = _header()
    everything = " ".join(re.findall(r"[A-Za-z_]\w*", header))
    # the whole header, but its `#pragma once` (for nvcc users' #include; the inlined copy is the main file)
    assert used_helpers(header, everything) == header.replace(PRAGMA, "")
    assert PRAGMA in header


def test_helpers_come_with_what_they_use_and_nothing_else():
    kept = used_helpers(_header(), "tp::min_propagate_nan(a, b)")
    assert "min_propagate_nan" in kept and "T nan()" in kept          # it calls nan<T>()
    assert "max_propagate_nan" not in kept and "combine_add" not in kept and "shfl_xor" not in kept
    assert kept.count("namespace tp {") == 1 and "#include <cuda_fp16.h>" in kept


def test_macro_made_helpers_are_kept_when_a_kept_helper_calls_them():
    kept = used_helpers(_header(), "tp::load_evict<4, tp::EVICT_FIRST>(dst, src);")
    assert "#define TP_LD_HINT" in kept and "TP_LD_HINT(evict_first" in kept and "#undef TP_LD_HINT" in kept
    assert "enum Evict" in kept and "struct raw<16>" in kept
    assert "store_raw" not in kept and "load_raw" not in kept


def test_a_load_without_an_eviction_hint_leaves_the_hinted_loads_out():
    kept = used_helpers(_header(), "tp::load<4>(dst, src);")
    assert "struct raw<16>" in kept
    assert "TP_LD_HINT" not in kept and "enum Evict" not in kept and "load_evict" not in kept
    assert "load_raw" not in kept and "enum Cache" not in kept        # nor the cache modifiers' helpers
    kept = used_helpers(_header(), "tp::load_cached<4, tp::CACHE_CG>(dst, src);")
    assert "load_raw" in kept and "enum Cache" in kept and "TP_LD_HINT" not in kept


def test_examples_inline_only_what_they_call():
    vector_add = source_of(BY_NAME["vector_add_fp32"])
    softmax = source_of(BY_NAME["softmax_fp32_4000"])
    assert "combine_max" not in _defined(vector_add) and "shfl_xor" not in _defined(vector_add)
    assert {"combine_max", "combine_add", "shfl_xor"} <= _defined(softmax)
    assert len(vector_add) < len(softmax) and "T max_propagate_nan" not in softmax
