"""The on-disk cache of generated CUDA, so a new process skips parsing and analysis of kernels it compiled before.

Entries are JSON files named by a hash of everything that can change the generated code: the kernel's source
and its helpers' sources, the specialization, the launch options, the target architecture, this package's
version and its templates. Writes are atomic (temporary file + rename); an unreadable entry is rebuilt.
CuPy keeps the compiled cubins in its own cache, keyed by the source we hand it.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("TRANSPILER_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "transpiler"


@lru_cache(maxsize=1)
def toolchain_fingerprint() -> str:
    """Hash of this package's code generator (templates and Python sources) and its version."""
    from ..emit_cuda import templates_dir
    h = hashlib.sha256()
    runtime = Path(__file__).resolve().parent
    pkg = Path(__import__("transpiler").__file__).resolve().parent
    for folder in (templates_dir(), pkg, runtime):
        for p in sorted(folder.rglob("*")):
            if p.suffix in (".py", ".j2", ".cuh") and "__pycache__" not in p.parts:
                h.update(p.name.encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def entry_key(parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def load(key: str):
    path = cache_dir() / f"{key}.json"
    try:
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict) or "source" not in data:
            raise ValueError("malformed entry")
        return data
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # A corrupt or truncated entry: drop it and rebuild.
        try:
            path.unlink()
        except OSError:
            pass
        return None


def store(key: str, data: dict):
    write_json(cache_dir() / f"{key}.json", data)


def write_json(path: Path, data: dict):
    """Write an entry whole or not at all (temporary file + rename), so readers and concurrent writers never
    see half of one; the last writer wins."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        # A read-only or full cache never breaks a launch.
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
