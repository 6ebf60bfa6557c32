"""Autotuning results on disk, so a new process reuses the config an earlier one found fastest.

One JSON file per (kernel source, toolchain, device, key value, candidate configs) under
`<cache dir>/autotune/`, holding the index of the chosen config among the candidates and every candidate's
time. Writes are atomic (`cache.write_json`): two processes tuning the same kernel at once each write a whole
entry and the last one wins. An entry that does not parse or does not match the candidates is ignored (and
replaced by the next tuning).
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
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("configs") != configs:
        return None
    best = data.get("best")
    if not isinstance(best, int) or isinstance(best, bool) or not 0 <= best < len(configs):
        return None
    return best


def store(path: Path, configs: list, best: int, timings_ms: list, key: tuple, kernel: str):
    """`timings_ms[i]` is the time of `configs[i]`, None when it failed."""
    cache.write_json(path, {"version": VERSION, "kernel": kernel, "key": repr(key), "configs": configs,
                            "best": best, "timings_ms": timings_ms})
