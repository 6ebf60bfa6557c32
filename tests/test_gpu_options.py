"""On the GPU: @jit(debug=True) asserts fire with their message and line, pass silently when they hold; a
do_not_specialize kernel is right for every value with one compiled variant."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
TESTS = Path(__file__).resolve().parent


def test_debug_kernel_with_holding_asserts_computes_sqrt():
    import cupy as cp
    from option_kernels import checked_sqrt_debug
    rng = np.random.default_rng(7)
    x = rng.uniform(0.1, 9.0, 1000).astype(np.float32)
    y = cp.full(1000, cp.nan, cp.float32)
    checked_sqrt_debug[(8,)](cp.asarray(x), y, 1000, BLOCK=128)
    np.testing.assert_allclose(y.get(), np.sqrt(x.astype(np.float64)), rtol=1e-6)


def test_failed_device_assert_reports_message_and_line():
    # A trap leaves the CUDA context unusable: run it in its own process, without TRANSPILER_DEBUG (the kernel's
    # own @jit(debug=True) turns the asserts on).
    script = textwrap.dedent("""
        import numpy as np, cupy as cp
        import transpiler
        from option_kernels import checked_sqrt_debug
        x = np.random.default_rng(3).uniform(0.5, 2.0, 500).astype(np.float32)
        x[321] = -4.0
        y = cp.zeros(500, cp.float32)
        try:
            checked_sqrt_debug[(4,)](cp.asarray(x), y, 500, BLOCK=128)
            cp.cuda.runtime.deviceSynchronize()
            print("NO ERROR")
        except transpiler.LaunchError as e:
            print("REFUSED", e)
    """)
    path = [str(TESTS.parent), str(TESTS)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = {k: v for k, v in os.environ.items() if k != "TRANSPILER_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(path)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    from option_kernels import checked_sqrt_debug
    line = checked_sqrt_debug.fn.__code__.co_firstlineno + 3
    out = done.stdout + done.stderr
    assert "NO ERROR" not in out
    assert f"option_kernels.py:{line}: sqrt of a negative input" in out     # the device's printf
    assert "REFUSED" in out and "in kernel '_checked_sqrt'" in out


@pytest.mark.parametrize("n", [1, 16, 17, 1000])
def test_do_not_specialize_kernel_is_right_for_every_value(n):
    import cupy as cp
    from option_kernels import copy_generic
    x = cp.asarray(np.random.default_rng(n).standard_normal(1024).astype(np.float32))
    y = cp.full(1024, cp.nan, cp.float32)
    copy_generic[(8,)](x, y, n, BLOCK=128)
    np.testing.assert_array_equal(y[:n].get(), x[:n].get())
    assert np.isnan(y[n:].get()).all()
    assert len(copy_generic.variants) == 1


def test_autotune_with_host_arrays_reports_the_plain_launch_error_on_the_gpu():
    import transpiler
    from option_kernels import copy_specialized
    tuned = transpiler.autotune([transpiler.Config({"BLOCK": 64}), transpiler.Config({"BLOCK": 128})],
                                key=["n"])(copy_specialized)
    x = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    with pytest.raises(transpiler.LaunchError, match="in host memory") as err:
        tuned[(3,)](x, x.copy(), 300)
    assert not isinstance(err.value, transpiler.AutotuneError)


def test_maxnreg_launch_is_right_and_its_cubin_holds_the_budget():
    import cupy as cp
    from option_kernels import softmax_rows
    from transpiler.runtime.compiler import device_arch
    from transpiler.runtime.occupancy import cubin_resources
    rows, cols = 37, 3000
    x = np.random.default_rng(11).standard_normal((rows, cols)).astype(np.float32)
    y = cp.full((rows, cols), cp.nan, cp.float32)
    softmax_rows[(rows,)](cp.asarray(x), y, cols, BLOCK=4096, num_warps=4, maxnreg=40)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y.get(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    capped = [v for v in softmax_rows.variants.values() if v.maxnreg == 40]
    assert len(capped) == 1
    assert cubin_resources(capped[0].cubin(device_arch(0))).registers <= 40
