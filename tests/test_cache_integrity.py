"""The disk cache never serves a damaged entry and never breaks a launch (issue 17, item 1; issue 16's cache items).

On the CPU, through the real variant build (parse, analysis, emission) and the real cache; NVRTC and the GPU are
faked at their edges as in `test_runtime_launch.py` (the fake cubin is a function of the source, so a cubin
served for the wrong source is seen). Damage of every kind (truncated, zeroed, garbage, swapped between keys,
a writer killed mid-write) is applied to every kind of entry (variant JSON, cubin, launch binder, autotune
result) and must be dropped and rebuilt: the test checks what the build was handed, not only that it ran.
"""
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import transpiler
from test_runtime_launch import FakeCupy, _scale, gpu  # noqa: F401  (gpu is a fixture)
from transpiler.runtime import cache, compiler, kernel as kernel_mod, toolchain

ROOT = str(Path(__file__).resolve().parents[1])
TESTS = str(Path(__file__).resolve().parent)


@pytest.fixture(autouse=True)
def fresh_warning_state(monkeypatch):
    monkeypatch.setattr(cache, "_warned", [])
    monkeypatch.setattr(cache, "_prune_state", {"last": 0.0, "since": 0})


def fake_cubin(source, arch):
    return b"\x7fELF" + arch.encode() + hashlib.sha256(source.encode()).digest() * 64


@pytest.fixture
def build(gpu, monkeypatch):
    """The fake GPU with a cubin that depends on the source; `build.cubins` lists what module loading was given."""
    gpu.cubins = []

    def compile_tuned(source, name, arch, shared_bytes=0):
        gpu.compiles.append((name, arch))
        return fake_cubin(source, arch), None

    def load_function(cubin, name, device):
        gpu.cubins.append(cubin)
        return None, type("F", (), {"ptr": 1000 + device})(), 500 + device
    monkeypatch.setattr(compiler, "compile_tuned", compile_tuned)
    monkeypatch.setattr(compiler, "load_function", load_function)
    return gpu


def launch(block=128):
    """A launch by a fresh kernel object (its memory caches empty, so it reads the disk); returns the kernel."""
    k = transpiler.jit(_scale)
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=block)
    return k


def entries(kind):
    """The cache's entries of one kind; "json": the variant entries, without the NVRTC version stamp
    (`toolchain.py`) that the first compile of a process writes beside them (in whichever test runs first)."""
    folder = cache.cache_dir()
    pattern = {"json": "*.json", "cubin": "*.cubin", "binder": "binder-*.marshal", "autotune": "autotune/*.json"}
    stamp = toolchain._stamp_name()
    return sorted(p for p in folder.glob(pattern[kind]) if p.name != stamp)


def assert_all_entries_sound():
    """Every file is a sealed entry, but the compiled launch path's extension module and its digest (`native/`:
    the dynamic loader reads the module itself, so its digest lies beside it; its name hashes what it was built
    from)."""
    folder = cache.cache_dir()
    for path in folder.rglob("*"):
        if path.is_file() and path.parent.name != "native":
            assert not path.name.startswith(".tmp-"), path
            assert cache.unseal(path.name, path.read_bytes()) is not None, path


# ---- the envelope --------------------------------------------------------------------------------------

def test_a_sealed_entry_reads_back_and_any_change_to_it_is_refused(tmp_path):
    path = tmp_path / "abc.cubin"
    payload = b"\x7fELF" + bytes(range(256)) * 8
    cache.write_entry(path, payload)
    assert cache.read(path) == payload
    data = path.read_bytes()
    for i in random.Random(7).sample(range(len(data)), 40):     # one flipped byte anywhere: header or payload
        assert cache.unseal(path.name, data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1:]) is None
    assert cache.unseal("other.cubin", data) is None                # the name is part of the digest


def test_an_entry_made_with_other_versions_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / "k.json"
    cache.write_entry(path, b"{}")
    monkeypatch.setattr(cache, "made_with", lambda: b"transpiler-9.9.9,cpython-399")
    assert cache.read(path) is None and not path.exists()


# ---- damage of every kind, to every kind of entry --------------------------------------------------------

