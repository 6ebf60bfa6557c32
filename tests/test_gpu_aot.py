"""An ahead-of-time kernel runs on the GPU from a C++ program built with nvcc: no Python, no transpiler in it.

`python -m transpiler compile` writes the cubin and the typed launcher; the program reads fresh random inputs
from a file, launches through the launcher (driver API), writes the result back; NumPy in float64 checks it.
The launcher's specialization checks are exercised too: a misaligned pointer is refused, not run."""
from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from transpiler.cli import main

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")]

KERNEL = textwrap.dedent('''
    import transpiler
    import transpiler.language as tl


    @transpiler.jit
    def axpb(X, Y, n, alpha, beta, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(Y + offs, tl.load(X + offs, mask=m) * alpha + beta, mask=m)
''')

PROGRAM = textwrap.dedent('''
    // Reads n, alpha, beta and n floats from in.bin; writes n floats to out.bin; prints the launch statuses.
    #include <cstdio>
    #include <vector>
    #include "axpb_launcher.h"
    #define CHECK(call) do { CUresult s = (call); if (s != CUDA_SUCCESS) { \\
        std::printf("%s failed: %d\\n", #call, (int)s); return 2; } } while (0)
    int main() {
      FILE* in = std::fopen("in.bin", "rb");
      int n; float alpha, beta;
      if (!in || std::fread(&n, 4, 1, in) != 1 || std::fread(&alpha, 4, 1, in) != 1 || std::fread(&beta, 4, 1, in) != 1)
        return 3;
      std::vector<float> x(n), y(n);
      if (std::fread(x.data(), 4, n, in) != (size_t)n) return 3;
      std::fclose(in);
      CUdevice dev; CUcontext ctx; CUdeviceptr dx, dy;
      CHECK(cuInit(0));
      CHECK(cuDeviceGet(&dev, 0));
      CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
      CHECK(cuCtxSetCurrent(ctx));
      CHECK(cuMemAlloc(&dx, (n + 4) * 4));
      CHECK(cuMemAlloc(&dy, n * 4));
      CHECK(cuMemcpyHtoD(dx, x.data(), n * 4));
      CHECK(cuMemsetD32(dy, 0x7fc00000u, n));   // NaN: every element must be written
      unsigned grid = (n + 1023) / 1024;
      CUresult misaligned = axpb_launch(0, grid, 1, 1, dx + 4, dy, n, alpha, beta);
      CHECK(axpb_launch(0, grid, 1, 1, dx, dy, n, alpha, beta));
      CHECK(cuCtxSynchronize());
      CHECK(cuMemcpyDtoH(y.data(), dy, n * 4));
      FILE* out = std::fopen("out.bin", "wb");
      std::fwrite(y.data(), 4, n, out);
      std::fclose(out);
      std::printf("misaligned=%d\\n", (int)misaligned);
      axpb_unload();
      return 0;
    }
''')


def _cuda_link_dirs():
    root = Path(shutil.which("nvcc")).resolve().parent.parent
    return [f"-L{d}" for d in (root / "lib64" / "stubs", root / "targets" / "x86_64-linux" / "lib" / "stubs")
            if d.is_dir()]


def test_aot_program_runs_the_kernel_without_python(tmp_path, capsys):
    (tmp_path / "aot_axpb.py").write_text(KERNEL)
    rc = main(["compile", str(tmp_path / "aot_axpb.py"), "--kernel", "axpb", "--signature",
               "*fp32:16,*fp32:16,i32,fp32,fp32", "-D", "BLOCK=1024", "--num-warps", "4", "--arch", "sm_90a",
               "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    (tmp_path / "main.cpp").write_text(PROGRAM)
    build = subprocess.run(["nvcc", "-std=c++17", "main.cpp", "axpb_launcher.cpp", *_cuda_link_dirs(), "-lcuda",
                            "-o", "axpb_program"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    rng = np.random.default_rng()
    n = 5000 + int(rng.integers(1, 1000))           # not a multiple of BLOCK
    x = rng.standard_normal(n).astype(np.float32)
    alpha, beta = np.float32(rng.uniform(0.5, 2)), np.float32(rng.uniform(-1, 1))
    with open(tmp_path / "in.bin", "wb") as f:
        f.write(np.int32(n).tobytes() + alpha.tobytes() + beta.tobytes() + x.tobytes())
    run = subprocess.run(["./axpb_program"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "misaligned=1" in run.stdout            # CUDA_ERROR_INVALID_VALUE: X was compiled as 16-byte aligned
    y = np.fromfile(tmp_path / "out.bin", np.float32)
    expected = x.astype(np.float64) * float(alpha) + float(beta)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
