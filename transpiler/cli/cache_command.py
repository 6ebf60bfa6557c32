"""`python -m transpiler cache info|clear`: what the disk cache holds, and emptying it.

The kinds below are the files the runtime writes under `runtime/cache.py`'s folder; anything else there is
reported as "other" and never deleted (TRANSPILER_CACHE_DIR may point into a folder the user shares).
"""
from __future__ import annotations

import shutil
from pathlib import Path

# (what, glob relative to the cache folder)
CACHE_KINDS = (
    ("generated CUDA sources", "*.json"),
    ("cubins", "*.cubin"),
    ("launch binders", "*.marshal"),
    ("autotuning choices", "autotune/*.json"),
    ("sources that failed to compile", "failed/*"),
    ("unfinished writes", ".tmp-*"),
)


def _files_by_kind(folder: Path) -> list:
    seen, out = set(), []
    for what, pattern in CACHE_KINDS:
        files = [p for p in folder.glob(pattern) if p.is_file() and p not in seen]
        seen.update(files)
        out.append((what, files))
    other = [p for p in folder.rglob("*") if p.is_file() and p not in seen]
    return out, other


def _size(files) -> int:
    total = 0
    for p in files:
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def cache_info(folder: Path) -> str:
    lines = [f"cache folder: {folder} (TRANSPILER_CACHE_DIR sets it)"]
    if not folder.is_dir():
        return lines[0] + "\n  (empty: the folder does not exist yet)\n"
    kinds, other = _files_by_kind(folder)
    total = 0
    for what, files in kinds + [("other files (not ours, left alone)", other)]:
        if files:
            size = _size(files)
            total += size
            lines.append(f"  {what:<36} {len(files):>6} files {_human(size):>10}")
    lines.append(f"  {'total':<36} {'':>12} {_human(total):>10}")
    from ..runtime.cache import max_bytes
    cap = max_bytes()
    lines.append(f"  size cap: {_human(cap) if cap > 0 else 'none'} (TRANSPILER_CACHE_MAX_MB; least recently used "
                 "files go first)")
    return "\n".join(lines) + "\n"


def cache_clear(folder: Path) -> str:
    if not folder.is_dir():
        return f"cache folder: {folder}: nothing to clear\n"
    kinds, other = _files_by_kind(folder)
    removed = freed = 0
    for _, files in kinds:
        freed += _size(files)
        for p in files:
            try:
                p.unlink()
                removed += 1
            except FileNotFoundError:
                pass
    for sub in ("autotune", "failed"):
        if (folder / sub).is_dir() and not any((folder / sub).iterdir()):
            shutil.rmtree(folder / sub, ignore_errors=True)
    text = f"cache folder: {folder}: removed {removed} files ({_human(freed)})"
    if other:
        text += f"; left {len(other)} files that are not the cache's"
    return text + "\n"
