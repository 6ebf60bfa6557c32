"""The on-disk cache of generated CUDA, cubins, launch binders and autotuning results, so a new process skips
parsing, analysis, NVRTC and timing for kernels it met before; and how each entry is checked before it is used.

Names. Entries are named by a hash of everything that can change what they hold: the kernel's source and its
helpers' sources, the specialization, the launch and compile options (`transpiler.options`: the environment
variables that change generated code are read there) and this package's code generator (its files' names,
sizes and modification times: a stat per file, no reading, so a warm process pays well under a millisecond).
`<key>.json` holds the generated source, the parameter kinds and the dynamic shared memory a launch gives;
`<key>.<arch>.<toolchain>.cubin` the NVRTC output for one architecture, made by the NVRTC and CuPy that
`toolchain.cubin_fingerprint` names; `binder-*.marshal` a launch binder's code object;
`autotune/<key>.json` an autotuner's choice.

Integrity. Every file is one header line and the payload:
    tpcache 2 <sha256 of (file name, made-with, payload)> <made-with>\\n<payload>
`made-with` names the versions the entry was made with (this package, the Python implementation). A reader
(`read`) returns the payload only when the line parses, the versions are this process's and the digest
matches: a truncated, zeroed, overwritten or foreign file, or one copied under another entry's name (the name
is in the digest), is deleted and reported as missing, so the caller rebuilds it; nothing damaged is served.
`stats` counts what was served and dropped (tests and `bench/` read it).

Writes are atomic: a temporary file in the same folder, then `os.replace`, so readers and concurrent writers
(eight processes compiling one kernel) see a whole old entry, a whole new one, or none; a process killed
mid-write leaves only a `.tmp-*` file, which pruning removes. No fsync: a torn file after a power cut fails its
digest and is rebuilt. No file lock either (as in CuPy's and Triton's caches): entries are immutable values
of their key, so two processes compiling the same key at once write the same bytes and the last one wins;
a lock would only save the duplicate compile, at the price of a stale-lock failure mode on shared folders.

A folder that is read-only, full or vanished never breaks a launch: a failed write warns once per process
(`CacheWarning`) and the process keeps its results in memory (the kernel objects' own maps).

Size. `TRANSPILER_CACHE_MAX_MB` (default 2048; 0 turns pruning off) caps the folder: after writes, at most
every `PRUNE_EVERY_S` seconds or when a process has written a tenth of the cap, the least recently used files
go (a read refreshes its file's times, so LRU holds on noatime mounts too) until the folder is at 90% of the
cap.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
import warnings
from functools import lru_cache
from pathlib import Path

FORMAT = b"tpcache 2"
PRUNE_EVERY_S = 60.0
DEFAULT_MAX_MB = 2048

stats = {"served": 0, "dropped": 0, "written": 0, "write_failures": 0, "pruned": 0}


class CacheWarning(RuntimeWarning):
    """The disk cache could not be written; results stay in memory for this process."""


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


@lru_cache(maxsize=1)
def made_with() -> bytes:
    """The versions an entry is made with; an entry made with others is not read."""
    return f"transpiler-{__import__('transpiler').__version__},{sys.implementation.cache_tag}".encode()


# ---- the envelope ----------------------------------------------------------------------------------------

def _digest(name: str, versions: bytes, payload: bytes) -> bytes:
    h = hashlib.sha256(name.encode())
    h.update(b"\0" + versions + b"\0")
    h.update(payload)
    return h.hexdigest().encode()


def seal(name: str, payload: bytes) -> bytes:
    """The file content of entry `name` holding `payload`."""
    versions = made_with()
    return FORMAT + b" " + _digest(name, versions, payload) + b" " + versions + b"\n" + payload


def unseal(name: str, data: bytes):
    """The payload of entry `name` read as `data`, or None when the header, versions or digest do not match."""
    end = data.find(b"\n", 0, 256)
    if end < 0:
        return None
    fields = data[:end].split(b" ")
    if len(fields) != 4 or b" ".join(fields[:2]) != FORMAT or fields[3] != made_with():
        return None
    payload = data[end + 1:]
    return payload if fields[2] == _digest(name, fields[3], payload) else None


def read(path: Path):
    """The checked payload of the entry at `path`, or None (missing, or damaged: then it is deleted)."""
    try:
        with open(path, "rb") as f:
            inode = os.fstat(f.fileno()).st_ino
            data = f.read()
    except OSError:
        return None
    payload = unseal(path.name, data)
    if payload is None:
        _drop(path, inode)
        return None
    stats["served"] += 1
    try:
        os.utime(path)          # the LRU clock (atime alone is not kept on noatime / relatime mounts)
    except OSError:
        pass
    return payload


def _drop(path: Path, inode: int):
    """Delete a damaged entry, unless another process has meanwhile replaced it (a new inode)."""
    stats["dropped"] += 1
    try:
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass


def write_entry(path: Path, payload: bytes):
    """Store `payload` sealed as the entry at `path`, atomically (see the module docstring)."""
    write_bytes(path, seal(path.name, payload))


# ---- the entries ---------------------------------------------------------------------------------------

def read_json(path: Path):
    """The checked JSON object (a dict) of the entry at `path`, or None."""
    import json
    payload = read(path)
    try:
        data = json.loads(payload) if payload is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def load(key: str):
    """The variant entry `key` (a dict with its source), or None."""
    data = read_json(cache_dir() / f"{key}.json")
    return data if data is not None and "source" in data else None


def store(key: str, data: dict):
    import json
    write(f"{key}.json", json.dumps(data).encode())


def load_cubin(key: str, arch: str, toolchain: str):
    """The cubin of variant `key` for `arch` made by the toolchain named `toolchain`
    (`toolchain.cubin_fingerprint`: NVRTC's and CuPy's versions, the NVRTC options), or None."""
    return read(cache_dir() / f"{key}.{arch}.{toolchain}.cubin")


def load_any_cubin(key: str, arch: str):
    """A sound cubin of variant `key` for `arch` made by any toolchain (for a process without NVRTC, which can
    run a cached cubin but make none), or None."""
    for path in sorted(cache_dir().glob(f"{key}.{arch}.*.cubin")):
        cubin = read(path)
        if cubin is not None:
            return cubin
    return None


def store_cubin(key: str, arch: str, toolchain: str, cubin: bytes):
    write(f"{key}.{arch}.{toolchain}.cubin", cubin)


def load_named(name: str):
    """The payload of the entry `name` of the cache folder (binders), or None."""
    return read(cache_dir() / name)


def write(name: str, payload: bytes):
    """Store `payload` as the entry `name` of the cache folder."""
    write_entry(cache_dir() / name, payload)


def write_bytes(path: Path, data: bytes):
    """Write a file whole or not at all (temporary file + os.replace); the last writer wins. A cache that
    cannot be written is skipped with one warning per process."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        stats["write_failures"] += 1
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        _warn_once(path.parent, e)
        return
    stats["written"] += 1
    _maybe_prune(len(data))


