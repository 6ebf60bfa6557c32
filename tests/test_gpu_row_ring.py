"""GPU: row loops whose rows ahead live in a shared-memory ring (analysis/row_ring.py) against NumPy float64 on
fresh random inputs, outputs poisoned: 1-3 rows ahead, ragged rows (a ragged run read element by element), fewer
rows than programs (prologue rows past the grid), one row, many rows over several passes of each slot, a 16-bit
row with 2-byte runs (kept in registers), and the same kernels with the ring off, with other ring sizes, and
launched as one wave or as every program of a long grid (TRANSPILER_ROW_RING_WAVES). TRANSPILER_ROW_RING=2 puts
every eligible row in the ring, 1 only rows over 16 bytes a thread (the default, 0, none)."""
import numpy as np
import pytest

import membound_kernels as K
from gpu_sizes import rows

pytestmark = pytest.mark.gpu


def _cases(rng):
    """(name, case, whether the ring takes it); fewer rows under TRANSPILER_TEST_SIZES=small (`gpu_sizes.rows`)."""
    return [
        ("softmax_fp16_4096_w16_three_ahead", K.softmax_case(rng, rows(3001), 4000, 4096, np.float16, num_warps=16),
         True),
        ("softmax_fp32_ragged_4093_w16", K.softmax_case(rng, rows(2049), 4093, 4096, num_warps=16), True),
        ("softmax_fp32_1024_w4_two_passes", K.softmax_case(rng, rows(4103), 1000, 1024, num_warps=4), True),
        ("softmax_fp16_fewer_rows_than_programs", K.softmax_case(rng, 37, 4096, 4096, np.float16, num_warps=16),
         True),
        ("softmax_fp16_one_row", K.softmax_case(rng, 1, 3000, 4096, np.float16, num_warps=16), True),
        ("softmax_fp16_8192_w16", K.softmax_case(rng, 777, 8190, 8192, np.float16, num_warps=16), True),
        # a weight row read by every program: loop-invariant once folded, so the ring leaves it (registers)
        ("norm_fp16_2048_w8", K.norm_case(rng, rows(5003), 2048, 2048, np.float16, num_warps=8), False),
        ("norm_fp32_ragged", K.norm_case(rng, rows(4099), 777, 784), False),
        ("argmax_fp16_1024_w4", K.argmax_case(rng, rows(20011), 1024, 1024, np.float16), True),
        ("softmax_fp16_odd_stride_two_byte_runs", K.softmax_case(rng, rows(2001), 1000, 1003, np.float16), False),
    ]


NAMES = [name for name, _, _ in _cases(np.random.default_rng(0))]


def _source(case):
    return case["kernel"].cuda_source(*case["args"], num_warps=case["num_warps"], **case["constexprs"])


@pytest.fixture(autouse=True)
def _unpacked(monkeypatch):
    monkeypatch.setenv("TRANSPILER_PACK_PROGRAMS", "0")


def _case(name):
    return next((K.fresh(c), r) for n, c, r in _cases(np.random.default_rng()) if n == name)


@pytest.mark.parametrize("name", NAMES)
def test_row_ring_kernel_matches_numpy(name, monkeypatch):
    """Every eligible row in the ring, one wave of programs (each slot reused over many rows)."""
    monkeypatch.setenv("TRANSPILER_ROW_RING", "2")
    monkeypatch.setenv("TRANSPILER_ROW_RING_WAVES", "0")
    case, ring = _case(name)
    K.check(case, K.run_on_gpu(case))
    assert ("row_ring_copy" in _source(case)) == ring


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("env", [{}, {"TRANSPILER_ROW_RING": "1"},
                                 {"TRANSPILER_ROW_RING": "2", "TRANSPILER_ROW_RING_BYTES": "196608"},
                                 {"TRANSPILER_ROW_RING": "2", "TRANSPILER_ROW_RING_BYTES": "65536"},
                                 {"TRANSPILER_ROW_RING": "2"}], ids=["default", "over_16_bytes", "192k", "64k", "all_rows"])
def test_same_results_with_other_rings_or_none(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    case, _ = _case(name)
    K.check(case, K.run_on_gpu(case))


def test_a_long_grid_launches_every_program_and_a_short_one_one_wave(monkeypatch):
    """Rows over 16 bytes a thread go to the ring (TRANSPILER_ROW_RING=1), one wave only for a grid of at most 2
    waves."""
    monkeypatch.setenv("TRANSPILER_ROW_RING", "1")
    from transpiler.runtime import launcher
    rng = np.random.default_rng()
    for rows, one_wave in ((40000, False), (3000, True)):
        case = K.fresh(K.softmax_case(rng, rows, 1000, 1024, num_warps=4))
        K.check(case, K.run_on_gpu(case))
        assert "row_ring_copy" in _source(case)
        name, gx, _, _ = launcher.recent_launches[-1]
        assert name == K.row_softmax.__name__ and (gx < rows if one_wave else gx == rows), (rows, gx)


def test_the_whole_membound_set_with_the_ring(monkeypatch):
    """Every case of tests/test_gpu_membound.py with every eligible row in the ring, unpacked."""
    monkeypatch.setenv("TRANSPILER_ROW_RING", "2")
    for name, case in K.all_cases(np.random.default_rng()):
        case = K.fresh(case)
        K.check(case, K.run_on_gpu(case))
