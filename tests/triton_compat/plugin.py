"""pytest plugin that runs Triton's language tests against transpiler (load with `-p triton_compat.plugin`).

It installs the `triton` shim before the test module is imported, and gives the module what Triton's own
conftest gives it: the `device` fixture (`--device cpu|cuda`). It also
  - skips the test functions of `skip_list.SKIPS` (Triton-internal checks), with their reason;
  - turns a read of Triton's internals after the test's kernels ran (`shim.TritonInternals`) into a skip whose
    reason says so, so the summary counts those apart from plain passes (some tests compare results before
    reading Triton's IR, some only after: see docs/compatibility.md);
  - replaces the module's `patch_kernel` helper by one that makes the same text substitution but registers the
    patched source (our compiler reads kernels' source; `exec` of a string leaves none to read);
  - keeps at most TRITON_COMPAT_MAX_PER_FUNCTION parametrizations of each test function, evenly spread
    (a sample for a time-limited run);
  - stops a test after TRITON_COMPAT_TEST_TIMEOUT seconds (SIGALRM) and skips tests once the wall-clock budget
    TRITON_COMPAT_DEADLINE (seconds since the epoch) has passed;
  - loads Triton's test helpers from the file TRITON_COMPAT_HELPERS as `triton._internal_testing`;
  - writes one record per test to the JSON file TRITON_COMPAT_REPORT: node id, function, outcome, and for
    failures the exception type and the first line of its message.
"""
from __future__ import annotations

import inspect
import json
import os
import signal
import sys
import textwrap
import time

import pytest

from . import shim


def _initialize_torch_cuda_without_triton():
    """torch initializes CUDA lazily and then looks for Triton (`importlib.util.find_spec("triton")`) to register
    kernels of its own; it must neither find the real Triton nor the shim. A `None` entry in sys.modules makes
    find_spec answer "not installed", so CUDA is initialized now, before the shim takes the name."""
    previous = sys.modules.get("triton", "absent")
    sys.modules["triton"] = None
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.init()
    except ImportError:
        pass
    finally:
        if previous == "absent":
            del sys.modules["triton"]
        else:
            sys.modules["triton"] = previous


_initialize_torch_cuda_without_triton()
shim.install()
if os.environ.get("TRITON_COMPAT_HELPERS"):
    shim.load_test_helpers(os.environ["TRITON_COMPAT_HELPERS"])

from .skip_list import SKIPS  # noqa: E402

_records: dict = {}


class TestTimeout(Exception):
    """The per-test time limit ran out."""


def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cuda", help="device string the tests put tensors on")


@pytest.fixture
def device(request):
    return request.config.getoption("--device")


def patch_kernel(template, to_replace):
    """The test module's helper, same substitution: the kernel's text with each key replaced by its value."""
    source = textwrap.dedent(inspect.getsource(template.fn))
    for key, value in to_replace.items():
        source = source.replace(key, value)
    return shim.function_from_source(source, template.fn.__globals__, template.fn.__name__)


def _evenly_spaced(items, limit):
    """At most `limit` of a function's parametrizations, spread over its whole parameter list."""
    if len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def _sample(config, items):
    limit = int(os.environ.get("TRITON_COMPAT_MAX_PER_FUNCTION", "0") or 0)
    if not limit:
        return
    groups: dict = {}
    for item in items:
        groups.setdefault(getattr(item, "originalname", item.name), []).append(item)
    kept = {id(i) for group in groups.values() for i in _evenly_spaced(group, limit)}
    config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
    items[:] = [i for i in items if id(i) in kept]


def pytest_collection_modifyitems(config, items):
    _sample(config, items)
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "patch_kernel") and module.patch_kernel is not patch_kernel:
            module.patch_kernel = patch_kernel
        reason = SKIPS.get(getattr(item, "originalname", item.name))
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"Triton internals: {reason}"))


def _on_alarm(signum, frame):
    raise TestTimeout(f"test ran past {os.environ.get('TRITON_COMPAT_TEST_TIMEOUT')} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    deadline = float(os.environ.get("TRITON_COMPAT_DEADLINE", "0") or 0)
    if deadline and time.time() > deadline:
        pytest.skip("time budget of the run spent")
    limit = int(os.environ.get("TRITON_COMPAT_TEST_TIMEOUT", "0") or 0)
    if limit:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(limit)
    try:
        yield
    finally:
        if limit:
            signal.alarm(0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(shim.TritonInternals):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1], f"Skipped: the kernels ran, then the test "
                                                             f"read {call.excinfo.value}")
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _record(item, report, call)


def _record(item, report, call):
    entry = {"function": getattr(item, "originalname", item.name), "outcome": report.outcome}
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        entry["reason"] = report.longrepr[2]
    if report.outcome == "failed" and call.excinfo is not None:
        value = call.excinfo.value
        text = str(value).strip().splitlines()
        entry["error"] = type(value).__name__
        entry["message"] = text[0][:300] if text else ""
        cause = getattr(value, "__cause__", None)
        if cause is not None:
            entry["cause"] = f"{type(cause).__name__}: {str(cause).strip()[:200]}"
    _records[item.nodeid] = entry


def pytest_configure(config):
    config.addinivalue_line("markers", "interpreter: Triton runs this test under its interpreter too")


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TRITON_COMPAT_REPORT")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if path and worker:
        path = f"{path}.{worker}"       # one file per xdist worker; the runner merges them
    if path and _records:
        with open(path, "w") as f:
            json.dump(_records, f, indent=1)
