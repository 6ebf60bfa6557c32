"""What a cubin depends on besides its source and options: NVRTC's version (ptxas is inside it) and CuPy's (its
NVRTC options' include folders and the headers it ships), named by `cubin_fingerprint(arch)` for the
cubin's cache key, so a cache folder shared by two environments, or kept across an upgrade, never serves one
NVRTC's cubin to another. The driver's version is not part of it: a cubin is machine code the driver loads as it
is (one made by an NVRTC newer than the driver is refused at load, and `CompiledVariant._load` makes it again).

Cost: asking NVRTC its version loads libnvrtc (28 ms on this project's CPU machine), which a warm process that
finds its cubins on disk never does otherwise. So the answer is remembered in the cache folder with the
library's path, size and modification time, in an entry named after what selects the library in this
environment (sys.prefix, CuPy's location and version, CUDA_PATH, CUDA_HOME, LD_LIBRARY_PATH); a later process
trusts it when a stat of that library agrees, else it asks NVRTC. A process that compiles (NVRTC loaded anyway)
asks NVRTC.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import warnings

from . import cache

_SELECTORS = ("CUDA_PATH", "CUDA_HOME", "LD_LIBRARY_PATH")


@functools.lru_cache(maxsize=1)
def _cupy_identity() -> str:
    """CuPy's version and location, found without importing it (a torch-only process that loads its cubins from
    the disk cache never imports CuPy): its `_version.py` text, else its `__init__.py`'s size and time."""
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.origin:
        return "no cupy"
    folder = os.path.dirname(spec.origin)
    try:
        with open(os.path.join(folder, "_version.py"), "rb") as f:
            what = hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        st = os.stat(spec.origin)
        what = f"{st.st_size}:{st.st_mtime_ns}"
    return f"{what}@{folder}"


def _stamp_name() -> str:
    what = [sys.prefix, _cupy_identity()] + [os.environ.get(name, "") for name in _SELECTORS]
    return "nvrtc-" + hashlib.sha256("\0".join(what).encode()).hexdigest()[:24] + ".json"


def _loaded_library():
    """(path, size, mtime_ns) of the libnvrtc this process has loaded (Linux: /proc/self/maps), or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[-1]
                if "libnvrtc.so" in os.path.basename(path) and "builtins" not in path:
                    st = os.stat(path)
                    return path, st.st_size, st.st_mtime_ns
    except (OSError, IndexError):
        pass
    return None


def _asked_version() -> str:
    """NVRTC's own answer (loads the library)."""
    from cupy.cuda import nvrtc
    return "%d.%d" % tuple(nvrtc.getVersion())


def _remember(version: str):
    """Keep `version` for later processes of this environment, next to the stat of the library this process
    loaded; best effort: a cache that cannot be written (it warns for its own entries) changes nothing here."""
    library = _loaded_library()
    if library is None:
        return
    path, size, mtime = library
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cache.write(_stamp_name(), json.dumps({"path": path, "size": size, "mtime_ns": mtime,
                                                   "version": version}).encode())
    except Exception:       # never let the stamp change the answer
        pass


def _remembered_version():
    """The version a previous process asked for this environment's NVRTC, when its library is unchanged."""
    payload = cache.load_named(_stamp_name())
    if payload is None:
        return None
    try:
        stamp = json.loads(payload)
        st = os.stat(stamp["path"])
    except (ValueError, KeyError, TypeError, OSError):
        return None
    return stamp["version"] if (st.st_size, st.st_mtime_ns) == (stamp["size"], stamp["mtime_ns"]) else None


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> str:
    """"major.minor" of the NVRTC this process compiles with ("none" when there is none)."""
    if "cupy.cuda.nvrtc" not in sys.modules or _loaded_library() is None:
        remembered = _remembered_version()
        if remembered is not None:
            return remembered
    try:
        version = _asked_version()
    except Exception:       # no NVRTC here: nothing is compiled, and no cubin made elsewhere matches
        return "none"
    _remember(version)
    return version


@functools.lru_cache(maxsize=None)
def cubin_fingerprint(arch: str) -> str:
    """A short name of everything besides the source and our own files (`cache.toolchain_fingerprint`) that
    makes a cubin for `arch`: NVRTC's version, and CuPy's, which decides the NVRTC options' include folders and
    the headers in them."""
    what = f"{arch}; nvrtc {nvrtc_version()}; cupy {_cupy_identity()}"
    return hashlib.sha256(what.encode()).hexdigest()[:12]
