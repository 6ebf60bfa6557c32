"""`python -m transpiler compile`: the .cu, the cubin and a typed C++ launcher on the CUDA driver API, which
checks the specialization's assumptions and builds with nvcc (tests/test_gpu_aot.py runs one on the GPU)."""
from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from transpiler.cli import main
from transpiler.cli.aot import host_interface
from transpiler.cli.signature import SignatureError
from transpiler.runtime.compiler import nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")

MAIN = textwrap.dedent('''
    #include "scale_launcher.h"
    int main() {
      CUdeviceptr x = 0, y = 0;
      return scale_launch(0, 4, 1, 1, x, y, 4000, 2.5f) == CUDA_SUCCESS ? 0 : 1;
    }
''')


@pytest.fixture()
def kernel_file():
    return str(Path(__file__).resolve().parent / "cli_kernels.py")


def compile_cli(capsys, kernel_file, out, signature, *extra):
    rc = main(["compile", kernel_file, "--kernel", "scale", "--signature", signature, "-D", "BLOCK=1024",
               "--num-warps", "4", "--arch", "sm_90a", "--out", str(out), *extra])
    return rc, *capsys.readouterr()


def _embedded_cubin(cpp_text):
    body = cpp_text.split("_cubin[", 1)[1].split("{", 1)[1].split("};", 1)[0]
    return bytes(int(h, 16) for h in re.findall(r"0x([0-9a-f]{2})", body))


@needs_nvrtc
def test_compile_writes_source_cubin_and_typed_launcher(kernel_file, tmp_path, capsys):
    out = tmp_path / "aot"
    rc, stdout, err = compile_cli(capsys, kernel_file, out, "*fp16:16,*fp16:16,i32,fp32")
    assert rc == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert names == ["scale.cu", "scale.sm_90a.cubin", "scale_launcher.cpp", "scale_launcher.h"]
    assert stdout.split() == [str(out / n) for n in ("scale.cu", "scale.sm_90a.cubin", "scale_launcher.h",
                                                    "scale_launcher.cpp")]
    main(["dump", kernel_file, "--kernel", "scale", "--signature", "*fp16:16,*fp16:16,i32,fp32", "-D", "BLOCK=1024"])
    assert (out / "scale.cu").read_text() == capsys.readouterr().out
    cubin = (out / "scale.sm_90a.cubin").read_bytes()
    assert cubin[:4] == b"\x7fELF"
    cpp = (out / "scale_launcher.cpp").read_text()
    assert _embedded_cubin(cpp) == cubin
    header = " ".join((out / "scale_launcher.h").read_text().split())
    assert ("CUresult scale_launch(CUstream stream, unsigned int gx, unsigned int gy, unsigned int gz, "
            "CUdeviceptr X, CUdeviceptr Y, int32_t n, float alpha);") in header
    assert "cuLaunchKernel(scale_function, gx, gy, gz, 128, 1, 1, 0, stream, params, nullptr)" in cpp
    assert "if (!((X & 15) == 0)) return CUDA_ERROR_INVALID_VALUE;" in cpp
    assert "n % 16" not in cpp and "n == 1" not in cpp        # a plain i32 assumes nothing


@needs_nvrtc
@pytest.mark.parametrize("signature, present, absent", [
    ("*fp16,*fp16:16,i32:16,fp32", ["(Y & 15) == 0", "n % 16 == 0"], ["(X & 15)"]),
    ("*fp32:16,*fp32:16,i32:1,fp16", ["n == 1", "uint16_t alpha", "the bits of an IEEE half"], ["n % 16"]),
])
def test_launcher_checks_exactly_what_the_specialization_assumed(kernel_file, tmp_path, capsys, signature,
                                                                  present, absent):
    rc, _, err = compile_cli(capsys, kernel_file, tmp_path, signature)
    assert rc == 0, err
    text = (tmp_path / "scale_launcher.h").read_text() + (tmp_path / "scale_launcher.cpp").read_text()
    assert all(p in text for p in present) and not any(a in text for a in absent)


def test_a_none_argument_cannot_be_compiled_ahead_of_time():
    with pytest.raises(SignatureError, match="None argument"):
        host_interface(["X", "B"], [("ptr", "fp32", 16), ("none",)], ["ptr", "ptr"])


def test_compile_for_an_old_arch_refuses_dot(kernel_file, tmp_path, capsys):
    rc = main(["compile", kernel_file, "--kernel", "square_tile", "--signature", "*fp16:16,*fp16:16,*fp32:16",
               "-D", "BLOCK=32", "--arch", "sm_75", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 1 and "(sm_80) or newer; this one is sm_75" in err and not (tmp_path / "x").exists()


@needs_nvrtc
@needs_nvcc
def test_launcher_and_a_program_using_it_build_with_nvcc_without_warnings(kernel_file, tmp_path, capsys):
    rc, _, err = compile_cli(capsys, kernel_file, tmp_path, "*fp16:16,*fp16:16,i32:16,fp32")
    assert rc == 0, err
    (tmp_path / "main.cpp").write_text(MAIN)
    for source in ("scale_launcher.cpp", "main.cpp"):
        done = subprocess.run(["nvcc", "-std=c++17", "-Xcompiler", "-Wall,-Wextra,-Werror", "-c", source, "-o",
                               source + ".o"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / (source + ".o")).stat().st_size > 0
    symbols = subprocess.run(["nm", "-C", "scale_launcher.cpp.o"], cwd=tmp_path, capture_output=True, text=True)
    if symbols.returncode == 0:
        assert "scale_launch(CUstream_st*, unsigned int, unsigned int, unsigned int" in symbols.stdout
        assert "cuLaunchKernel" in symbols.stdout and "cuModuleLoadData" in symbols.stdout


@needs_nvrtc
def test_a_kernel_folded_into_a_row_loop_gets_the_grid_x_from_its_launcher(tmp_path, capsys):
    """The row loop reads the user's grid x from a last parameter: the AOT launcher passes gx and launches all
    gx programs (each runs its one row), refusing a gx whose row sum would overflow."""
    softmax = str(Path(__file__).resolve().parent.parent / "examples" / "softmax.py")
    rc = main(["compile", softmax, "--kernel", "softmax_kernel", "--signature", "*fp16:16,*fp16:16,i32:16,i32:16,i32",
               "-D", "BLOCK=1024", "--num-warps", "4", "--arch", "sm_90a", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    source = (tmp_path / "softmax_kernel.cu").read_text()
    cpp = (tmp_path / "softmax_kernel_launcher.cpp").read_text()
    assert "const int n_rows) {" in source and "row < n_rows" in source
    assert "int tp_grid_x = static_cast<int>(gx);" in cpp and "&n_cols, &tp_grid_x}" in cpp
    # the loop computes rows up to MAX_ROWS_AHEAD (3) x gx past a row below gx: that must stay an int
    assert "if (gx > 0x7fffffffu / 4) return CUDA_ERROR_INVALID_VALUE;" in cpp
    # Rows of 2 KiB: four programs of one warp a block (analysis/program_packing.py), so gx programs need
    # ceil(gx / 4) blocks, counted after the grid's x is kept for the kernel.
    assert "program_slot" in source
    assert cpp.index("int tp_grid_x = static_cast<int>(gx);") < cpp.index("gx = (gx + 3u) / 4u;")
