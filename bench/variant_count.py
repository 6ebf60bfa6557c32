"""How many compiled variants a run creates, with our specialization keys and with Triton's coarser ones.

Subscribes to the "variant" build events (`runtime/build_events.py`: one per in-memory variant miss) and
records each (kernel, key, num_warps,
num_stages, options, target). The same records, with every integer's divisor and every pointer's alignment
folded back to "16 or not" (what the keys were before divisibility by 2/4/8 and pointer alignment 1..16
joined them, and what Triton keys), give the count those keys would have made in the same run: one run measures
before and after.

    VARIANT_COUNT_OUT=/tmp/vc PYTHONPATH=.:bench python -m pytest -p variant_count tests/...
    python bench/variant_count.py /tmp/vc          (merges what each pytest process wrote: xdist workers too)
    import variant_count; variant_count.install(); ...; variant_count.summary()
"""
from __future__ import annotations

import json
import os

_records = set()


def _coarse(part):
    """The key part as a divisible-by-16-or-not key would have it."""
    if isinstance(part, tuple) and len(part) == 3 and part[0] == "ptr":
        return ("ptr", part[1], part[2] >= 16)
    if isinstance(part, tuple) and len(part) == 3 and isinstance(part[2], int) and not isinstance(part[2], bool):
        return (part[0], part[1], part[2] >= 16)
    return part


def install():
    from transpiler.runtime import build_events
    global _installed
    if _installed:
        return
    _installed = True

    def on_variant(event):
        # `opts`: the frozen CompileOptions (num_warps, num_stages, arch, ...), part of what makes a variant
        if event.kind == "variant":
            _records.add((event.kernel.fn.__module__, event.kernel.fn.__qualname__, event.key, event.opts))
    build_events.subscribe(on_variant)


_installed = False


def _coarse_record(r):
    return r[:2] + (tuple(_coarse(p) for p in r[2]),) + r[3:]


def _counts(fine, coarse, kernels):
    return {"kernels": len(kernels), "variants": len(fine), "variants_with_16_only_keys": len(coarse)}


def summary():
    return _counts(_records, {_coarse_record(r) for r in _records}, {r[:2] for r in _records})


def pytest_configure(config):
    install()


def pytest_unconfigure(config):
    out = os.environ.get("VARIANT_COUNT_OUT")
    if out and _records:
        with open(f"{out}.{os.getpid()}", "w") as f:
            for r in _records:
                f.write(json.dumps([repr(r[:2]), repr(r), repr(_coarse_record(r))]) + "\n")


def merged(out):
    """The counts over every process's records written under the prefix `out`."""
    import glob
    fine, coarse, kernels = set(), set(), set()
    for name in glob.glob(f"{out}.*"):
        with open(name) as f:
            for line in f:
                k, r, c = json.loads(line)
                kernels.add(k), fine.add(r), coarse.add(c)
    return _counts(fine, coarse, kernels)


if __name__ == "__main__":
    import sys
    print(json.dumps(merged(sys.argv[1])))
