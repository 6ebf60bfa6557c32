"""NVRTC, and the include folders of its options, without importing CuPy.

CuPy's binding (`cupy.cuda.nvrtc`, the Cython module `cupy_backends.cuda.libs.nvrtc`) imports all of CuPy when it
first loads the library (307 modules): 0.26-0.31 s of a cold compile in a process that had imported torch but not
CuPy (the H200 bench's processes), on this project's CPU machine. So the runtime calls the handful of NVRTC
functions it needs through ctypes (`binding()`: create, compile, log, cubin, PTX, destroy, version) on the
library `cuda.pathfinder` loads (the one CuPy 14 loads: pathfinder is its dependency), and spells the include
options CuPy 14's `assemble_cupy_compiler_options` adds (`include_options`) from the same facts it reads: its
bundled CCCL folders and header folder inside the CuPy package (found by `importlib.util.find_spec`, which imports
nothing), and `<CUDA root>/include`, the CUDA root being the folder above the `lib` that holds that libnvrtc
(CuPy 14's `_environment._get_cuda_path`).

Where that reading is not sure (conda, CUDA 12, whose headers CuPy bundles per minor version, a libnvrtc whose
root has no `cuda_fp16.h`, no CuPy package folder) or CuPy is imported anyway, CuPy's own function is used; where
pathfinder cannot load NVRTC, CuPy's binding. `tests/test_nvrtc_setup.py` checks that both give the same options
(on the GPU host too); a compile that fails on a missing header is retried with CuPy's options
(`runtime/compiler.py`).
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import re
import sys
import threading


class NVRTCError(RuntimeError):
    """An NVRTC call that did not return NVRTC_SUCCESS."""


class CtypesNVRTC:
    """The calls of CuPy's NVRTC binding the runtime makes, same names and results, on the library itself."""

    def __init__(self, path: str):
        # ctypes releases the GIL during a call, CuPy's binding did not: compiles from several threads (the
        # autotuner's) ran one at a time. They still do, under this lock, until NVRTC's thread safety for
        # concurrent compiles is checked (two threads measured 5.8 s against 9.0 s one after the other).
        self._compiling = threading.Lock()
        self._lib = lib = ctypes.CDLL(path)
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
        for name in ("nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetCUBINSize",
                     "nvrtcGetCUBIN", "nvrtcGetPTXSize", "nvrtcGetPTX"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p] if name != "nvrtcCompileProgram" \
                else [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]

    def _check(self, status: int):
        if status != 0:
            raise NVRTCError(f"{self._lib.nvrtcGetErrorString(status).decode()} ({status})")

    def getVersion(self):
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
        return major.value, minor.value

    def createProgram(self, source: str, name: str, headers=(), include_names=()):
        if headers or include_names:
            raise NotImplementedError("in-memory headers are not used by the runtime")
        prog = ctypes.c_void_p()
        self._check(self._lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None))
        return prog

    def compileProgram(self, prog, options):
        encoded = [o.encode() for o in options]
        array = (ctypes.c_char_p * len(encoded))(*encoded)
        with self._compiling:
            self._check(self._lib.nvrtcCompileProgram(prog, len(encoded), array))

    def _bytes(self, prog, size_call, get_call) -> bytes:
        size = ctypes.c_size_t()
        self._check(size_call(prog, ctypes.byref(size)))
        buffer = ctypes.create_string_buffer(size.value)
        self._check(get_call(prog, buffer))
        return buffer.raw[:size.value]

    def getProgramLog(self, prog) -> str:
        return self._bytes(prog, self._lib.nvrtcGetProgramLogSize, self._lib.nvrtcGetProgramLog) \
            .rstrip(b"\0").decode(errors="replace")

    def getCUBIN(self, prog) -> bytes:
        return self._bytes(prog, self._lib.nvrtcGetCUBINSize, self._lib.nvrtcGetCUBIN)

    def getPTX(self, prog) -> bytes:
        return self._bytes(prog, self._lib.nvrtcGetPTXSize, self._lib.nvrtcGetPTX).rstrip(b"\0")

    def destroyProgram(self, prog):
        self._check(self._lib.nvrtcDestroyProgram(ctypes.byref(prog)))


@functools.lru_cache(maxsize=1)
def binding():
    """NVRTC's calls (createProgram, compileProgram, getProgramLog, getCUBIN, getPTX, destroyProgram,
    getVersion): through ctypes on the library pathfinder loads, else CuPy's binding."""
    library = _loaded_nvrtc()
    if library is not None:
        try:
            return CtypesNVRTC(library.abs_path)
        except (OSError, AttributeError):
            pass
    from cupy_backends.cuda.libs import nvrtc
    return nvrtc


@functools.lru_cache(maxsize=1)
def _loaded_nvrtc():
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        return load_nvidia_dynamic_lib("nvrtc")
    except Exception:
        return None


def cupy_assembled(options: tuple) -> tuple:
    """CuPy's own include options around `options` (imports CuPy)."""
    from cupy._core.core import assemble_cupy_compiler_options
    return tuple(assemble_cupy_compiler_options(tuple(options)))


def include_options(options: tuple) -> tuple:
    """`options` with the include folders CuPy would add: CCCL's first, CuPy's header folder and the CUDA
    headers after (CuPy's order)."""
    own = None if "cupy._core.core" in sys.modules else own_include_options(options)
    return own if own is not None else cupy_assembled(options)


def own_include_options(options: tuple):
    """CuPy's include options around `options` as read here without CuPy, or None where the reading is not sure."""
    folders = _own_folders()
    if folders is None:
        return None
    first, last = folders
    return tuple(f"-I{d}" for d in first) + tuple(options) + tuple(f"-I{d}" for d in last)


@functools.lru_cache(maxsize=1)
def _own_folders():
    """(CCCL folders, [CuPy's header folder, the CUDA include folder]) read without CuPy, or None where the
    reading is not sure."""
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.submodule_search_locations:
        return None
    headers = os.path.join(list(spec.submodule_search_locations)[0], "_core", "include")
    if not os.path.isdir(headers) or os.environ.get("CONDA_PREFIX") or _nvrtc_major() < 13:
        return None     # conda's layout, or CUDA 12, for which CuPy adds its bundled headers of that minor
    cccl = [os.path.join(headers, "cupy", "_cccl", part) for part in ("cub", "thrust", "libcudacxx")]
    cuda_include = _cuda_include_folder()
    if cuda_include is None:
        return None
    return [d for d in cccl if os.path.isdir(d)], [headers, cuda_include]


def _nvrtc_major() -> int:
    try:
        return binding().getVersion()[0]
    except Exception:
        return 0


def _cuda_include_folder():
    """`<root>/include` of the libnvrtc pathfinder loads (site-packages `nvidia/cu<major>` or a toolkit)."""
    library = _loaded_nvrtc()
    if library is None:
        return None
    root = os.path.dirname(os.path.dirname(os.path.realpath(library.abs_path)))
    if library.found_via == "conda":
        return None
    if library.found_via == "site-packages" and not re.search(r"site-packages.*nvidia.*cu\d{2}", root):
        return None     # CUDA 12's one-folder-per-library wheels: CuPy gathers several folders there
    include = os.path.join(root, "include")
    return include if os.path.exists(os.path.join(include, "cuda_fp16.h")) else None
