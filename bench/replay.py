#!/usr/bin/env python
"""Process replay: prove a compiler refactor changes no generated CUDA it did not mean to (tinygrad's idea).

`record` runs the CPU test suite with this file loaded as a pytest plugin. Every variant a test or an example
spec generates (each "generated" build event, `runtime/build_events.py`) is written to a folder,
once for the source any device gets (the sm_80 source) and once for the sm_90a one, whichever of the two the
test asked for. A variant whose generation raises is recorded too, as its error message. Object addresses
(` at 0x...`) and the checkout's path are taken out of what is recorded: they vary between processes. `diff` compares two
such folders and lists only what differs: variants present on one side only, and the unified diff of each
variant whose source changed.

    python bench/replay.py record /tmp/replay/before [-- extra pytest args, e.g. tests/test_snapshots.py]
    ... change the compiler ...
    python bench/replay.py record /tmp/replay/after
    python bench/replay.py diff /tmp/replay/before /tmp/replay/after

A variant's name is the kernel's module and qualified name plus a digest of what selects it: the kernel's
source (and its helpers'), the specialization key, num_warps, num_stages, the compile options and the target.
None of these depend on the compiler, so the same variant has the same name before and after a refactor of
it. Kernels defined inside test functions can share a name and a source yet differ by closure; each distinct
source of one name is kept (the file name ends in a digest of the content), and `diff` compares the sets.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV_DIR = "TRANSPILER_REPLAY_DIR"
TARGETS = {None: "sm_80", "sm_90a": "sm_90a"}   # source_target(arch) -> label; sm_80 stands for "any device"


# -- the pytest plugin ------------------------------------------------------------------------------------
def pytest_configure(config):
    out = os.environ.get(ENV_DIR)
    if not out:
        return
    from transpiler.runtime import build_events
    global _recording
    if _recording:
        return
    _recording = True
    inside = threading.local()      # the other target's generation, made here, is not recorded again

    def on_generated(event):
        if event.kind != "generated" or getattr(inside, "active", False):
            return
        kernel, key, opts = event.kernel, event.key, event.opts
        _record(out, kernel, key, opts, source=event.source, error=event.error)
        if event.error is not None:
            return
        inside.active = True
        try:
            for other in TARGETS:
                if other != opts.arch:
                    other_opts = dataclasses.replace(opts, arch=other)
                    try:
                        _record(out, kernel, key, other_opts,
                                source=quiet_source(kernel, key, event.values, other_opts))
                    except Exception as e:
                        _record(out, kernel, key, other_opts, error=e)
        finally:
            inside.active = False

    build_events.subscribe(on_generated)


_recording = False


def quiet_source(kernel, key, values, opts) -> str:
    """The `.cu` of a variant under `opts`, made as `Kernel._generate` makes it but sending no build event and
    calling no method a test may count: the other target's source, recorded while a test watches its own kernel's
    events or generations (tests/test_launch_fast_path.py, test_cache_integrity.py)."""
    from transpiler.analysis import analyze
    from transpiler.emit_cuda import emit_kernel
    from transpiler.errors import TranspilerError
    from transpiler.parse import build_kernel_ir
    try:
        ir = build_kernel_ir(kernel.fn, kernel._arg_specs(key, values), opts)
        return emit_kernel(ir, analyze(ir, opts)).source
    except TranspilerError as e:
        raise e.with_context(kernel=kernel.fn.__name__)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _stable(text: str) -> str:
    """Text without what varies between processes: object addresses, the checkout's path."""
    return _ADDRESS.sub("", text).replace(str(ROOT), "<root>")


def options_text(opts) -> str:
    """The compile options that change a variant's code besides the launch options, in one fixed spelling (the
    repr `transpiler.options.CompileOptions` had when this tool was written), so a change to that class does not
    rename every variant."""
    return (f"CompileOptions(debug={opts.debug!r}, line_directives={opts.line_directives!r}, "
            f"codegen_switches={opts.codegen_switches!r})")


def variant_identity(kernel, key, num_warps, num_stages, opts, target) -> str:
    """What selects a variant, in words that do not depend on the compiler's internals changing: the kernel's
    sources, the specialization key (its parameters' parts, then launch parts such as ("maxnreg", n)), the launch
    and compile options and the target."""
    parts = [kernel.source_hash(), _stable(repr(tuple(key))), f"w{num_warps}", f"s{num_stages}",
             _stable(opts if isinstance(opts, str) else options_text(opts)), repr(target)]
    return "\n".join(parts)


