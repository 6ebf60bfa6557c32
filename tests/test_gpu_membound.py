"""GPU: the memory-bound mechanisms against NumPy float64 on fresh random inputs, outputs poisoned: kernels
folded into row loops (ragged rows, odd and 4k strides, row counts over many waves, a 2-D grid, early returns,
a load after the program's own store) and the same with the fold off; divisibility-keyed 2-D copies."""
import numpy as np
import pytest

import membound_kernels as K
from test_divisibility_keys import tile_copy_kernel

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in K.all_cases(np.random.default_rng(0))]


_fresh, _run = K.fresh, K.run_on_gpu


@pytest.mark.parametrize("name", NAMES)
def test_row_loop_kernel_matches_numpy(name):
    case = dict(K.all_cases(np.random.default_rng()))[name]
    K.check(case, _run(case))


@pytest.mark.parametrize("name", NAMES)
def test_row_loop_kernel_matches_numpy_with_programs_unpacked(name, monkeypatch):
    """Packing (analysis/program_packing.py) takes the short rows by default: here the row loop of programs of
    num_warps warps runs them."""
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")
    case = _fresh(dict(K.all_cases(np.random.default_rng()))[name])
    K.check(case, _run(case))


@pytest.mark.parametrize("name", ["softmax_fp32_ragged_odd_stride", "grid_facts_2d_grid",
                                  "early_return_every_third_row"])
def test_same_results_with_the_fold_off(name, monkeypatch):
    monkeypatch.setenv("TRANSPILER_ROW_LOOP", "0")
    case = _fresh(dict(K.all_cases(np.random.default_rng()))[name])
    K.check(case, _run(case))


@pytest.mark.parametrize("name", ["softmax_fp32_ragged_odd_stride", "softmax_fp16_long_rows", "norm_fp32_ragged",
                                  "softmax_fp32_stride_4k"])
def test_wider_rows_folded_under_a_larger_budget(name, monkeypatch):
    """Rows of 32-64 bytes a thread are folded only when TRANSPILER_ROW_LOOP_BYTES allows it (slower, still right)."""
    monkeypatch.setenv("TRANSPILER_ROW_LOOP_BYTES", "64")
    case = _fresh(dict(K.all_cases(np.random.default_rng()))[name])
    K.check(case, _run(case))
    assert "row < n_rows" in case["kernel"].cuda_source(*case["args"], num_warps=case["num_warps"],
                                                         **case["constexprs"])


FEWER_WARPS = [n for n in NAMES if n.endswith("_on_fewer_warps")]


@pytest.mark.parametrize("name", FEWER_WARPS)
@pytest.mark.parametrize("target", ["32", "0"])
def test_programs_on_fewer_warps_than_launched(name, target, monkeypatch):
    """By default these run on half the launch's warps (analysis/program_warps.py); with the switch off, on the
    launch's, folded into the row loop: both match NumPy, and the variant launched has the warps decided."""
    monkeypatch.setenv("TRANSPILER_PROGRAM_WARPS", target)
    case = _fresh(dict(K.all_cases(np.random.default_rng()))[name])
    K.check(case, _run(case))
    (variant,) = case["kernel"].variants.values()
    assert variant.num_warps == (case["num_warps"] // 2 if target == "32" else case["num_warps"])
    assert f"__launch_bounds__({32 * variant.num_warps})" in variant.source


def test_row_loop_launches_one_wave(monkeypatch):
    from transpiler.runtime import launcher
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")
    case = _fresh(dict(K.all_cases(np.random.default_rng()))["argmax_fp32_many_rows"])
    K.check(case, _run(case))
    name, gx, gy, gz = launcher.recent_launches[-1]
    assert name == "row_argmax" and 132 <= gx < 33333


@pytest.mark.parametrize("dtype, stride, offset", [(np.float32, 4092, 0), (np.float32, 4094, 0),
                                                   (np.float16, 4092, 0), (np.float32, 4096, 2),
                                                   (np.float16, 4093, 1)])
def test_divisibility_keyed_tile_copy_matches_numpy(dtype, stride, offset):
    import cupy
    rng = np.random.default_rng()
    n_rows, n_cols = 37, 100           # ragged inside the 128-column tile
    raw = cupy.asarray(rng.standard_normal(n_rows * stride + offset).astype(dtype))
    x = raw[offset:offset + n_rows * stride]
    y = cupy.full(n_rows * stride, np.nan, dtype)
    tile_copy_kernel[(-(-n_rows // 8),)](x, y, n_rows, n_cols, stride, stride, BR=8, BC=128)
    got, src = cupy.asnumpy(y).reshape(n_rows, stride), cupy.asnumpy(x).reshape(n_rows, stride)
    np.testing.assert_array_equal(got[:, :n_cols], src[:, :n_cols])
    assert np.isnan(got[:, n_cols:]).all()
