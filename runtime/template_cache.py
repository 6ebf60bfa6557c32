"""Jinja's compiled templates kept in the disk cache, so a process that generates CUDA does not compile the
emitter's templates again (`ops.j2`, `dot.j2`, `kernel.cu.j2`, ...: 130 ms of the attention kernel's cold
emission on this project's CPU machine, measured by compiling them in a fresh process).

Jinja's own `BytecodeCache` protocol, with our entries underneath: each is sealed with a digest (`cache.py`), so
no damaged file reaches `marshal`; Jinja itself checks the template source's checksum and its own and Python's
bytecode version in every entry. The runtime installs it (`install`) before its first generation; the emitter
knows nothing of it.
"""
from __future__ import annotations

import jinja2

from . import cache


class SealedBytecodeCache(jinja2.BytecodeCache):
    def load_bytecode(self, bucket):
        payload = cache.load_named(f"templates/{bucket.key}.jinja")
        if payload is not None:
            bucket.bytecode_from_string(payload)

    def dump_bytecode(self, bucket):
        cache.write(f"templates/{bucket.key}.jinja", bucket.bytecode_to_string())


def install(environment):
    """Give `environment` (the emitter's Jinja environment) the sealed disk cache, once."""
    if not isinstance(environment.bytecode_cache, SealedBytecodeCache):
        environment.bytecode_cache = SealedBytecodeCache()
