"""NVRTC without importing CuPy (runtime/nvrtc_setup.py): the ctypes calls give what CuPy's binding gives, the
include options read without CuPy are CuPy's own, and a cold compile in a fresh process never imports CuPy."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from transpiler.runtime import compiler, nvrtc_setup
from transpiler.runtime.compiler import nvrtc_available

ROOT = Path(__file__).resolve().parents[1]
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")

SOURCE = """#include <cuda_fp16.h>
extern "C" __global__ void scale(__half* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);
}
"""


def _compile(nvrtc, source, options):
    prog = nvrtc.createProgram(source, "scale.cu", [], [])
    try:
        nvrtc.compileProgram(prog, list(options))
        return nvrtc.getCUBIN(prog), nvrtc.getPTX(prog), nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def _check_include_options_are_cupys():
    own = nvrtc_setup.own_include_options(("-arch=sm_90a", "--std=c++17"))
    if own is None:
        pytest.skip("this environment's include folders are left to CuPy (conda, CUDA 12, ...)")
    assert own == nvrtc_setup.cupy_assembled(("-arch=sm_90a", "--std=c++17"))


@needs_nvrtc
def test_include_options_read_without_cupy_are_cupys():
    _check_include_options_are_cupys()


@needs_nvrtc
def test_ctypes_calls_give_cupys_cubin_and_ptx():
    cupy_binding = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    ours = nvrtc_setup.binding()
    if ours is cupy_binding:
        pytest.skip("pathfinder cannot load NVRTC here: CuPy's binding is used")
    options = compiler.nvrtc_options("sm_90a")
    cubin, ptx, log = _compile(ours, SOURCE, options)
    cupy_cubin, cupy_ptx, cupy_log = _compile(cupy_binding, SOURCE, options)
    assert ours.getVersion() == tuple(cupy_binding.getVersion())
    # CuPy's getCUBIN leaves out the last byte NVRTC counts (a 0 after the ELF image)
    assert cubin.rstrip(b"\0") == cupy_cubin.rstrip(b"\0") and cubin[:4] == b"\x7fELF"
    assert (ptx.decode() if isinstance(ptx, bytes) else ptx) == (cupy_ptx.decode() if isinstance(cupy_ptx, bytes)
                                                                 else cupy_ptx)
    assert "scale" in (ptx.decode() if isinstance(ptx, bytes) else ptx)
    assert log.strip() == cupy_log.strip()


@needs_nvrtc
def test_a_failed_compile_raises_and_keeps_the_log():
    nvrtc = nvrtc_setup.binding()
    prog = nvrtc.createProgram("this is not C++", "broken.cu", [], [])
    try:
        with pytest.raises(Exception):
            nvrtc.compileProgram(prog, list(compiler.nvrtc_options("sm_90a")))
        assert "error" in nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


@needs_nvrtc
def test_a_cold_compile_in_a_fresh_process_never_imports_cupy(tmp_path):
    script = (
        "import sys\n"
        "import numpy as np\n"
        "import transpiler, transpiler.language as tl\n"
        "@transpiler.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)\n"
        "from transpiler.runtime.compiler import compile_cubin\n"
        "source = k.cuda_source(np.zeros(100, np.float32), 100, BLOCK=128)\n"
        "cubin = compile_cubin(source, 'k', 'sm_90a')\n"
        "assert cubin[:4] == b'\\x7fELF'\n"
        "print('cupy' in sys.modules)\n")
    env = {"PYTHONPATH": str(ROOT), "TRANSPILER_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    (tmp_path / "cold.py").write_text(script)
    done = subprocess.run([sys.executable, str(tmp_path / "cold.py")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    if nvrtc_setup.own_include_options(("-arch=sm_90a",)) is None:
        pytest.skip("this environment's include folders are left to CuPy")
    assert done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.gpu
@needs_nvrtc
def test_include_options_read_without_cupy_are_cupys_on_the_gpu_host():
    _check_include_options_are_cupys()


@needs_nvrtc
def test_a_missing_header_is_retried_with_cupys_include_options(monkeypatch):
    pytest.importorskip("cupy")
    compiler.nvrtc_options.cache_clear()
    monkeypatch.setattr(nvrtc_setup, "include_options", lambda options: tuple(options))   # no include folders
    try:
        cubin = compiler.compile_cubin(SOURCE, "scale", "sm_90a")
    finally:
        compiler.nvrtc_options.cache_clear()
    assert cubin[:4] == b"\x7fELF"
