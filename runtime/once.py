"""Build each value once per key, however many threads ask for it at the same time.

`OnceMap.get(key, build)` returns the value built for `key`. The first thread to ask runs `build()` outside
any shared lock, so builds of different keys (two specializations, or one kernel for two devices) proceed in
parallel; threads asking for the same key meanwhile wait for that one build and get its value, or its
exception. A failed build is forgotten, so a later call tries again. Lookups of values already built take no
lock (a dict read).
"""
from __future__ import annotations

import threading


class _Pending:
    __slots__ = ("done", "value", "error")

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.error = None


class OnceMap:
    def __init__(self):
        self.values = {}
        self._pending = {}
        self._lock = threading.Lock()

    def get(self, key, build):
        try:
            return self.values[key]
        except KeyError:
            pass
        with self._lock:
            if key in self.values:
                return self.values[key]
            pending = self._pending.get(key)
            owner = pending is None
            if owner:
                pending = self._pending[key] = _Pending()
        if not owner:
            pending.done.wait()
            if pending.error is not None:
                raise pending.error
            return pending.value
        try:
            value = build()
        except BaseException as e:
            pending.error = e
            with self._lock:
                del self._pending[key]
            pending.done.set()
            raise
        pending.value = value
        with self._lock:
            self.values[key] = value
            del self._pending[key]
        pending.done.set()
        return value

    def __len__(self):
        return len(self.values)
