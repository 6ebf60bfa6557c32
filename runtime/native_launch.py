"""The compiled launch path: builds and loads `templates/native_launch.c` and teaches its tables the launchers.

Decides which `kernel[grid]` calls skip Python: `kernel[grid]` returns the compiled `GridLaunch` when this module
loads (`table_for`), with the Python launch function (`grid_launch.py`) as its fallback for every call it does
not take itself; what it takes and why its answer equals the Python path's is in the C file's header.

Why our own C rather than a library: the launch is the product's hot path, and the Python one cannot go below
its own interpreter work. bench/launch_path.py on the H200 host (2026-12-01, s6): the Python path measured
6.23 us per `kernel[(1,)](x, y, n, scale)` against CuPy `RawKernel`'s 5.88, of which ~3.8-4.5 us is the driver
call through CuPy's Cython binding and 0.7 us (CPU machine) the binder's pass alone; cuda.bindings' Python layer
converts the parameter array on each call and would still need our binder in Python. The C path does the
binding, the key's facts, the packing and cuLaunchKernel in one call: measured on the H200 host (bench/NOTES.md,
"Compiled launcher"), 4.38 us against 6.15 for the Python path and 5.53 for RawKernel in one run, 6.12 / 9.45 /
7.89 in a second, slower one (interleaved); the driver call alone took 3.93 / 4.98 there.

Built as Triton builds its launchers: on first use, with the host's C compiler (`$CC`, else `cc`, `gcc`,
`clang`) and the running Python's headers, into the disk cache under a name that hashes the source, the Python
ABI and the compiler (`native/`, its sha256 in a file beside it, checked before every load), then loaded as an
extension module; later processes only load it. No CUDA
headers: the driver functions come as addresses from the `driver` object (`native_functions`: ctypes over
libcuda, or a test's fakes). When anything is missing -- no compiler, no `Python.h`, a failed build, a driver
object without native functions (no libcuda), `TRANSPILER_NATIVE_LAUNCH=0` -- `table_for` answers None and
`kernel[grid]` is the Python launch function, with the reason in `unavailable_reason()`.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from .. import dtypes, options

# The C source ships with the templates (checkout: templates/; installed: transpiler/templates/).
SOURCE = Path(__file__).resolve().parent.parent / "templates" / "native_launch.c"
MODULE_NAME = "_transpiler_launch"

enabled = True          # False: every kernel[grid] made from now on is the Python launch function (benchmarks)
_module = None
_reason = None          # why the module is not loaded, once that was decided
_lock = threading.Lock()
table_lock = threading.Lock()   # held while a kernel's table is made (`Kernel._native`): one table per kernel


def unavailable_reason():
    """None when the compiled launch path is loaded, else why not (None too before the first try)."""
    return _reason


def module():
    """The loaded extension module, built on first use, or None (see `unavailable_reason`)."""
    global _module, _reason
    if _module is not None or _reason is not None:
        return _module
    with _lock:
        if _module is None and _reason is None:
            try:
                _module = _load_or_build()
            except _Unavailable as e:
                _reason = str(e)
    return _module


class _Unavailable(Exception):
    pass


def _compiler():
    named = os.environ.get("CC") or (sysconfig.get_config_var("CC") or "").split(" ")[0]
    for candidate in (named, "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    raise _Unavailable("no C compiler (set CC, or install cc, gcc or clang)")


def _built_path(compiler: str) -> Path:
    from . import cache
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    digest = hashlib.sha256(SOURCE.read_bytes() + "\0".join(
        [sys.version, sys.implementation.cache_tag, suffix, compiler]).encode()).hexdigest()[:24]
    return cache.cache_dir() / "native" / f"{MODULE_NAME}-{digest}{suffix}"


def _load_or_build():
    if os.environ.get("TRANSPILER_NATIVE_LAUNCH", "1") == "0":
        raise _Unavailable("TRANSPILER_NATIVE_LAUNCH=0")
    if sys.platform == "win32":
        raise _Unavailable("not built on Windows yet")
    compiler = _compiler()
    path = _built_path(compiler)
    # Not a sealed cache entry (the dynamic loader reads the file itself): its digest lies beside it and is
    # checked before loading, so a damaged file that would still load is never run. A file that does not match
    # its digest, or does not load, is built again once.
    for attempt in range(2):
        if attempt or not _intact(path):
            path = _build(compiler, path)
        spec = importlib.util.spec_from_file_location(
            MODULE_NAME, path, loader=importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path)))
        try:
            loaded = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded)
            return loaded
        except ImportError as e:
            error = e
    raise _Unavailable(f"the built launcher does not load: {error}")


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _intact(path: Path) -> bool:
    """Whether the built file exists and matches the digest written beside it when it was built."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == _digest_path(path).read_text().strip()
    except OSError:
        return False


