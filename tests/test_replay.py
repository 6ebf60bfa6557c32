"""bench/replay.py: the recorder names variants by what selects them, and `diff` lists only differences."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import replay  # noqa: E402


def _write(folder, target, stem, text):
    path = folder / target / f"{stem}.cu"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_diff_lists_only_changed_added_and_removed_variants(tmp_path, capsys):
    before, after = tmp_path / "before", tmp_path / "after"
    _write(before, "sm_80", "m.same-aaa-1111", "same\n")
    _write(after, "sm_80", "m.same-aaa-1111", "same\n")
    _write(before, "sm_90a", "m.changed-bbb-2222", "line one\nold line\n")
    _write(after, "sm_90a", "m.changed-bbb-3333", "line one\nnew line\n")
    _write(before, "sm_80", "m.gone-ccc-4444", "x\n")
    _write(after, "sm_80", "m.new-ddd-5555", "y\n")
    assert replay.diff(before, after) == 1
    out = capsys.readouterr().out
    assert "-old line" in out and "+new line" in out
    assert "only before: sm_80/m.gone-ccc" in out and "only after: sm_80/m.new-ddd" in out
    assert "m.same" not in out
    assert "1 variants identical, 1 changed, 1 only before, 1 only after" in out


def test_identical_folders_diff_empty(tmp_path, capsys):
    for side in ("a", "b"):
        _write(tmp_path / side, "sm_80", "k-abc-0001", "text\n")
        _write(tmp_path / side, "sm_90a", "k-abc-0002", "other\n")
    assert replay.diff(tmp_path / "a", tmp_path / "b") == 0
    assert "2 variants identical, 0 changed" in capsys.readouterr().out


def test_recording_keeps_each_distinct_source_of_one_variant_name(tmp_path, capsys):
    """Two closures of one kernel share its name and source hash; both sources are kept and compared as a set."""
    _write(tmp_path / "a", "sm_80", "k-abc-0001", "one\n")
    _write(tmp_path / "a", "sm_80", "k-abc-0002", "two\n")
    _write(tmp_path / "b", "sm_80", "k-abc-0002", "two\n")
    _write(tmp_path / "b", "sm_80", "k-abc-0001", "one\n")
    assert replay.diff(tmp_path / "a", tmp_path / "b") == 0
    _write(tmp_path / "b", "sm_80", "k-abc-0003", "three\n")
    assert replay.diff(tmp_path / "a", tmp_path / "b") == 1
    assert "+three" in capsys.readouterr().out


def test_variant_identity_ignores_addresses_and_the_checkout_path():
    class K:
        def source_hash(self):
            return "h"
    one = replay.variant_identity(K(), ("f", "<function f at 0x7f00>"), 4, 3, "opts", None)
    from transpiler.options import CompileOptions
    # the spelling recordings made before CompileOptions carried the launch options keep matching
    assert replay.options_text(CompileOptions(num_warps=8, arch="sm_90a")) == \
        "CompileOptions(debug=False, line_directives=False, codegen_switches=())"
    two = replay.variant_identity(K(), ("f", "<function f at 0x7e11>"), 4, 3, "opts", None)
    assert one == two
    assert replay.variant_identity(K(), ("f",), 8, 3, "opts", None) != replay.variant_identity(K(), ("f",), 4, 3,
                                                                                               "opts", None)


def test_object_addresses_in_a_source_are_not_a_difference(tmp_path):
    _write(tmp_path / "a", "sm_80", "k-abc-0001", "// FNS = (<function abs at 0x7f98b423dda0>,)\n")
    _write(tmp_path / "b", "sm_80", "k-abc-0002", "// FNS = (<function abs at 0x7f9717f32840>,)\n")
    assert replay.diff(tmp_path / "a", tmp_path / "b") == 0


def test_the_other_targets_source_is_made_without_a_build_event(monkeypatch):
    """The recorder's second generation (the other target) sends no build event and calls no `Kernel._generate`,
    so a test counting its kernel's generations or events sees only its own while a recording runs."""
    import dataclasses
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from example_specs import BY_NAME, specialization_key
    from transpiler.runtime import build_events
    spec = BY_NAME["softmax_fp32_4000"]
    kernel = spec.kernel_obj
    key, values = specialization_key(kernel, spec.make_args(), spec.constexprs, spec.num_warps)
    opts = kernel.variant_options(key, spec.num_warps, spec.num_stages, None)
    want = {arch: kernel._generate(key, values, dataclasses.replace(opts, arch=arch)).source
            for arch in (None, "sm_90a")}
    events = []
    stop = build_events.subscribe(events.append)
    monkeypatch.setattr(type(kernel), "_generate", lambda *a: pytest.fail("Kernel._generate called"))
    try:
        got = {arch: replay.quiet_source(kernel, key, values, dataclasses.replace(opts, arch=arch))
               for arch in (None, "sm_90a")}
    finally:
        stop()
    assert got == want and not events
