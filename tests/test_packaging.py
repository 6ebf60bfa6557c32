"""The package list cannot drift from the source tree: setup.py discovers every package, and its package-data
globs cover every non-Python file the code reads (templates, headers). `.ci/run` builds and installs the wheel;
these checks fail earlier and say which folder or file a wheel would miss."""
from __future__ import annotations

import fnmatch
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def setup_module_of_checkout():
    spec = importlib.util.spec_from_file_location("transpiler_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only under __main__
    return module


def _import_name(folder: Path, mapped: dict) -> str:
    rel = folder.relative_to(ROOT)
    top, rest = rel.parts[0], rel.parts[1:]
    return ".".join((mapped.get(top, top),) + rest)


def _folders_with_python(top: Path):
    return sorted({p.parent for p in top.rglob("*.py") if "__pycache__" not in p.parts})


def test_every_folder_of_python_is_a_discovered_package(setup_module_of_checkout):
    packages, package_dir = setup_module_of_checkout.discover_packages()
    mapped = setup_module_of_checkout.MAPPED_FOLDERS
    expected = set()
    for top in ["transpiler", *mapped]:
        expected |= {_import_name(f, mapped) for f in _folders_with_python(ROOT / top)}
    assert expected - set(packages) == set(), "folders a wheel would leave out"
    assert {package_dir[name] for name in mapped.values()} == set(mapped)


def test_package_data_covers_every_template_and_header(setup_module_of_checkout):
    globs = setup_module_of_checkout.PACKAGE_DATA["transpiler.templates"]
    files = [p.name for p in (ROOT / "templates").iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert files, "templates/ is empty?"
    missed = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert missed == []


def test_demo_finds_its_examples_in_a_checkout():
    from transpiler.cli.demo import EXAMPLES, _examples_dir
    folder = _examples_dir()
    assert all((folder / f"{name}.py").is_file() for name in EXAMPLES)
    assert (folder / "_harness.py").is_file()


def test_no_other_package_data_outside_templates():
    """Non-Python files elsewhere in the package folders would not ship: keep them under templates/."""
    stray = [p for top in ("transpiler", "runtime") for p in (ROOT / top).rglob("*")
             if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert stray == []

