"""Jinja's compiled templates kept on disk, so a process that generates CUDA does not compile the emitter's
templates again (`ops.j2`, `dot.j2`, `kernel.cu.j2`, ...: 130-200 ms of the attention kernel's cold emission on
this project's CPU machine, measured by compiling them in a fresh process).

Two places: the user's cache folder, and, for the emitter's environment, the installation's own
`templates/__pycache__` (as Python keeps a module's bytecode beside it): written by `prime()` (what an install or
`bench/compile_time.py` runs, like `compileall` for the modules) or by the first process that compiles them where
that folder is writable, quietly skipped where it is not (site-packages). So a cold compile on an empty cache
folder does not compile the compiler's own templates, as it does not compile its modules.

Jinja's own `BytecodeCache` protocol, with our entries underneath: each is sealed with a digest (`cache.py`), so
no damaged file reaches `marshal`; Jinja itself checks the template source's checksum and its own and Python's
bytecode version in every entry. The runtime installs it (`install`) before its first generation; the emitter
knows nothing of it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import jinja2

from . import cache


class SealedBytecodeCache(jinja2.BytecodeCache):
    def __init__(self, installation: Path | None = None):
        self.installation = installation

    def _installed(self, bucket) -> Path | None:
        return None if self.installation is None else self.installation / f"{bucket.key}.jinja"

    def load_bytecode(self, bucket):
        payload = cache.load_named(f"templates/{bucket.key}.jinja")
        installed = self._installed(bucket)
        if payload is None and installed is not None and installed.exists():
            payload = cache.unseal(installed.name, installed.read_bytes())
        if payload is not None:
            bucket.bytecode_from_string(payload)

    def dump_bytecode(self, bucket):
        payload = bucket.bytecode_to_string()
        cache.write(f"templates/{bucket.key}.jinja", payload)
        installed = self._installed(bucket)
        if installed is not None:
            _write_quietly(installed, cache.seal(installed.name, payload))


def _write_quietly(path: Path, data: bytes):
    """Atomic write where the folder can be written; nothing (no warning) where it cannot."""
    try:
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)      # a full disk: no half-written temporary left in the installation
        except OSError:
            pass


def install(environment, installation: Path | None = None):
    """Give `environment` (the emitter's Jinja environment) the sealed disk cache, once; `installation`: the
    installation's folder for compiled templates (the emitter's: `installation_folder()`)."""
    if not isinstance(environment.bytecode_cache, SealedBytecodeCache):
        environment.bytecode_cache = SealedBytecodeCache(installation)


def installation_folder() -> Path:
    from ..emit_cuda.emitter import templates_dir
    return templates_dir() / "__pycache__"


def prime() -> int:
    """Compile every template of the emitter's environment into the installation's folder (and the cache
    folder); returns how many there are."""
    from ..emit_cuda.emitter import jinja_env
    environment = jinja_env()
    install(environment, installation_folder())
    names = environment.list_templates(filter_func=lambda name: name.endswith(".j2"))
    for name in names:
        environment.get_template(name)
    return len(names)
