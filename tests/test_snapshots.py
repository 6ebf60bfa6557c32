"""The generated `.cu` of every example specialization equals its snapshot in `tests/snapshots/`.

Generated code is reviewed like source: a change to codegen shows up as a diff of these files. After an
intended change, regenerate them and commit them with the change:

    TRANSPILER_UPDATE_SNAPSHOTS=1 python -m pytest -q tests/test_snapshots.py
"""
import difflib
import os
from pathlib import Path

import pytest

from example_specs import SPECS, source_of

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("TRANSPILER_UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_generated_cuda_matches_snapshot(spec):
    source = source_of(spec)
    path = SNAPSHOTS / f"{spec.name}.cu"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(source)
        return
    assert path.exists(), f"no snapshot {path.name}; create it with TRANSPILER_UPDATE_SNAPSHOTS=1"
    expected = path.read_text()
    if source != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), source.splitlines(True),
                                            f"snapshots/{path.name}", "generated", n=2))
        pytest.fail(f"generated CUDA differs from snapshots/{path.name} (if intended, rerun with "
                    f"TRANSPILER_UPDATE_SNAPSHOTS=1 and commit the new snapshot):\n{diff[:6000]}")


def test_no_unused_snapshots():
    """A snapshot whose spec was removed would silently rot."""
    names = {s.name for s in SPECS}
    stale = sorted(p.name for p in SNAPSHOTS.glob("*.cu") if p.stem not in names)
    assert not stale, f"snapshots without a spec: {stale}"


def test_generated_cuda_has_no_machine_specific_text():
    """No absolute paths or home folders leak into the generated source (they would break the snapshots)."""
    for spec in SPECS:
        source = source_of(spec)
        assert str(Path(__file__).resolve().parent.parent) not in source, spec.name
        assert os.path.expanduser("~") + "/" not in source, spec.name


def test_no_snapshot_line_is_over_120_columns():
    """Issue 15: the emitted `.cu` keeps within 120 columns (emit_cuda/text.py `break_long_lines`), the matmul and
    attention ones included."""
    long = {path.name: [n for n, line in enumerate(path.read_text().split("\n"), 1) if len(line) > 120]
            for path in sorted(SNAPSHOTS.glob("*.cu"))}
    assert len(long) >= 10 and "attention_fp16_d128_causal_sm90a.cu" in long
    assert not {name: lines for name, lines in long.items() if lines}
