"""For nvcc users the `.cu` `#include`s our device headers instead of inlining them (issue 15 item 5):
`kernel.cuda_source(..., include_headers=True)` and `python -m transpiler dump --include-headers` write it, and it
compiles with the installed nvcc given only `-I"$(python -m transpiler include-dir)"`, without warnings, while
the source NVRTC compiles keeps the helpers inlined. Skipped without nvcc."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from example_specs import BY_NAME, analysis_of
from transpiler.emit_cuda import emit_kernel, include_dir

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which("nvcc")
CASES = ["softmax_fp16_4096", "cumsum_rows_fp32_1000", "histogram_int32", "matmul_fp16_128x128x64",
         "matmul_fp16_128x128x64_sm90a", "attention_fp16_d128_causal_sm90a"]


def _sources(spec):
    ir, analysis = analysis_of(spec)
    return emit_kernel(ir, analysis).source, emit_kernel(ir, analysis, include_headers=True).source


@pytest.mark.parametrize("name", CASES)
def test_the_included_form_names_the_headers_the_inlined_form_copies(name):
    inlined, included = _sources(BY_NAME[name])
    assert '#include "device.cuh"' in included and "(templates/device.cuh: the ones this kernel uses" not in included
    assert '#include "device.cuh"' not in inlined and "// ---- device helpers (templates/device.cuh" in inlined
    assert "#pragma once" not in inlined      # the inlined copy is the main file
    tiles = "tp::swizzle" in inlined
    assert ('#include "device_tiles.cuh"' in included) == tiles
    # the kernel itself is the same text in both
    assert inlined.split("extern \"C\"")[1:] == included.split("extern \"C\"")[1:]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", CASES)
def test_the_included_form_compiles_with_nvcc_and_our_include_dir(name, tmp_path):
    spec = BY_NAME[name]
    _, included = _sources(spec)
    cu = tmp_path / f"{name}.cu"
    cu.write_text(included)
    arch = ["-gencode=arch=compute_90a,code=sm_90a"] if spec.arch else ["-arch=sm_90a"]
    proc = subprocess.run([NVCC, *arch, f"-I{include_dir()}", "-cubin", "-o", str(tmp_path / "k.cubin"), str(cu)],
                          capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "warning" not in log.lower(), log
    assert (tmp_path / "k.cubin").stat().st_size > 0


def test_the_command_line_prints_the_include_dir_and_dumps_the_included_form(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = [sys.executable, "-m", "transpiler"]
    folder = subprocess.run([*run, "include-dir"], capture_output=True, text=True, env=env, timeout=120)
    assert folder.returncode == 0 and (Path(folder.stdout.strip()) / "device.cuh").exists(), folder.stderr
    out = tmp_path / "add.cu"
    dump = subprocess.run([*run, "dump", "examples/vector_add.py", "--signature", "*fp32:16,*fp32:16,*fp32:16,i32",
                           "-D", "BLOCK=1024", "--include-headers", "-o", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert dump.returncode == 0, dump.stderr
    assert '#include "device.cuh"' in out.read_text()
