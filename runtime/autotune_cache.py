"""Autotuning results on disk, so a new process reuses the config an earlier one found fastest.

One JSON file per (kernel source, toolchain, device, key value, candidate configs) under
`<cache dir>/autotune/`, holding the index of the chosen config among the candidates and every candidate's
time. Each entry is sealed and checked like every cache entry (`cache.write_entry` / `cache.read`: a digest
and the versions it was made with); writes are atomic: two processes tuning the same kernel at once each write
a whole entry and the last one wins. An entry that is damaged, does not parse or does not match the candidates
is ignored (and replaced by the next tuning).
"""
from __future__ import annotations

import json
from pathlib import Path

from . import cache

VERSION = 1


def entry_path(source_hash: str, device: str, key: tuple, configs: list) -> Path:
    name = cache.entry_key(("autotune", VERSION, source_hash, cache.toolchain_fingerprint(), device, key, configs))
    return cache.cache_dir() / "autotune" / f"{name}.json"


def load(path: Path, configs: list):
    """The index of the cached best config among `configs` (their descriptions), or None."""
    data = cache.read_json(path)
    if data is None or data.get("version") != VERSION or data.get("configs") != configs:
        return None
    best = data.get("best")
    if not isinstance(best, int) or isinstance(best, bool) or not 0 <= best < len(configs):
        return None
    return best


def store(path: Path, configs: list, best: int, timings_ms: list, key: tuple, kernel: str):
    """`timings_ms[i]` is the time of `configs[i]`, None when it failed."""
    cache.write_entry(path, json.dumps({"version": VERSION, "kernel": kernel, "key": repr(key), "configs": configs,
                                        "best": best, "timings_ms": timings_ms}).encode())