def _record(out, kernel, key, opts, source=None, error=None):
    fn = kernel.fn
    target = opts.arch
    ident = hashlib.sha256(variant_identity(kernel, key, opts.num_warps, opts.num_stages, opts, target).encode())
    stem = re.sub(r"[^A-Za-z0-9_.]+", "_", f"{fn.__module__}.{fn.__qualname__}")[-100:]
    # object addresses (a constexpr tuple of functions is shown in the header) vary from process to process
    text = _stable(source) if error is None else f"// generation raised {type(error).__name__}: {_stable(str(error))}\n"
    content = hashlib.sha256(text.encode()).hexdigest()[:8]
    folder = Path(out) / TARGETS.get(target, str(target))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{ident.hexdigest()[:12]}-{content}.cu"
    if path.exists():
        return
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


# -- record -----------------------------------------------------------------------------------------------
def record(out: Path, pytest_args) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.rglob("*.cu"):
        old.unlink()
    env = dict(os.environ)
    env[ENV_DIR] = str(out)
    env["TRANSPILER_CACHE_DIR"] = tempfile.mkdtemp(prefix="transpiler-replay-cache-")   # every variant generated
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "bench"), env.get("PYTHONPATH", "")])
    args = pytest_args or ["-n", "2", "tests"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "replay", "-m", "not gpu and not multigpu", *args]
    rc = subprocess.call(cmd, cwd=ROOT, env=env)
    n = sum(1 for _ in out.rglob("*.cu"))
    print(f"replay: {n} variant sources under {out} (pytest exit status {rc})")
    return rc


# -- diff -------------------------------------------------------------------------------------------------
def load(folder: Path):
    """{(target, name): {content digest: text}} of a recorded folder."""
    found = defaultdict(dict)
    for path in sorted(folder.rglob("*.cu")):
        name = path.stem.rpartition("-")[0]
        text = _stable(path.read_text())
        found[(path.parent.name, name)][hashlib.sha256(text.encode()).hexdigest()[:8]] = text
    return found


def diff(before: Path, after: Path, context: int = 3, limit: int = 200) -> int:
    """Print only the differences; the exit status is 1 when there are any."""
    old, new = load(before), load(after)
    only_old = sorted(set(old) - set(new))
    only_new = sorted(set(new) - set(old))
    changed = sorted(k for k in set(old) & set(new) if set(old[k]) != set(new[k]))
    for label, keys in (("only before", only_old), ("only after", only_new)):
        for target, name in keys:
            print(f"{label}: {target}/{name}")
    shown = 0
    for key in changed:
        a = [old[key][d] for d in sorted(set(old[key]) - set(new[key]))]
        b = [new[key][d] for d in sorted(set(new[key]) - set(old[key]))]
        text = "".join(difflib.unified_diff("".join(a).splitlines(True), "".join(b).splitlines(True),
                                            f"before/{key[0]}/{key[1]}", f"after/{key[0]}/{key[1]}", n=context))
        lines = text.splitlines(True)
        print("".join(lines[:limit]), end="" if text.endswith("\n") else "\n")
        if len(lines) > limit:
            print(f"... {len(lines) - limit} more diff lines")
        shown += 1
    same = len(set(old) & set(new)) - len(changed)
    print(f"replay: {same} variants identical, {len(changed)} changed, {len(only_old)} only before, "
          f"{len(only_new)} only after")
    return 1 if changed or only_old or only_new else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the CPU tests and write every generated variant's .cu")
    rec.add_argument("out", type=Path)
    rec.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: -n 2 tests)")
    dif = sub.add_parser("diff", help="list the differences between two recorded folders")
    dif.add_argument("before", type=Path)
    dif.add_argument("after", type=Path)
    dif.add_argument("--context", type=int, default=3)
    dif.add_argument("--limit", type=int, default=200, help="diff lines shown per variant")
    a = parser.parse_args(argv)
    if a.command == "record":
        return record(a.out, a.pytest_args)
    return diff(a.before, a.after, a.context, a.limit)


if __name__ == "__main__":
    sys.exit(main())
