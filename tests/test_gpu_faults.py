"""GPU: a fault inside a user kernel is reported by name (issue 17, item 4). Each case runs in a fresh process,
since a fault leaves the CUDA context unusable."""
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = str(Path(__file__).resolve().parents[1])

PRELUDE = textwrap.dedent("""
    import time
    import cupy, numpy as np
    import transpiler, transpiler.language as tl
    from transpiler.errors import LaunchError

    @transpiler.jit
    def wild_store(X, far, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + far + offs, 1.0)          # far past the allocation: an illegal address

    @transpiler.jit
    def fine(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, 2.0, mask=offs < n)

    @transpiler.jit
    def non_negative(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n, other=0.0)
        tl.device_assert(x >= 0, "x must be non-negative")
        tl.store(X + offs, x + 1, mask=offs < n)

    x = cupy.zeros(1024, cupy.float32)
    fine[(1,)](x, 1024, BLOCK=1024)            # compiled and loaded before anything faults
    cupy.cuda.runtime.deviceSynchronize()
""")


def _run(body, **env):
    # a file, not `python -c`: kernels are read back from their source file
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "faulting_kernels.py"
        script.write_text(PRELUDE + textwrap.dedent(body))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env=dict(os.environ,
                                       PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), **env))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_launch_after_an_illegal_address_names_the_kernel_that_ran_and_its_grid():
    out = _run("""
        wild_store[(3, 2)](x, 1 << 38, BLOCK=128)
        time.sleep(1.0)                        # the fault happens meanwhile, asynchronously
        try:
            fine[(1,)](x, 1024, BLOCK=1024)
        except LaunchError as e:
            print("REFUSED", e)
    """)
    assert "REFUSED" in out and "illegal memory address" in out
    assert "'wild_store' (its last launch: grid (3, 2, 1))" in out


def test_debug_mode_reports_the_faulting_launch_itself():
    out = _run("""
        try:
            wild_store[(3,)](x, 1 << 38, BLOCK=128)
        except LaunchError as e:
            print("REFUSED", e)
    """, TRANSPILER_DEBUG="1")
    assert "in kernel 'wild_store'" in out and "during this launch, grid (3, 1, 1)" in out


def test_debug_mode_turns_device_asserts_on():
    out = _run("""
        y = cupy.asarray(np.arange(100, dtype=np.float32) - 50)
        try:
            non_negative[(1,)](y, 100, BLOCK=128)
        except LaunchError as e:
            print("REFUSED", e)
    """, TRANSPILER_DEBUG="1")
    assert "device_assert failed at" in out and "x must be non-negative" in out      # the device's printf
    assert "REFUSED" in out and "in kernel 'non_negative'" in out


def test_without_debug_device_asserts_cost_nothing_and_do_not_fire():
    out = _run("""
        y = cupy.asarray(np.arange(100, dtype=np.float32) - 50)
        non_negative[(1,)](y, 100, BLOCK=128)
        cupy.cuda.runtime.deviceSynchronize()
        print("SUM", float(y.sum()))
    """)
    assert "SUM " + str(float(sum(range(100)) - 50 * 100 + 100)) in out


def test_debug_mode_catches_int32_index_overflow_before_it_becomes_a_wild_address():
    out = _run("""
        @transpiler.jit
        def strided(X, stride, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * stride + tl.arange(0, BLOCK)      # wraps past 2**31 for pid 3
            tl.store(X + offs % 1024, 1.0)
        try:
            strided[(4,)](x, 1 << 30, BLOCK=128)
        except LaunchError as e:
            print("REFUSED", e)
    """, TRANSPILER_DEBUG="1")
    assert "int32 overflow in *" in out and "REFUSED" in out
