"""The generated `.cu` of every example compiles on its own with the installed `nvcc` (as its header says).

NVRTC through CuPy adds include paths of its own; `nvcc -arch=sm_90a -cubin` alone proves the file is
self-contained: `templates/device.cuh` inlined, only the toolkit's headers included. Skipped without nvcc.
"""
import shutil
import subprocess

import pytest

from example_specs import SPECS, source_of

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_example_cuda_compiles_alone_with_nvcc(spec, tmp_path):
    cu = tmp_path / f"{spec.name}.cu"
    cu.write_text(source_of(spec))
    arch = ["-gencode=arch=compute_90a,code=sm_90a"] if spec.arch else ["-arch=sm_90a"]   # see HOPPER.md
    proc = subprocess.run([NVCC, *arch, "-cubin", "-Xptxas", "-v", "-o",
                           str(tmp_path / f"{spec.name}.cubin"), str(cu)], capture_output=True, text=True,
                          timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert (tmp_path / f"{spec.name}.cubin").stat().st_size > 0
    assert "warning" not in log.lower(), log
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
