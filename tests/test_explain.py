"""`kernel.explain(...)` and `python -m transpiler explain`: the decisions of a specialization, readable.

Pinned on softmax: the specialization, per line the vector width of the load and the store with the reason,
how each reduction crosses registers, lanes and warps, the layout per dimension, and the shared memory;
and the whole report of one specialization as a snapshot (regenerate with TRANSPILER_UPDATE_SNAPSHOTS=1).
"""
import os
import subprocess
import sys
from pathlib import Path

from example_specs import BY_NAME

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "explain_softmax_fp32_4000.txt"


def explain(name):
    spec = BY_NAME[name]
    return spec.kernel_obj.explain(*spec.make_args(), num_warps=spec.num_warps, **spec.constexprs)


def test_explain_softmax_names_kernel_and_specialization():
    text = explain("softmax_fp32_4000")
    assert text.startswith("kernel softmax_kernel (softmax.py), num_warps = 16 (512 threads per program)\n")
    for line in ("  IN: ptr<fp32> (16-byte aligned)", "  in_stride: int32 (multiple of 16)",
                 "  n_cols: int32 (multiple of 16)", "  BLOCK = 4096 (constexpr)"):
        assert line + "\n" in text


def test_explain_softmax_gives_vector_width_and_reason_per_memory_line():
    text = explain("softmax_fp32_4000")
    load = text.split("x = tl.load(IN + row * in_stride + cols")[1].split("  line ")[0]
    assert "load x fp32[4096] in L0: vector width 4 (16 bytes per access, 2 accesses per thread)" in load
    assert "mask uniform over each run" in load
    assert "pointer contiguity 4096, alignment 16 bytes" in load
    store = text.split("tl.store(OUT + row * out_stride + cols")[1].split("\nlayouts:")[0]
    assert "fp32[4096] in L0: vector width 4 (16 bytes per access, 2 accesses per thread)" in store


def test_explain_softmax_describes_reductions_and_shared_memory():
    text = explain("softmax_fp32_4000")
    crossing = ("8 registers combined in each thread, then 32 lanes by xor shuffles (1, 2, 4, 8, 16), then 16 warps "
                "through shared memory; result in a scalar")
    assert f"reduce max over dim 0 (4096 elements) of x fp32[4096] in L0: {crossing}" in text
    assert f"reduce add over dim 0 (4096 elements) of e fp32[4096] in L0: {crossing}" in text
    assert "L0: [4096], 8 registers per thread; dim 0 (4096): 8 registers in runs of 4 x 32 lanes x 16 warps" in text
    assert "bases: reg [(1), (2), (2048)] lane [(4), (8), (16), (32), (64)] warp [(128), (256), (512), (1024)]" in text
    assert "shared memory: 128 bytes per program:" in text   # two cross-warp reductions, 16 floats each
    assert text.count("(cross-warp reduction)") == 2


def test_explain_softmax_unaligned_rows_says_why_it_does_not_vectorize():
    text = explain("softmax_fp32_781")
    assert "  in_stride: int32 (no divisibility known)" in text
    assert "load x fp32[1024] in L0: vector width 1 (4 bytes per access, 8 accesses per thread)" in text
    assert "alignment 4 bytes" in text


def test_explain_reports_layout_conversion_through_shared_memory():
    text = explain("giou_loss_fp32")
    assert "convert the stored value to the coalesced layout" in text
    assert "valid: 512 x int1 = 512 bytes at tp_smem_stage (layout conversion, scratch)" in text


def test_explain_softmax_report_matches_snapshot():
    text = explain("softmax_fp32_4000")
    if os.environ.get("TRANSPILER_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text)
        return
    assert text == SNAPSHOT.read_text(), "explain report changed; regenerate with TRANSPILER_UPDATE_SNAPSHOTS=1"


def test_explain_command_line_prints_each_specialization_of_an_example():
    proc = subprocess.run([sys.executable, "-m", "transpiler", "explain", "examples/softmax.py", "--cpu-cases"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("kernel softmax_kernel (softmax.py)") == 3   # fp32 100 cols, fp32 pitch 64, fp16
    assert "vector width" in proc.stdout and "reduce max over dim 0" in proc.stdout
