"""Every feature kernel compiles with NVRTC for sm_80 and sm_90a, without warnings or register spills."""
import numpy as np
import pytest

from feature_kernels import all_cases
from transpiler.runtime.compiler import compile_offline, nvrtc_available

pytestmark = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

CASES = all_cases(np.random.default_rng(0))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_feature_kernel_compiles_without_spills(name, case, arch):
    src = case["kernel"].cuda_source(*case["args"], num_warps=case.get("num_warps", 4), **case["constexprs"])
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log
    assert len(result.cubin) > 0


def test_loop_bounds_given_by_keyword_count_like_positional_ones():
    # tl.static_range(3, 100, step=7) unrolls 14 iterations whose sum (679) is folded into the store; without the
    # keyword it would be range(3, 100) (4947). tl.range(arg1=0, arg2=N, step=2 * BLOCK) steps by 128.
    from feature_kernels import case_range_keywords
    case = case_range_keywords(np.random.default_rng(1), block=64, lo=3, hi=100, step=7)
    src = case["kernel"].cuda_source(*case["args"], **case["constexprs"])
    assert "= 679.0f;" in src and "4947" not in src
    assert "start < N; start += 128)" in src