_warned = []


def _warn_once(folder, error):
    if not _warned:
        _warned.append(folder)
        warnings.warn(f"transpiler: the kernel cache folder {folder} cannot be written ({error.strerror or error}); "
                      "compiled kernels stay in memory for this process (set TRANSPILER_CACHE_DIR to a writable "
                      "folder)", CacheWarning, stacklevel=3)


# ---- size cap and pruning ------------------------------------------------------------------------------

def max_bytes() -> int:
    try:
        return int(float(os.environ.get("TRANSPILER_CACHE_MAX_MB", DEFAULT_MAX_MB)) * 2**20)
    except ValueError:
        return DEFAULT_MAX_MB * 2**20


_prune_state = {"last": 0.0, "since": 0}


def _maybe_prune(written: int):
    cap = max_bytes()
    if cap <= 0:
        return
    state = _prune_state
    state["since"] += written
    now = time.monotonic()
    if now - state["last"] < PRUNE_EVERY_S and state["since"] < cap // 10:
        return
    state["last"], state["since"] = now, 0
    prune(cap)


def usage(folder: Path | None = None):
    """`(total bytes, [(last use, size, path)])` of the cache folder's files, subfolders included."""
    folder = folder or cache_dir()
    files, total = [], 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((max(st.st_atime, st.st_mtime), st.st_size, path))
            total += st.st_size
    return total, files


def prune(cap: int | None = None, folder: Path | None = None, stale_tmp_s: float = 3600.0) -> int:
    """Delete the least recently used files until the folder holds at most 90% of `cap` bytes, and temporary
    files older than `stale_tmp_s` (left by killed writers). Returns the number of files deleted."""
    cap = max_bytes() if cap is None else cap
    total, files = usage(folder)
    now, removed = time.time(), 0
    for used, size, path in files:
        if os.path.basename(path).startswith(".tmp-") and now - used > stale_tmp_s:
            removed += _remove(path)
            total -= size
    if cap > 0 and total > cap:
        target = cap * 9 // 10
        for used, size, path in sorted(files):
            if total <= target:
                break
            if not os.path.basename(path).startswith(".tmp-"):
                removed += _remove(path)
                total -= size
    stats["pruned"] += removed
    return removed


def _remove(path) -> int:
    try:
        os.unlink(path)
        return 1
    except OSError:
        return 0
