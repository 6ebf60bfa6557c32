"""The sanitizer sweep's driver (bench/sanitize.py) on the CPU: which cases it covers, how it reads
compute-sanitizer's logs, and that a run that did not finish is never counted as clean."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import sanitize  # noqa: E402

MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at add_kernel+0x1b0
=========     by thread (5,0,0) in block (2,0,0)
=========     Address 0x7f00 is out of bounds
=========
========= Invalid __global__ read of size 16 bytes
=========     at softmax_kernel(float *, float *, int)+0x70 in /tmp/softmax_kernel.cu:41
=========     by thread (0,0,0) in block (0,0,0)
=========
========= Invalid __global__ write of size 4 bytes
=========     at add_kernel+0x1c0
=========
========= ERROR SUMMARY: 3 errors
"""

RACECHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce_cols_kernel+0x2d0 in /tmp/k.cu:80
=========     and Read access at reduce_cols_kernel+0x310 in /tmp/k.cu:84 [512 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_errors_are_counted_per_kernel_from_the_at_line(tmp_path):
    log = tmp_path / "m.log"
    log.write_text(MEMCHECK_LOG)
    assert sanitize._parse_log(log) == ({"add_kernel": 2, "softmax_kernel": 1}, 3)
    log.write_text(RACECHECK_LOG)
    assert sanitize._parse_log(log) == ({"reduce_cols_kernel": 1}, 1)
    log.write_text("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
    assert sanitize._parse_log(log) == ({}, 0)


def _result(tool, status, kernels, errors=None, total=0, cases=None):
    return dict(tool=tool, group="features", names=["add_fp32"], status=status, seconds=1.0,
                cases=cases or {}, kernels=kernels, errors=errors or {}, total_errors=total, log="")


def test_the_table_shows_errors_per_tool_and_kernel_and_a_timeout_is_not_clean(tmp_path):
    results = [_result("plain", "finished", ["add_kernel"], cases={"add_fp32": "ok"}),
               _result("memcheck", "finished", ["add_kernel", "cast_kernel"], {"add_kernel": 2}, 2),
               _result("racecheck", "timeout", ["add_kernel"])]
    clean, table = sanitize.summarize(results, ["memcheck", "racecheck"], tmp_path)
    assert not clean
    assert "| add_kernel | 2 | timeout |" in table and "| cast_kernel | 0 | - |" in table
    assert (tmp_path / "summary.md").read_text().startswith("# Sanitizer sweep")
    clean, _ = sanitize.summarize([_result("memcheck", "finished", ["add_kernel"])], ["memcheck"], tmp_path)
    assert clean
    clean, _ = sanitize.summarize([_result("memcheck", "not run (budget)", [])], ["memcheck"], tmp_path)
    assert not clean


def test_a_wrong_result_without_a_sanitizer_makes_the_sweep_fail(tmp_path):
    results = [_result("plain", "finished", ["add_kernel"], cases={"add_fp32": "wrong output 2"}),
               _result("memcheck", "finished", ["add_kernel"])]
    clean, table = sanitize.summarize(results, ["memcheck"], tmp_path)
    assert not clean and "features add_fp32: wrong output 2" in table


@pytest.mark.parametrize("group", sanitize.GROUPS)
def test_every_group_has_cases(group):
    names = sanitize.case_names(group)
    assert names and len(set(names)) == len(names)


def test_the_examples_group_covers_every_example():
    examples = {p.stem for p in (Path(sanitize.ROOT) / "examples").glob("*.py") if not p.stem.startswith("_")}
    assert {n.split(":")[0] for n in sanitize.case_names("examples")} == examples


def _control(name, tool, errors, status="finished"):
    return dict(tool=tool, group="controls", names=[name], status=status, seconds=1.0, cases={},
                kernels=[name], errors=errors, total_errors=sum(errors.values()), log="")


def test_a_sweep_is_trusted_only_when_every_planted_fault_is_caught(tmp_path):
    sound = [_result("memcheck", "finished", ["add_kernel"])]
    caught = [_control("planted_oob_store", "memcheck", {"planted_oob_store": 3}),
              _control("planted_uninit_read", "initcheck", {"planted_uninit_read": 1})]
    clean, table = sanitize.summarize(sound + caught, ["memcheck", "initcheck"], tmp_path)
    assert clean and "planted_oob_store under memcheck: caught (3)" in table
    assert "\n| planted_oob_store |" not in table        # controls stay out of the per-kernel table
    missed = [caught[0], _control("planted_uninit_read", "initcheck", {})]
    clean, table = sanitize.summarize(sound + missed, ["memcheck", "initcheck"], tmp_path)
    assert not clean and "planted_uninit_read under initcheck: MISSED (finished)" in table


def test_controls_are_not_run_as_ordinary_units():
    assert all(group != "controls" for group, _ in sanitize.units(["controls", "examples"], 24))
    assert sanitize.case_names("controls") == list(sanitize.CONTROLS)


def test_every_gpu_test_file_is_swept_or_left_out_with_a_reason():
    tests = Path(sanitize.ROOT) / "tests"
    gpu_files = {p.stem for p in tests.glob("test_*gpu*.py")}
    assert gpu_files - set(sanitize.TEST_FILES) - set(sanitize.NOT_SWEPT) == set()
    assert not set(sanitize.TEST_FILES) & set(sanitize.NOT_SWEPT)


def test_test_file_units_run_without_triton(tmp_path):
    """The files group hides Triton: importorskip skips (a test's Triton twin), so only our kernels run."""
    import subprocess
    probe = "import pytest\ntry:\n    pytest.importorskip('triton')\nexcept BaseException as e:\n    print(type(e).__name__)\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={"PYTHONPATH": str(sanitize.NO_TRITON), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "Skipped", out.stderr


def test_slow_test_files_are_split_in_shards_that_together_hold_every_test():
    names = sanitize.case_names("files")
    shards = [n for n in names if n.startswith("test_gpu_row_ring@")]
    assert len(shards) == -(-sanitize.FILE_SECONDS["test_gpu_row_ring"] // sanitize.SHARD_SECONDS) > 1
    assert "test_gpu_inline_asm" in names                     # a fast file stays whole

    class Config:
        def __init__(self):
            self.hook = self
            self.deselected = []

        def pytest_deselected(self, items):
            self.deselected += items
    items = [f"test_{i}" for i in range(23)]
    kept = []
    for index in range(5):
        config, mine = Config(), list(items)
        sanitize._Shard(index, 5).pytest_collection_modifyitems(config, mine)
        assert sorted(mine + config.deselected) == sorted(items)
        kept += mine
    assert sorted(kept) == sorted(items)                       # each test in exactly one shard


def test_a_units_tools_run_after_its_plain_run_and_the_longest_units_go_first():
    import threading
    import time
    log, lock = [], threading.Lock()
    seconds = {"long": 0.06, "mid": 0.03, "short": 0.0, "hangs": 0.0, "planted_oob_store": 0.0}

    def run(tool, group, names):
        with lock:
            log.append(("start", tool, names[0]))
        time.sleep(seconds[names[0]] if tool is None else 0.01)
        status = "timeout" if names[0] == "hangs" and tool is None else "finished"
        with lock:
            log.append(("end", tool, names[0]))
        return _result(tool or "plain", status, [], cases={}) | dict(group=group, names=names,
                                                                seconds=seconds[names[0]])
    todo = [("files", ["short"]), ("files", ["hangs"]), ("files", ["mid"]), ("files", ["long"])]
    controls = [("memcheck", "controls", ["planted_oob_store"])]
    saved = dict(sanitize.FILE_SECONDS)
    sanitize.FILE_SECONDS.update(long=60, mid=30, short=1, hangs=2)
    try:
        results = sanitize.schedule(todo, ["memcheck", "racecheck"], controls, 1, run)
        crashed = sanitize.schedule(todo[:1], ["memcheck"], [], 3, lambda *a: 1 / 0)   # no thread left waiting
    finally:
        sanitize.FILE_SECONDS.clear()
        sanitize.FILE_SECONDS.update(saved)
    starts = [(tool, name) for kind, tool, name in log if kind == "start"]
    assert starts[0] == ("memcheck", "planted_oob_store")
    assert starts[1] == (None, "long")                         # longest first, by the estimate
    for _, (name,) in todo:                                    # each unit: plain, then its tools
        plain = starts.index((None, name))
        assert all(starts.index((t, name)) > plain for t in ("memcheck", "racecheck") if (t, name) in starts)
    assert starts.index(("memcheck", "long")) < starts.index((None, "short"))  # a finished unit's tools go first
    assert ("memcheck", "hangs") not in starts                 # its plain run timed out: not run, and said
    statuses = {(r["tool"], r["names"][0]): r["status"] for r in results}
    assert statuses[("racecheck", "hangs")] == "not run (plain timeout)"
    assert len(results) == 1 + 4 * 3                           # the control, every unit under plain and 2 tools
    assert [r["tool"] for r in results[:5]] == ["memcheck", "plain", "plain", "plain", "plain"]
    assert [(r["tool"], r["status"][:12]) for r in crashed] == [("plain", "driver error"), ("memcheck", "driver error")]


def test_small_test_files_share_units_and_every_file_is_in_exactly_one():
    names = sanitize.case_names("files")
    units = sanitize._file_units(names)
    assert sorted(n for unit in units for n in unit) == sorted(names)
    for unit in units:
        assert len(unit) == 1 or (all("@" not in n for n in unit)
                                   and sanitize.estimate("files", unit) <= sanitize.SHARD_SECONDS)
    assert any(len(unit) > 1 for unit in units)
    assert [u for g, u in sanitize.units(["files"], 40)] == units


def test_a_units_test_files_run_in_one_session_each_file_with_its_own_status(tmp_path, monkeypatch):
    tests = tmp_path / "tests"
    tests.mkdir()
    gpu = "import pytest\npytestmark = pytest.mark.gpu\n"
    (tests / "test_gpu_good.py").write_text(gpu + "def test_one():\n    assert 1\n")
    (tests / "test_gpu_bad.py").write_text(gpu + "def test_one():\n    assert 0\n\ndef test_two():\n    pass\n")
    (tests / "test_gpu_none.py").write_text("def test_not_gpu():\n    pass\n")
    (tests / "test_gpu_broken.py").write_text("import no_such_module_here\n")
    (tests / "test_gpu_many.py").write_text(gpu + "".join(f"def test_{i}():\n    pass\n" for i in range(5)))
    monkeypatch.setattr(sanitize, "ROOT", tmp_path)
    statuses = sanitize._run_test_files(["test_gpu_good", "test_gpu_bad", "test_gpu_none"])
    assert statuses["test_gpu_good"] == "ok" and statuses["test_gpu_none"] == "skipped"
    assert statuses["test_gpu_bad"].startswith("wrong 1 failed")
    statuses = sanitize._run_test_files(["test_gpu_good", "test_gpu_broken"])
    assert statuses["test_gpu_broken"].startswith("wrong") and statuses["test_gpu_good"] == "ok"   # one broken file
    outcomes = sanitize._Outcomes()
    monkeypatch.setattr(sanitize, "_Outcomes", lambda: outcomes)
    assert sanitize._run_test_files(["test_gpu_many@1/2"]) == {"test_gpu_many@1/2": "ok"}
    assert outcomes.passed["test_gpu_many"] == 2                # tests 1 and 3 of 0..4
