"""GPU: fused multiply-adds (analysis/fp_contraction.py) and tl.exp2 (ex2.approx.ftz.f32) give what float64
computes, rounded once (fma) or within ex2's 2 ulp, flushing results under 2**-126 to 0; and the same bits as
Triton 3.6 on the same source where it is installed. Fresh random inputs, sizes not multiples of the block,
outputs poisoned before each launch."""
from pathlib import Path

import numpy as np
import pytest

import contraction_kernels as kernels

pytestmark = pytest.mark.gpu
KERNELS = Path(kernels.__file__)


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _fused(a, b, c):
    """fp32 fma(a, b, c): the product is exact in float64, the sum rounded to fp32 from the exact value."""
    exact = a.astype(np.float64) * b.astype(np.float64)
    s = exact + c.astype(np.float64)
    # float64 rounding of s then to fp32 can round twice; the 1-ulp check below covers that rare case
    return s.astype(np.float32)


def _run_products(module, torch, a, b, c, n, steps):
    out = torch.full((6 * n,), float("nan"), dtype=torch.float32, device="cuda")
    dev = [torch.from_numpy(x).cuda() for x in (a, b, c)]
    module.products[(-(-n // 256),)](*dev, out, n, steps, BLOCK=256)
    return out.cpu().numpy().reshape(6, n)


def _products_reference(a, b, c, steps):
    p = a * b
    q = b * c
    acc = c.copy()
    for _ in range(steps):
        acc = acc + p
    return [_fused(a, b, c), _fused(a, b, c), _fused(a, b, -c), _fused(-a, b, c), _fused(-b, c, p), acc]


def test_products_are_fused_as_float64_rounds_them():
    torch = _torch()
    rng = np.random.default_rng()
    n = 5000 + int(rng.integers(1, 255))
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    got = _run_products(kernels, torch, a, b, c, n, 3)
    assert not np.isnan(got).any()
    for row, expected in zip(got, _products_reference(a, b, c, 3)):
        np.testing.assert_array_max_ulp(row, expected, maxulp=1)


def test_scaled_shift_matches_float64():
    torch = _torch()
    rng = np.random.default_rng()
    rows, cols = 37, 1000 - int(rng.integers(1, 20))
    x = (rng.standard_normal((rows, cols)) * 8).astype(np.float32)
    y = torch.full((rows, cols), float("nan"), dtype=torch.float32, device="cuda")
    kernels.scaled_shift[(rows,)](torch.from_numpy(x).cuda(), y, cols, 0.75, BLOCK=1024)
    scale = np.float32(0.75)
    m = (x * scale).max(axis=1, keepdims=True).astype(np.float64)        # the row maximum of the fp32 products
    expected = np.exp2(x.astype(np.float64) * np.float64(scale) - m)    # the fused x * scale - m, unrounded
    expected = np.where(expected < 2.0 ** -126, 0.0, expected)
    # ex2.approx (2 ulp) of x * scale - m rounded once to fp32 (|x * scale - m| < 64: half an ulp is 2**-18)
    np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=4e-6, atol=0)


def test_exp2_flushes_below_the_smallest_normal():
    torch = _torch()
    rng = np.random.default_rng()
    n = 3000 + int(rng.integers(1, 100))
    x = rng.uniform(-150, 20, n).astype(np.float32)
    x[:4] = [-126.0, -127.0, -149.0, 0.0]
    y = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
    kernels.exp2_of[(-(-n // 512),)](torch.from_numpy(x).cuda(), y, n, BLOCK=512)
    got = y.cpu().numpy()
    expected = np.exp2(x.astype(np.float64))
    tiny = expected < 2.0 ** -126
    assert (got[tiny] == 0).all() and got[1] == 0 and got[2] == 0 and got[3] == 1.0
    np.testing.assert_allclose(got[~tiny], expected[~tiny], rtol=3e-7, atol=0)


def test_same_bits_as_triton():
    torch = _torch()
    from triton_twin import triton_twin_of
    twin = triton_twin_of(KERNELS)
    rng = np.random.default_rng()
    n = 4000 + int(rng.integers(1, 255))
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ours, theirs = (_run_products(m, torch, a, b, c, n, 2) for m in (kernels, twin))
    np.testing.assert_array_equal(ours, theirs)
    x = rng.uniform(-150, 20, n).astype(np.float32)
    outs = []
    for m in (kernels, twin):
        y = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
        m.exp2_of[(-(-n // 512),)](torch.from_numpy(x).cuda(), y, n, BLOCK=512)
        outs.append(y.cpu().numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    rows, cols = 19, 777
    x2 = (rng.standard_normal((rows, cols)) * 8).astype(np.float32)
    outs = []
    for m in (kernels, twin):
        y = torch.full((rows, cols), float("nan"), dtype=torch.float32, device="cuda")
        m.scaled_shift[(rows,)](torch.from_numpy(x2).cuda(), y, cols, 0.75, BLOCK=1024)
        outs.append(y.cpu().numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


def _round_to_bf16(x):
    """float64 values rounded once to bf16 (8 significant bits, to nearest even), as float64."""
    m, e = np.frexp(x)
    return np.ldexp(np.rint(m * 256.0) / 256.0, e)


def _half_products(module, torch, dtype, a, b, c, n):
    tdt = getattr(torch, dtype)
    dev = [torch.from_numpy(x).cuda().to(tdt) for x in (a, b, c)]
    out = torch.full((6 * n,), float("nan"), dtype=tdt, device="cuda")
    module.products[(-(-n // 256),)](*dev, out, n, 2, BLOCK=256)
    return out.float().cpu().numpy().astype(np.float64).reshape(6, n)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_products_round_once_in_their_type(dtype):
    # p = a*b and q = b*c fused as LLVM fuses them (the product exact), each result rounded once to the type
    torch = _torch()
    rng = np.random.default_rng()
    n = 3000 + int(rng.integers(1, 255))
    rnd = (lambda x: x.astype(np.float16).astype(np.float64)) if dtype == "float16" else _round_to_bf16
    a, b, c = (rnd(rng.standard_normal(n)).astype(np.float32) for _ in range(3))
    got = _half_products(kernels, torch, dtype, a, b, c, n)
    a, b, c = (x.astype(np.float64) for x in (a, b, c))
    p = rnd(a * b)
    expected = [rnd(a * b + c), rnd(a * b + c), rnd(a * b - c), rnd(c - a * b), rnd(p - b * c), rnd(rnd(c + p) + p)]
    for k, (row, want) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(row, want, err_msg=f"row {k}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_products_same_bits_as_triton(dtype):
    torch = _torch()
    from triton_twin import triton_twin_of
    twin = triton_twin_of(KERNELS)
    rng = np.random.default_rng()
    n = 3000 + int(rng.integers(1, 255))
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ours, theirs = (_half_products(m, torch, dtype, a, b, c, n) for m in (kernels, twin))
    np.testing.assert_array_equal(ours, theirs)
    outs = []
    for m in (kernels, twin):
        tdt = getattr(torch, dtype)
        y = torch.full((n,), float("nan"), dtype=tdt, device="cuda")
        m.half_fma[(-(-n // 256),)](*[torch.from_numpy(x).cuda().to(tdt) for x in (a, b, c)], y, n, BLOCK=256)
        outs.append(y.float().cpu().numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
