"""The on-disk cache of generated CUDA and of its cubins, so a new process skips parsing, analysis and NVRTC for
kernels it compiled before.

Entries are named by a hash of everything that can change the generated code: the kernel's source and its
helpers' sources, the specialization, the launch options and this package's code generator (its files' names,
sizes and modification times: a stat per file, no reading, so a warm process pays well under a millisecond).
`<key>.json` holds the generated source, the parameter kinds and the dynamic shared memory a launch gives;
`<key>.<arch>.cubin` the NVRTC output for one architecture. Writes are atomic (temporary file + rename); an
unreadable entry is rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import os
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
    """Hash of this package's code generator: name, size and modification time of each source and template."""
    h = hashlib.sha256(__import__("transpiler").__version__.encode())
    runtime = Path(__file__).resolve().parent
    pkg = runtime.parent if runtime.parent.name == "transpiler" else Path(__import__("transpiler").__file__).parent
    folders = [pkg, runtime] + [p for p in (pkg / "templates", pkg.parent / "templates") if p.is_dir()]
    for folder in folders:
        for dirpath, dirnames, filenames in sorted(os.walk(folder)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".j2", ".cuh")):
                    st = os.stat(os.path.join(dirpath, name))
                    h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
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
    write(f"{key}.json", json.dumps(data).encode())


def load_cubin(key: str, arch: str):
    try:
        data = (cache_dir() / f"{key}.{arch}.cubin").read_bytes()
    except OSError:
        return None
    return data if data[:4] == b"\x7fELF" else None   # a truncated or foreign file: rebuild


def store_cubin(key: str, arch: str, cubin: bytes):
    write(f"{key}.{arch}.cubin", cubin)


def write(name: str, payload: bytes):
    """Store `payload` as the file `name` of the cache folder, atomically."""
    write_bytes(cache_dir() / name, payload)


def write_json(path: Path, data: dict):
    write_bytes(path, json.dumps(data).encode())


def write_bytes(path: Path, payload: bytes):
    """Write a file whole or not at all (temporary file + rename), so readers and concurrent writers never see
    half of one; the last writer wins. A cache that cannot be written is skipped."""
    import tempfile
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except OSError:
        # A read-only or full cache never breaks a launch.
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
