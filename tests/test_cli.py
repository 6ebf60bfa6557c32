"""`python -m transpiler dump | explain | cache | --version`: Triton's AOT signature syntax read into the same
specialization a real launch selects, and every mistake reported as one located message with exit status 1."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler
from transpiler.cli import main
from transpiler.cli.kernel_file import find_kernel, load_module
from transpiler.cli.signature import SignatureError, parse_entry, parse_signature
from transpiler.runtime.compiler import nvrtc_available

ROOT = Path(__file__).resolve().parent.parent
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

KERNEL_FILE = str(Path(__file__).resolve().parent / "cli_kernels.py")
DOT_LINE = next(i for i, line in enumerate(Path(KERNEL_FILE).read_text().splitlines(), 1) if "tl.dot(a, b)" in line)


@pytest.fixture()
def kernel_file():
    return KERNEL_FILE


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_signature_entries_read_as_triton_writes_them():
    ptr = parse_entry("*fp16:16")
    assert (ptr.kind, ptr.dtype.name, ptr.hint) == ("ptr", "fp16", 16)
    assert parse_entry("*bf16").hint is None
    assert (parse_entry("i32:16").dtype.name, parse_entry("i32:16").hint) == ("int32", 16)
    assert parse_entry("u64:1").dtype.name == "uint64" and parse_entry("u64:1").hint == 1
    assert parse_entry("fp32").kind == "scalar"
    assert [e.value for e in parse_signature("*fp32, 1024, True")[1:]] == [1024, True]


def test_stand_ins_have_exactly_the_stated_properties():
    plain, div16, one = (parse_entry(t).stand_in() for t in ("i32", "i32:16", "i32:1"))
    assert plain.dtype == np.int32 and plain != 1 and plain % 16 != 0
    assert div16 % 16 == 0 and div16 != 1 and one == 1
    assert parse_entry("i64").stand_in().dtype == np.int64
    assert parse_entry("*fp16").stand_in().aligned is False and parse_entry("*fp16:16").stand_in().aligned


@pytest.mark.parametrize("bad, words", [("*fp16:8", "must be :16 or :1"), ("*float16", "unknown type 'float16'"),
                                        ("fp32:16", "only integer scalars take a hint"), ("", "empty entry")])
def test_bad_signature_entries_say_what_is_wrong(bad, words):
    with pytest.raises(SignatureError, match=words):
        parse_entry(bad)


def test_an_fp64_scalar_is_refused_since_no_launch_passes_one():
    with pytest.raises(SignatureError, match="no launch passes an fp64 scalar"):
        parse_entry("fp64").stand_in()


def test_dump_gives_the_source_a_launch_with_such_arguments_compiles(kernel_file, capsys):
    rc, out, err = run_cli(capsys, "dump", kernel_file, "--kernel", "scale", "--signature",
                           "*fp16:16,*fp16:16,i32,fp32",
                           "-D", "BLOCK=1024", "--num-warps", "4")
    assert rc == 0, err
    kernel = find_kernel(load_module(kernel_file), kernel_file, "scale")
    x, y = np.ones(4000, np.float16), np.ones(4000, np.float16)      # NumPy arrays are 16-byte aligned
    assert x.ctypes.data % 16 == 0 and y.ctypes.data % 16 == 0
    assert out == kernel.cuda_source(x, y, np.int32(3999), np.float32(2.5), BLOCK=1024, num_warps=4)
    assert "BLOCK = 1024" in out and "n int32" in out


def test_dump_and_explain_take_every_parameter_or_only_the_runtime_ones(kernel_file, capsys):
    _, only_runtime, _ = run_cli(capsys, "dump", kernel_file, "--kernel", "scale", "--signature",
                                 "*fp32:16,*fp32,i32:16,fp32", "-D", "BLOCK=256")
    _, every, _ = run_cli(capsys, "dump", kernel_file, "--kernel", "scale", "--signature",
                          "*fp32:16,*fp32,i32:16,fp32,256")
    assert only_runtime == every and "BLOCK = 256" in every
    rc, report, err = run_cli(capsys, "explain", kernel_file, "--kernel", "scale", "--signature",
                              "*fp32:16,*fp32,i32:1,fp32,256", "--num-warps", "2")
    assert rc == 0, err
    for line in ("  X: ptr<fp32> (16-byte aligned)", "  Y: ptr<fp32> (alignment unknown)", "  n: int32 (== 1, folded)",
                 "  BLOCK = 256 (constexpr)"):
        assert line + "\n" in report
    assert "num_warps = 2" in report


@needs_nvrtc
def test_dump_with_arch_compiles_with_nvrtc_and_reports_registers(kernel_file, capsys, tmp_path):
    out_file = tmp_path / "scale.cu"
    rc, out, err = run_cli(capsys, "dump", kernel_file, "--kernel", "scale", "--signature",
                           "*fp16:16,*fp16:16,i32,fp32",
                           "-D", "BLOCK=1024", "--arch", "sm_90a", "-o", str(out_file))
    assert rc == 0 and out == ""
    assert "sm_90a:" in err and "registers, 0 bytes spilled" in err
    assert "__global__" in out_file.read_text()


def test_dot_for_a_pre_ampere_arch_is_one_message_at_the_dot_line(kernel_file, capsys):
    rc, out, err = run_cli(capsys, "dump", kernel_file, "--kernel", "square_tile", "--signature",
                           "*fp16:16,*fp16:16,*fp32:16", "-D", "BLOCK=32", "--arch", "sm_75")
    assert rc == 1 and out == ""
    assert "needs a GPU of compute capability 8.0 (sm_80) or newer; this one is sm_75" in err
    assert f"{kernel_file}:{DOT_LINE}:" in err and "tl.dot(a, b)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["--kernel", "scale", "--signature", "*fp32:16,*fp32,i32,fp32", "-D", "BLOCK=1000"],
     "the count must be a power of two"),
    (["--kernel", "scale", "--signature", "*fp32:16,*fp32,i32,fp32"], "needs a value for its constexpr BLOCK: give "
                                                                      "it with -D BLOCK=VALUE"),
    (["--kernel", "scale", "--signature", "*fp32,i32"], "the signature has 2 entries; kernel 'scale' has 5"),
    (["--kernel", "scale", "--signature", "*fp32,*fp32,i32,fp32", "-D", "BLOK=64"], "-D BLOK: kernel 'scale' has no"),
    (["--kernel", "nope", "--signature", "i32"], "no kernel named 'nope' (kernels in the file: scale, square_tile)"),
    (["--signature", "i32"], "say which kernel with --kernel NAME"),
    (["--kernel", "scale"], "--signature is needed"),
])
def test_mistakes_are_one_message_and_status_1(kernel_file, capsys, argv, words):
    rc, out, err = run_cli(capsys, "dump", kernel_file, *argv)
    assert rc == 1 and out == ""
    assert err.startswith("error: ") and words in err
    assert "Traceback" not in err


def test_an_error_raised_by_the_users_file_shows_only_the_users_frames(tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text("import transpiler\n\n\ndef helper():\n    raise ValueError('the user broke it')\n\n\nhelper()\n")
    rc, _, err = run_cli(capsys, "dump", str(bad), "--signature", "i32")
    assert rc == 1 and "ValueError: the user broke it" in err
    assert f'File "{bad}", line 5, in helper' in err
    assert "transpiler/cli" not in err and "kernel_file.py" not in err


def test_debug_environment_variable_shows_the_whole_traceback(kernel_file, capsys, monkeypatch):
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    rc, _, err = run_cli(capsys, "dump", kernel_file, "--kernel", "scale", "--signature", "*fp32,*fp32,i32,fp32")
    assert rc == 1 and "Traceback" in err and "kernel_file.py" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"transpiler {transpiler.__version__}"


def test_cache_info_counts_each_kind_and_clear_removes_only_ours(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRANSPILER_CACHE_MAX_MB", "3")
    files = {"a1.json": 300, "b2.json": 200, "a1.sm_90a.cubin": 5000, "x.marshal": 70, "autotune/k.json": 40,
             "notes.txt": 11}
    for name, size in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    rc, out, _ = run_cli(capsys, "cache", "info")
    assert rc == 0 and str(tmp_path) in out
    assert "size cap: 3.0 MiB (TRANSPILER_CACHE_MAX_MB" in out
    rows = {line.split("  ")[1].strip(): line for line in out.splitlines()[1:-1]}
    assert "2 files" in rows["generated CUDA sources"] and "500 B" in rows["generated CUDA sources"]
    assert "1 files" in rows["cubins"] and "4.9 KiB" in rows["cubins"]
    assert "1 files" in rows["autotuning choices"] and "1 files" in rows["other files (not ours, left alone)"]
    rc, out, _ = run_cli(capsys, "cache", "clear")
    assert rc == 0 and "removed 5 files" in out and "left 1 files" in out
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["notes.txt"]


def test_explain_runs_as_a_module_from_another_folder(kernel_file, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "transpiler", "explain", kernel_file, "--kernel", "scale",
                           "--signature", "*fp16:16,*fp16:16,i32:16,fp32", "-D", "BLOCK=512"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                                        os.environ.get("PYTHONPATH")]))))
    assert proc.returncode == 0, proc.stderr
    assert "kernel scale (cli_kernels.py)" in proc.stdout and "n: int32 (multiple of 16)" in proc.stdout


def test_a_dot_kernel_refuses_an_older_gpu_at_launch_time_compile(kernel_file):
    """The runtime's own check (what a launch on a Turing GPU reaches): faked arch, no GPU needed."""
    kernel = find_kernel(load_module(kernel_file), kernel_file, "square_tile")
    a = np.ones((32, 32), np.float16)
    variant = kernel.compiled_variant(a, a, np.ones((32, 32), np.float32), BLOCK=32)
    with pytest.raises(transpiler.LaunchError, match=r"needs a GPU of compute capability 8\.0 \(sm_80\)") as err:
        variant.cubin("sm_75")
    assert err.value.line == DOT_LINE
    variant.check_arch("sm_80")          # Ampere and newer pass the check
    variant.check_arch("sm_90a")
    scale = find_kernel(load_module(kernel_file), kernel_file, "scale")
    assert scale.compiled_variant(a.ravel(), a.ravel(), np.int32(5), np.float32(1), BLOCK=64).required_arch is None
