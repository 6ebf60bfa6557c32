"""User-facing errors end at the user's line: our frames are cut out (one re-raising frame stays, saying how to
see the rest), unless TRANSPILER_DEBUG=1; unknown `tl` names get "did you mean" or "not supported yet"."""
from __future__ import annotations

import traceback

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.tracebacks import is_internal

HERE = __file__


@transpiler.jit
def misspelled(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.lod(X + offs))


@transpiler.jit
def maps_elementwise(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if tl.target_info.cuda_capability_geq(9, 0):
        x = x * 2
    tl.store(X + offs, x)


@transpiler.jit
def reads_the_sm_id(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs) + tl.extra.cuda.smid())


@transpiler.jit
def invents(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.frobnicate(tl.load(X + offs)))


@transpiler.jit
def reads_past_the_end(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs))


def _frames(exc):
    return traceback.extract_tb(exc.__traceback__)


def _assert_ends_at_user_code(exc):
    frames = _frames(exc)
    ours = [f for f in frames if is_internal(f.filename)]
    assert len(ours) == 1, [f"{f.filename}:{f.lineno}" for f in ours]
    assert "TRANSPILER_DEBUG=1 shows them" in ours[0].line
    assert frames[0].filename == HERE


def test_compile_error_from_cuda_source_shows_only_the_users_frames():
    with pytest.raises(transpiler.NameResolutionError) as err:
        misspelled.cuda_source(np.ones(16, np.float32), BLOCK=16)
    _assert_ends_at_user_code(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_launch_error_from_a_launch_shows_only_the_users_frames():
    x = np.ones(16, np.float32)
    with pytest.raises(transpiler.LaunchError, match="in host memory") as err:
        reads_past_the_end[(1,)](x, x, BLOCK=16)
    _assert_ends_at_user_code(err.value)


def test_errors_through_heuristics_and_autotune_show_only_the_users_frames():
    wrapped = transpiler.heuristics({"BLOCK": lambda args: 16})(misspelled)
    with pytest.raises(transpiler.NameResolutionError) as err:
        wrapped.cuda_source(np.ones(16, np.float32))
    _assert_ends_at_user_code(err.value)
    tuned = transpiler.autotune([transpiler.Config({"BLOCK": 16})], key=[])(wrapped)
    with pytest.raises(transpiler.LaunchError, match="in host memory") as err:
        tuned[(1,)](np.ones(16, np.float32))
    _assert_ends_at_user_code(err.value)


def test_interpreter_fault_keeps_the_kernels_own_line():
    x, y = np.ones(8, np.float32), np.zeros(16, np.float32)
    with pytest.raises(transpiler.InterpreterError) as err:
        reads_past_the_end.interpret[(1,)](x, y, BLOCK=16)
    assert sum(is_internal(f.filename) for f in _frames(err.value)) <= 1
    assert "tl.load(X + offs)" in str(err.value)


def test_debug_environment_variable_keeps_every_frame(monkeypatch):
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    with pytest.raises(transpiler.NameResolutionError) as err:
        misspelled.cuda_source(np.ones(16, np.float32), BLOCK=17 - 1)
    assert sum(is_internal(f.filename) for f in _frames(err.value)) > 5


def test_misspelled_tl_name_gets_did_you_mean():
    with pytest.raises(transpiler.NameResolutionError, match="has no attribute 'lod'") as err:
        misspelled.cuda_source(np.ones(16, np.float32), BLOCK=16)
    assert err.value.hint == "did you mean tl.load or tl.log?"
    assert err.value.line == misspelled.fn.__code__.co_firstlineno + 3


def test_tritons_names_we_lack_are_not_supported_yet():
    with pytest.raises(transpiler.NameResolutionError,
                       match=r"not supported yet: tl\.target_info is Triton's"):
        maps_elementwise.cuda_source(np.ones(16, np.float32), BLOCK=16)


def test_tritons_cuda_names_we_lack_are_not_supported_yet():
    """tl.extra.cuda's names that Triton 3.6 has and we lack (smid, globaltimer, num_threads, ...) are ours to
    build, not the user's mistake."""
    with pytest.raises(transpiler.NameResolutionError,
                       match=r"not supported yet: tl\.extra\.cuda\.smid is Triton's"):
        reads_the_sm_id.cuda_source(np.ones(16, np.float32), BLOCK=16)


def test_names_neither_has_are_not_tritons_language():
    with pytest.raises(transpiler.NameResolutionError,
                       match=r"not Triton's language: .* has no attribute 'frobnicate'"):
        invents.cuda_source(np.ones(16, np.float32), BLOCK=16)


def test_autotune_with_host_arrays_reports_the_plain_launch_error():
    tuned = transpiler.autotune([transpiler.Config({"BLOCK": 16}), transpiler.Config({"BLOCK": 32})],
                                key=[])(reads_past_the_end)
    x = np.ones(64, np.float32)
    host = r"arguments 'X' \(numpy\), 'Y' \(numpy\) are in host memory"
    with pytest.raises(transpiler.LaunchError, match=host) as err:
        tuned[(1,)](x, x)
    assert not isinstance(err.value, transpiler.AutotuneError)
    _assert_ends_at_user_code(err.value)
