"""Every environment variable the package reads is accounted for (issue 16, item 6): one that changes the
generated code is part of the compile options (`transpiler.options.CompileOptions`), which go whole into every
cache key, memory and disk; every other one is listed here with what it changes instead. The inventory is read
from the package's source, so a variable added later fails this test until it is classified."""
import ast
from pathlib import Path

import pytest

import transpiler
from transpiler import options, targets

PACKAGE = Path(transpiler.__file__).resolve().parent
FOLDERS = [PACKAGE, PACKAGE.parent / "runtime"]

# Variables that change the generated CUDA (or the compile options it is built under) -> a value that is not
# the default.
CHANGES_THE_CODE = {"TRANSPILER_DEBUG": "1", "TRANSPILER_LINE_DIRECTIVES": "1", "TRANSPILER_WGMMA": "0",
                    **{name: "1" if default == "0" else "0" for name, default in targets.SWITCHES.items()}}

# Variables that change no generated code, and what they change instead.
ELSEWHERE = {
    "TRANSPILER_INTERPRET": "launches run on the CPU interpreter instead; nothing is compiled",
    "TRANSPILER_DUMP_DIR": "where copies of generated and failed sources are written",
    "TRANSPILER_CACHE_DIR": "where the cache is",
    "XDG_CACHE_HOME": "where the cache is, when TRANSPILER_CACHE_DIR is unset",
    "TRANSPILER_CACHE_MAX_MB": "the cache's size cap",
    "TRANSPILER_PRINT_AUTOTUNING": "whether the autotuner prints its choice",
    "CUDA_PATH": "where NVRTC finds CUDA's headers (the cubin, not the generated source)",
    "CUDA_HOME": "where NVRTC finds CUDA's headers (the cubin, not the generated source)",
    "TRANSPILER_NATIVE_LAUNCH": "whether kernel[grid] launches through the compiled launch path (the same launches)",
    "CC": "which C compiler builds the compiled launch path (its file name is in the built module's name)",
    "TRANSPILER_AUTODIFF_WRITES": "which gradient writes a derived backward makes: it changes the derived kernel's "
                                  "Python source (keyed in transpiler/autodiff/kernel.py), whose text is that "
                                  "kernel's own cache key",
}


def _names_read(tree):
    """Literal names in os.environ.get(...), os.environ[...], os.getenv(...) and `"X" in os.environ`."""
    def is_environ(node):
        return isinstance(node, ast.Attribute) and node.attr == "environ"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            if isinstance(f, ast.Attribute) and (f.attr in ("get", "setdefault", "pop") and is_environ(f.value)
                                                 or f.attr == "getenv"):
                yield node.args[0].value
        elif isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.slice, ast.Constant):
            yield node.slice.value
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                any(is_environ(c) for c in node.comparators):
            yield node.left.value


def _inventory():
    names = set(targets.SWITCHES)       # read through targets.switch(name), not by a literal
    for folder in FOLDERS:
        for path in folder.rglob("*.py"):
            names.update(n for n in _names_read(ast.parse(path.read_text())) if isinstance(n, str))
    return names


def test_every_environment_variable_read_is_classified():
    names = _inventory()
    assert {"TRANSPILER_DEBUG", "TRANSPILER_LINE_DIRECTIVES", "TRANSPILER_CACHE_DIR"} <= names   # the scan works
    unclassified = names - set(CHANGES_THE_CODE) - set(ELSEWHERE)
    assert not unclassified, f"classify these in {__file__}: {sorted(unclassified)}"
    assert not set(CHANGES_THE_CODE) & set(ELSEWHERE)


@pytest.mark.parametrize("name", sorted(CHANGES_THE_CODE))
def test_each_variable_that_changes_the_code_changes_the_compile_options(monkeypatch, name):
    for other in CHANGES_THE_CODE:
        monkeypatch.delenv(other, raising=False)
    default = options.from_env()
    monkeypatch.setenv(name, CHANGES_THE_CODE[name])
    assert options.from_env() != default


def test_the_compile_options_are_part_of_the_disk_key(monkeypatch, tmp_path):
    import numpy as np
    import transpiler.language as tl
    from transpiler.runtime import cache

    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path))
    keys = []
    real = cache.entry_key
    monkeypatch.setattr(cache, "entry_key", lambda parts: keys.append(parts) or real(parts))

    @transpiler.jit
    def copy(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)
    a = np.ones(8, np.float32)
    for name in CHANGES_THE_CODE:
        monkeypatch.delenv(name, raising=False)
    copy.cuda_source(a, a, 8, BLOCK=32)
    monkeypatch.setenv("TRANSPILER_WGMMA_CP_FENCE", "1")
    copy.cuda_source(a, a, 8, BLOCK=32)
    assert len(keys) == 2 and keys[0] != keys[1]
    assert options.from_env() in keys[1] and options.from_env() not in keys[0]