def _build(compiler: str, path: Path) -> Path:
    include = sysconfig.get_paths().get("include")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        raise _Unavailable(f"no Python.h in {include} (install the Python development headers)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = path.parent
    except OSError:                     # no writable cache: build for this process only
        folder = Path(tempfile.mkdtemp(prefix="transpiler-native-"))
        path = folder / path.name
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=path.suffix)
    os.close(fd)
    command = [compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", tmp]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        os.unlink(tmp)
        raise _Unavailable(f"the C compiler did not run: {e}") from None
    if done.returncode != 0:
        os.unlink(tmp)
        raise _Unavailable(f"the launcher did not build: {done.stderr.strip()[-500:]}")
    digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()
    fd, tmp_digest = tempfile.mkstemp(dir=folder, suffix=".sha256")
    with os.fdopen(fd, "w") as f:
        f.write(digest)
    # The file first, then its digest (each replace atomic): a reader between the two sees a mismatch and
    # builds again, never a damaged file under a valid digest.
    os.replace(tmp, path)               # a process loading it meanwhile sees the old file or this one
    os.replace(tmp_digest, _digest_path(path))
    return path


# ---- tables -------------------------------------------------------------------------------------------------

# Constexpr values the C facts compare by identity besides strings: immutable objects whose key part
# (`launch_key.constexpr_key`) is a function of the object alone.
IMMUTABLE_CONSTEXPR_TYPES = (dtypes.dtype,)


def table_for(kernel):
    """A new compiled-path table for `kernel`, or None when the compiled path is off or unavailable (or the
    kernel has more parameters than it takes)."""
    from . import launch_key, launcher as launcher_mod
    if not enabled or getattr(launcher_mod.driver, "native_functions", None) is None:
        return None
    try:
        if launcher_mod.driver.native_functions() is None:
            return None
    except OSError:                     # no libcuda here
        return None
    loaded = module()
    if loaded is None or len(kernel._names) > loaded.MAX_PARAMS:
        return None
    return loaded.Table(names=kernel._names, constexpr_mask=kernel._constexpr_mask, learn=_learner(kernel),
                        environment=options.ENVIRONMENT, record=launcher_mod.recent_launches.append,
                        immutable_types=IMMUTABLE_CONSTEXPR_TYPES, types_from=vars(launch_key),
                        grid_fallback=kernel._launch_on_callable_grid)


def grid_launch(table, grid, fallback):
    """The compiled `kernel[grid]` for a checked tuple `grid` (gx, gy, gz); `table.grid(fn)` for a callable."""
    return module().GridLaunch(table, *grid, fallback)


def _learner(kernel):
    def learn(args, num_warps, num_stages):
        """The plan tuple for the launcher these arguments select (see `plan_tuple`), or None when there is no
        launcher yet or the binder refuses them."""
        try:
            key, _, _, frameworks = (kernel._binder or kernel._make_binder())(args, num_warps, num_stages)
        except Exception:
            return None
        launcher = kernel._launchers.get(key)
        if launcher is None:
            return None
        return plan_tuple(launcher, key, frameworks)
    return learn


def plan_tuple(launcher, key, frameworks):
    """What the C table keeps for one launcher: `(environment token, device, python only, function, context,
    block, shared bytes, slot codes, name, row-loop blocks, programs per block, stream provider, provider gives
    a stream object, cuLaunchKernel, cuCtxGetCurrent, cuCtxSetCurrent)`.
    "Python only" for the launchers whose launch does more than pack and call: debug mode's (it synchronises),
    TMA kernels' (tensor maps per launch), by-value parameters, a row loop whose blocks depend on the grid's
    waves (a row ring's), or a driver without native functions."""
    from . import kernel as kernel_mod, launch_key
    from . import launcher as launcher_mod
    inner, row_blocks, per_block = launcher, -2, 1
    if type(launcher) is launcher_mod.RowLoopLauncher:
        inner = launcher.inner
        row_blocks, per_block = (-1 if launcher.blocks is None else launcher.blocks), launcher.per_block
    codes = "".join(launcher_mod._CODE.get(kind, "") for kind in getattr(inner, "kinds", ()))
    functions = launcher_mod.driver.native_functions()
    python_only = (type(inner) is not launcher_mod.Launcher or inner._maps is not None
                   or len(codes) != len(inner.kinds) or functions is None
                   # a row loop that launches one wave only for short grids (RowLoopLauncher.blocks_for)
                   or (type(launcher) is launcher_mod.RowLoopLauncher and launcher.max_waves))
    launch, get_current, set_current = functions or (None, None, None)
    stream_fn, stream_object = _stream_provider(kernel_mod, launcher_mod, bool(frameworks & launch_key.TORCH))
    return (launch_key.environment_of(key), launch_key.device_of(key), python_only,
            getattr(inner, "_func", None), getattr(inner, "context", None), getattr(inner, "block", 0),
            getattr(inner, "shared_bytes", 0), codes, getattr(inner, "name", ""), row_blocks, per_block,
            stream_fn, stream_object, launch, get_current, set_current)


def _stream_provider(kernel_mod, launcher_mod, torch):
    """`(provider, gives a stream object)`: the current-stream function the launch path uses for this framework,
    called directly where it is the real one (torch's raw-stream call; CuPy's `get_current_stream`, whose
    `.ptr` the C code reads) -- one Python frame less per launch."""
    if torch:
        if kernel_mod.torch_stream is launcher_mod.torch_stream:
            return launcher_mod.torch_raw_stream_function(), False
        return kernel_mod.torch_stream, False
    if kernel_mod.cupy_stream is launcher_mod.cupy_stream:
        from cupy.cuda.stream import get_current_stream
        return get_current_stream, True
    return kernel_mod.cupy_stream, False
