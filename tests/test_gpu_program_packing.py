"""GPU: packed programs (analysis/program_packing.py: one warp per program, num_warps programs per block) against
NumPy float64 on fresh random inputs, outputs poisoned: ragged rows, odd and 4k strides, row counts that are not
a multiple of the programs per block (1, 1003, 4097, 50001), 8 warps, a 2-D grid, programs that return early,
a scan; the same kernels unpacked give the same results; Triton's build of the same source as a second
reference; the grid launched is ceil(grid x / programs per block)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import membound_kernels as K
import packing_kernels as P

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in P.packed_cases(np.random.default_rng(0))]


def _case(name, rng=None):
    return dict(P.packed_cases(rng or np.random.default_rng()))[name]


_fresh, _run = K.fresh, K.run_on_gpu


def _source(case):
    return case["kernel"].cuda_source(*case["args"], num_warps=case["num_warps"], **case["constexprs"])


@pytest.mark.parametrize("name", NAMES)
def test_packed_kernel_matches_numpy(name):
    case = _fresh(_case(name))
    assert "program_slot" in _source(case), "the case is meant to be packed"
    P.check(case, _run(case))


@pytest.mark.parametrize("name", ["softmax_fp32_ragged_odd_stride", "layernorm_fp16_ragged", "blocks_of_rows_2d_grid",
                                  "rows_until_some"])
def test_same_results_unpacked(name, monkeypatch):
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")
    case = _fresh(_case(name))
    assert "program_slot" not in _source(case)
    P.check(case, _run(case))


def test_packed_grid_is_one_block_per_programs_per_block():
    from transpiler.runtime import launcher
    case = _fresh(_case("softmax_fp32_ragged_odd_stride"))      # 4097 rows (1025 small), 4 programs a block
    P.check(case, _run(case))
    name, gx, gy, gz = launcher.recent_launches[-1]
    assert (name, gx, gy) == ("short_softmax", -(-case["grid"][0] // 4), 1) and case["grid"][0] % 4 == 1


def _run_triton(case):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    root = Path(__file__).resolve().parents[1]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from bench.twins import load
    twin = load(Path(__file__).with_name("packing_kernels.py"), "triton")
    dev = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in case["args"]]
    getattr(twin, case["kernel"].__name__)[case["grid"]](*dev, num_warps=case["num_warps"], **case["constexprs"])
    torch.cuda.synchronize()
    return [a.cpu().numpy() if hasattr(a, "cpu") else a for a in dev]


@pytest.mark.parametrize("name", ["softmax_fp16_many_rows", "softmax_fp32_stride_4k", "layernorm_fp16_ragged",
                                  "cumsum_fp32_ragged", "blocks_of_rows_2d_grid"])
def test_packed_kernel_agrees_with_triton(name):
    case = _fresh(_case(name))
    theirs = _run_triton(case)
    P.check(case, theirs)            # Triton's own result is right, so the comparison below means something
    ours = _run(case)
    for index, (_, rtol, atol) in case["expect"](case["args"]).items():
        np.testing.assert_allclose(np.asarray(ours[index], np.float64), np.asarray(theirs[index], np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=f"output {index}")
