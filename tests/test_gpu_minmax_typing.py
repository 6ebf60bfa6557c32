"""GPU: the min/max/clamp/fma typing cases of tests/minmax_kernels.py, compiled, against the interpreter (which
the CPU tests check against NumPy) and against Triton's build of the same file where Triton is installed."""
from pathlib import Path

import numpy as np
import pytest

import minmax_kernels as K
import transpiler.language as tl
from test_minmax_typing import BLOCK, GRID, N, NUMBER_CASES, values_of

pytestmark = pytest.mark.gpu


def _run_compiled(kernel, args, constexprs):
    import cupy
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[GRID](*dev, **constexprs)
    cupy.cuda.runtime.deviceSynchronize()
    return [cupy.asnumpy(a) for a in dev if isinstance(a, cupy.ndarray)]


def _run_interpreted(kernel, args, constexprs):
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel.interpret[GRID](*host, **constexprs)
    return [a for a in host if isinstance(a, np.ndarray)]


def _run_triton(name, args, constexprs):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    import sys
    import triton.language as ttl
    root = Path(__file__).resolve().parents[1]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from bench.twins import load
    twin = load(Path(__file__).with_name("minmax_kernels.py"), "triton")
    theirs = {k: (getattr(ttl, _TL_NAMES[v]) if v in _TL_NAMES else v) for k, v in constexprs.items()}
    dev = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    getattr(twin, name)[GRID](*dev, **theirs)
    torch.cuda.synchronize()
    return [a.cpu().numpy() for a in dev if hasattr(a, "cpu")]


_TL_NAMES = {getattr(tl, n): n for n in ("uint8", "int8", "uint16", "uint32", "int32", "int64", "float16",
                                         "bfloat16", "float32", "float64")}


def _all_equal(name, kernel, args, constexprs):
    expected = _run_interpreted(kernel, args, constexprs)
    for got, want in zip(_run_compiled(kernel, args, constexprs), expected):
        np.testing.assert_array_equal(got, want)
    try:
        theirs = _run_triton(name, args, constexprs)
    except pytest.skip.Exception:
        return
    for got, want in zip(theirs, expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt,c,is_max,result", NUMBER_CASES,
                         ids=[f"{'max' if c[2] else 'min'}_{c[0]}_{c[1]}" for c in NUMBER_CASES])
def test_min_max_with_a_number_equal_on_gpu_interpreter_and_triton(dt, c, is_max, result):
    rng = np.random.default_rng()
    x = values_of(rng, dt) * (2.0**-8 if dt.startswith("float") or dt == "bfloat16" else 1)
    out = np.full(N, -7, np.float64 if result.startswith("float") else np.int64)
    _all_equal("min_with_number_kernel", K.min_with_number_kernel, (x, out, N),
               dict(DT=getattr(tl, dt), C=c, MAX=is_max, BLOCK=BLOCK))


def test_bf16_max_then_add_equal_on_gpu_interpreter_and_triton():
    rng = np.random.default_rng()
    x, y = values_of(rng, "bfloat16"), values_of(rng, "bfloat16")
    z = values_of(rng, "bfloat16") * 2.0**-6
    _all_equal("bf16_max_then_add_kernel", K.bf16_max_then_add_kernel,
               (x, y, z, np.full(N, np.nan, np.float32), N), dict(BLOCK=BLOCK))


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_clamp_and_fma_equal_on_gpu_interpreter_and_triton(dt):
    rng = np.random.default_rng()
    x, a, b = (values_of(rng, dt) for _ in range(3))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    _all_equal("clamp_kernel", K.clamp_kernel, (x, lo, hi, np.full(N, np.nan), N),
               dict(DT=getattr(tl, dt), BLOCK=BLOCK))
    _all_equal("fma_number_kernel", K.fma_number_kernel, (x, a, np.full(N, np.nan, np.float32), N),
               dict(C=1.0, DT=getattr(tl, dt), BLOCK=BLOCK))