def _truncate(data, other):
    return data[: len(data) // 2]


def _truncate_keeping_elf_magic(data, other):
    header, payload = data.split(b"\n", 1)
    return header + b"\n" + payload[:8]         # what the old check (data[:4] == ELF magic) let through


def _zero(data, other):
    return bytes(len(data))


def _garbage(data, other):
    return random.Random(len(data)).randbytes(len(data))


def _swap(data, other):
    return other                                # a whole, well-sealed entry of another key


DAMAGE = [_truncate, _truncate_keeping_elf_magic, _zero, _garbage, _swap]


def _fill_two_keys():
    launch(128)
    launch(256)


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_cubin_is_rebuilt_never_loaded(build, damage):
    _fill_two_keys()
    a, b = entries("cubin")
    good = cache.read(a)
    a.write_bytes(damage(a.read_bytes(), b.read_bytes()))
    build.cubins.clear()
    compiles = len(build.compiles)
    kernels = [launch(128), launch(256)]
    sources = [v.source for k in kernels for v in k.variants.values()]
    assert build.cubins == [fake_cubin(src, "sm_90a") for src in sources]   # each source's own cubin, whole
    assert len(build.compiles) == compiles + 1                               # the damaged one only
    assert cache.read(a) == good                                             # rebuilt in place
    assert_all_entries_sound()


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_variant_entry_is_regenerated(build, damage, monkeypatch):
    _fill_two_keys()
    a, b = entries("json")
    good = json.loads(cache.read(a))
    a.write_bytes(damage(a.read_bytes(), b.read_bytes()))
    generated = []
    real_generate = kernel_mod.Kernel._generate

    def counting(self, *args):
        generated.append(args[0])
        return real_generate(self, *args)
    monkeypatch.setattr(kernel_mod.Kernel, "_generate", counting)
    k128, k256 = launch(128), launch(256)
    assert len(generated) == 1                                       # the damaged one only
    sources = {v.source for k in (k128, k256) for v in k.variants.values()}
    assert good["source"] in sources and len(sources) == 2          # each key got its own source back
    assert json.loads(cache.read(a)) == good
    assert_all_entries_sound()


def _binder_entry(names, mask, kernel_name):
    from transpiler.runtime import launch_key
    source = launch_key.binder_source(names, mask, kernel_name)
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    return cache.cache_dir() / f"binder-{sys.implementation.cache_tag}-{digest}.marshal"


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_launch_binder_is_compiled_again(build, damage, monkeypatch):
    from transpiler.runtime import launch_key
    launch(128)
    launch_key.make_binder(("X", "n"), (False, False), "other")      # a second binder entry, to swap with
    a = _binder_entry(("X", "Y", "n", "scale", "BLOCK"), (False, False, False, False, True), "_scale")
    b = _binder_entry(("X", "n"), (False, False), "other")
    good = cache.read(a)
    assert good is not None and cache.read(b) is not None
    a.write_bytes(damage(a.read_bytes(), b.read_bytes()))
    compiled = []

    def counting_compile(source, filename, mode, *args, **kwargs):
        compiled.append(filename)
        return compile(source, filename, mode, *args, **kwargs)
    monkeypatch.setattr(launch_key, "compile", counting_compile, raising=False)
    launch(128)
    assert compiled == ["<launch binder of _scale>"] and len(build.driver.launches) == 2
    assert build.driver.launches[-1].raw == build.driver.launches[0].raw    # the same slots packed
    assert cache.read(a) is not None                # rewritten (marshal's bytes vary with reference counts)
    assert_all_entries_sound()


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_autotune_entry_is_tuned_again(tmp_path, monkeypatch, damage):
    from autotune_fakes import tuned_fake
    from test_autotune import TIMES
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    tuned_fake(TIMES)[0][(1,)](None, None, 100)
    tuned_fake(TIMES)[0][(1,)](None, None, 101)
    a, b = entries("autotune")
    a.write_bytes(damage(a.read_bytes(), b.read_bytes()))
    tuned, kernel, bench = tuned_fake(TIMES)
    tuned[(1,)](None, None, 100)
    tuned[(1,)](None, None, 101)
    assert len(bench.calls) == 3                 # one key tuned again (three configs), the sound one reused
    assert_all_entries_sound()


def test_damage_counts_as_dropped_and_nothing_damaged_is_served(build):
    launch(128)
    for path in cache.cache_dir().iterdir():
        path.write_bytes(path.read_bytes()[:-1])
    before = dict(cache.stats)
    launch(128)
    assert cache.stats["dropped"] - before["dropped"] == 4          # variant, cubin, binder, grid launch function
    assert cache.stats["served"] == before["served"]
    assert_all_entries_sound()


# ---- many processes, killed processes --------------------------------------------------------------------

_WORKER = textwrap.dedent("""
    import hashlib, json, sys
    sys.path[:0] = [{root!r}, {tests!r}]
    import numpy as np
    import transpiler
    from transpiler.runtime import compiler, cache
    from test_runtime_launch import _scale
    compiled = []
    def fake(source, name, arch, shared_bytes=0):
        compiled.append(name)
        return b"\\x7fELF" + arch.encode() + hashlib.sha256(source.encode()).digest() * 64, None
    compiler.compile_tuned = fake
    out = []
    for block in (128, 256):
        k = transpiler.jit(_scale)
        values = (np.zeros(4, np.float32), np.zeros(4, np.float32), 100, 1.0, block)
        var = k.variant(k.spec_key(values), values, 4)
        cubin = var.cubin("sm_90a")
        assert cubin == b"\\x7fELF" + b"sm_90a" + hashlib.sha256(var.source.encode()).digest() * 64
        out.append(hashlib.sha256(var.source.encode() + cubin).hexdigest())
    heavy = [m for m in ("libcst", "transpiler.parse", "transpiler.emit_cuda") if m in sys.modules]
    print(json.dumps({{"digests": out, "compiled": len(compiled), "heavy": heavy, "dropped": cache.stats["dropped"]}}))
""").format(root=ROOT, tests=TESTS)


def _run_workers(n, cache_dir):
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_eight_processes_compiling_into_one_folder_agree_cold_and_warm(tmp_path, monkeypatch):
    folder = tmp_path / "shared-cache"
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(folder))
    cold = _run_workers(8, folder)
    assert len({tuple(r["digests"]) for r in cold}) == 1 and all(r["dropped"] == 0 for r in cold)
    assert_all_entries_sound()
    warm = _run_workers(8, folder)
    assert [r["digests"] for r in warm] == [cold[0]["digests"]] * 8
    assert all(r["compiled"] == 0 and r["heavy"] == [] and r["dropped"] == 0 for r in warm)


_KILLED_WRITER = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [{root!r}]
    from transpiler.runtime import cache
    i = 0
    while True:                       # sealed entries of 1 MiB, rewritten until the process is killed
        cache.write(f"entry{{i % 7}}.cubin", bytes([i % 251]) * (1 << 20))
        if i == 0:
            print("writing", flush=True)
        i += 1
""").format(root=ROOT)


def test_a_writer_killed_mid_write_leaves_whole_entries_or_none(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(folder))
    for delay in (0.0, 0.05, 0.13):
        p = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER], env=dict(os.environ), stdout=subprocess.PIPE)
        assert p.stdout.readline() == b"writing\n"
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        for path in folder.iterdir():
            if not path.name.startswith(".tmp-"):
                payload = cache.read(path)
                assert payload is not None and len(payload) == 1 << 20 and len(set(payload)) == 1
    assert cache.prune(folder=folder, stale_tmp_s=-1) >= 0
    assert not [p for p in folder.iterdir() if p.name.startswith(".tmp-")]


def test_a_kill_between_temp_file_and_rename_is_rebuilt(build, monkeypatch):
    """The writer dies after writing its temporary file: no entry exists, so the next process rebuilds."""
    script = textwrap.dedent(f"""
        import os, sys, signal
        sys.path[:0] = [{ROOT!r}, {TESTS!r}]
        os.replace = lambda a, b: os.kill(os.getpid(), signal.SIGKILL)
        import numpy as np, transpiler
        from test_runtime_launch import _scale
        k = transpiler.jit(_scale)
        values = (np.zeros(4, np.float32), np.zeros(4, np.float32), 100, 1.0, 128)
        k.variant(k.spec_key(values), values, 4)
    """)
    done = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert [p.name[:5] for p in cache.cache_dir().iterdir()] == [".tmp-"]
    launch(128)
    assert len(build.compiles) == 1 and len(build.driver.launches) == 1
    cache.prune(stale_tmp_s=-1)
    assert_all_entries_sound()


# ---- folders that cannot be written --------------------------------------------------------------------

def _unwritable_folder(tmp_path):
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        return folder / "cache"
    return Path("/proc/transpiler-cache-test")      # root writes through modes; /proc is read-only to everyone


def test_a_read_only_cache_folder_warns_once_and_launches_from_memory(build, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(_unwritable_folder(tmp_path)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = launch(128)
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=256)
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=256)
    assert [w.category for w in caught] == [cache.CacheWarning]
    assert "cannot be written" in str(caught[0].message)
    assert len(build.driver.launches) == 3 and len(build.compiles) == 2


def test_a_full_disk_warns_once_and_launches(build, monkeypatch):
    import errno
    import tempfile

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(tempfile, "mkstemp", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(128)
        launch(256)
    assert [w.category for w in caught] == [cache.CacheWarning] and "No space left" in str(caught[0].message)
    assert len(build.driver.launches) == 2


def test_a_cache_folder_removed_while_running_is_made_again(build):
    import shutil
    launch(128)
    shutil.rmtree(cache.cache_dir())
    launch(128)
    launch(256)
    assert len(build.driver.launches) == 3 and len(build.compiles) == 3     # fresh kernel objects, no disk left
    assert len(entries("json")) == 2 and len(entries("cubin")) == 2
    assert_all_entries_sound()


def test_failed_sources_go_under_the_cache_folder_or_are_said_unsaved(tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSPILER_DUMP_DIR", raising=False)
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "c"))
    err = compiler._internal_error("broken", "int x = ;", "kernel.cu(1): error: expected an expression")
    assert (tmp_path / "c" / "failed" / "broken.cu").read_text() == "int x = ;"
    assert str(tmp_path / "c" / "failed" / "broken.cu") in str(err)
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(_unwritable_folder(tmp_path)))
    err = compiler._internal_error("broken", "int x = ;", "error: x")
    assert "not saved" in str(err)


# ---- what goes into the key ----------------------------------------------------------------------------

@pytest.mark.parametrize("env, marker", [("TRANSPILER_LINE_DIRECTIVES", "#line "),
                                         ("TRANSPILER_DEBUG", "device_assert failed")])
def test_environment_that_changes_the_code_is_in_the_disk_key(build, monkeypatch, env, marker):
    import transpiler.language as tl

    def checked(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.device_assert(offs < BLOCK, "in range")
        tl.store(X + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)
    args = (np.zeros(4, np.float32), 100)
    monkeypatch.setenv(env, "1")
    assert marker in transpiler.jit(checked).cuda_source(*args, BLOCK=128)
    monkeypatch.delenv(env)
    assert marker not in transpiler.jit(checked).cuda_source(*args, BLOCK=128)     # warm cache, other key
    monkeypatch.setenv(env, "1")
    assert marker in transpiler.jit(checked).cuda_source(*args, BLOCK=128)


# ---- size cap ----------------------------------------------------------------------------------------------

def test_the_cache_is_pruned_to_its_cap_least_recently_used_first(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(cache, "PRUNE_EVERY_S", 1e9)
    now = time.time()
    for i in range(8):                                      # 8 x 200 KiB, the oldest first, under the default cap
        cache.write(f"e{i}.cubin", bytes([i]) * 200 * 1024)
        os.utime(cache.cache_dir() / f"e{i}.cubin", (now - 1000 + i, now - 1000 + i))
    assert cache.read(cache.cache_dir() / "e0.cubin") is not None     # used now: the newest
    monkeypatch.setenv("TRANSPILER_CACHE_MAX_MB", "1")
    cache.write("e8.cubin", b"x" * 200 * 1024)              # past a tenth of the cap since the last prune
    total, _ = cache.usage()
    assert total <= 0.9 * 2**20
    names = {p.name for p in cache.cache_dir().iterdir()}
    assert {"e0.cubin", "e8.cubin"} <= names and "e1.cubin" not in names and "e2.cubin" not in names


def test_a_cap_of_zero_turns_pruning_off(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TRANSPILER_CACHE_MAX_MB", "0")
    for i in range(3):
        cache.write(f"e{i}.cubin", b"y" * 4096)
    assert len(list(cache.cache_dir().iterdir())) == 3
