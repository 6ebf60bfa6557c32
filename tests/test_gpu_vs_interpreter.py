"""GPU: the compiled kernels and the CPU interpreter agree on the same fresh random inputs.

Every launch made while a test runs is replayed: just before the GPU launch each device array argument is
cloned (same strides, same poisoned outputs), the GPU runs on the originals and the interpreter on the
clones, and every array must then match under the tolerance of its dtype. This covers every feature kernel
in `tests/feature_kernels.py` and every example in `examples/` (through its own `run_case`, which also
checks the GPU result against its float64 NumPy reference). Inputs are new random numbers on every run; the
seed is in the failure message.

Run on a GPU machine: `python -m pytest -q -m gpu tests/test_gpu_vs_interpreter.py`
"""
import contextlib
import importlib.util
import secrets
import sys
from pathlib import Path

import numpy as np
import pytest

from dot_rounding import assert_close_to_operand_precision, launch_dot_precision, rounded_by_dot
from feature_kernels import all_cases

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.stem.startswith("_"))
FEATURES = [name for name, _ in all_cases(np.random.default_rng(0))]
REDUCING_FEATURES = ("reduce", "custom_reduce", "loop", "shape")

# (rtol, atol) by dtype: elementwise, then with reductions (summation order differs between the two paths).
ELEMENTWISE = {"float64": (1e-12, 1e-12), "float32": (1e-5, 1e-6), "float16": (1e-3, 1e-2),
               "bfloat16": (1e-2, 5e-2)}
REDUCING = {"float64": (1e-10, 1e-10), "float32": (1e-4, 1e-5), "float16": (1e-3, 1e-2),
            "bfloat16": (1e-2, 5e-2)}


# ---- arrays of CuPy and torch ------------------------------------------------------------------------------

def _is_torch(a):
    return type(a).__module__.startswith("torch")


def _is_device_array(a):
    return type(a).__module__.startswith("cupy") or (_is_torch(a) and a.is_cuda)


def _clone(a):
    """A copy of device array `a` with the same shape and strides (views into wider rows stay views). Only the
    viewed elements are copied: the gaps between rows may never have been written, and reading them would be
    an uninitialized read (compute-sanitizer's initcheck flags it)."""
    if _is_torch(a):
        import torch
        span = 1 + sum((n - 1) * s for n, s in zip(a.shape, a.stride())) if a.numel() else 0
        twin = torch.as_strided(torch.empty(span, dtype=a.dtype, device=a.device), a.shape, a.stride())
        twin.copy_(a)
        return twin
    import cupy
    span = 1 + sum((n - 1) * s // a.itemsize for n, s in zip(a.shape, a.strides)) if a.size else 0
    flat = cupy.empty(span, a.dtype)
    twin = cupy.ndarray(a.shape, a.dtype, memptr=flat.data, strides=a.strides)
    twin[...] = a
    return twin


def _to_host(a):
    """(float64 or int64 NumPy copy, dtype name)."""
    if _is_torch(a):
        name = str(a.dtype).replace("torch.", "")
        host = a.detach().cpu()
        host = host.float() if name == "bfloat16" else host
        return host.numpy().astype(np.float64 if host.is_floating_point() else np.int64), name
    import cupy
    host = cupy.asnumpy(a)
    kind = "float64" if host.dtype.kind == "f" else "int64"
    return host.astype(kind), str(host.dtype)


def _compare(what, compiled, interpreted, table, dot_precision=None):
    """Elementwise under the dtype's tolerance; an array wider than the precision the kernel's dots multiply
    in, norm-wise under that precision (tests/dot_rounding.py says why)."""
    got, name = _to_host(compiled)
    want, _ = _to_host(interpreted)
    if rounded_by_dot(name, dot_precision):
        assert_close_to_operand_precision(got, want, dot_precision, f"{what} ({name}): compiled vs interpreted")
    elif name in table:
        rtol, atol = table[name]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{what} ({name}): compiled vs interpreted")
    else:                                           # integers and booleans: exactly equal
        np.testing.assert_array_equal(got, want, err_msg=f"{what} ({name}): compiled vs interpreted")


def _device_arch():
    import cupy
    from transpiler.runtime import compiler
    return compiler.device_arch(cupy.cuda.Device().id)


@contextlib.contextmanager
def every_launch_replayed_on_the_interpreter(table):
    """Within the block, each `kernel[grid](...)` GPU launch is checked against an interpreted twin."""
    import cupy
    from transpiler.runtime.kernel import Kernel
    launches = []
    run = Kernel.run

    def run_and_replay(self, *args, grid, **kwargs):
        twins = [_clone(a) if _is_device_array(a) else a for a in args]
        twin_kwargs = {k: _clone(v) if _is_device_array(v) else v for k, v in kwargs.items()}
        dot_precision = launch_dot_precision(self, args, kwargs, arch=_device_arch())
        cupy.cuda.runtime.deviceSynchronize()
        result = run(self, *args, grid=grid, **kwargs)
        cupy.cuda.runtime.deviceSynchronize()
        self._interpret(grid, twins, dict(twin_kwargs))
        for i, (a, twin) in enumerate(zip(list(args) + list(kwargs.values()), twins + list(twin_kwargs.values()))):
            if _is_device_array(a):
                _compare(f"{self.__name__} argument {i}", a, twin, table, dot_precision)
        launches.append(self.__name__)
        return result

    # `kernel[grid](...)` goes straight to the launch fast path; route it through `run` while replaying.
    getitem = Kernel.__getitem__
    Kernel.run = run_and_replay
    Kernel.__getitem__ = lambda self, grid: (lambda *args, **kwargs: Kernel.run(self, *args, grid=grid, **kwargs))
    try:
        yield launches
    finally:
        Kernel.run = run
        Kernel.__getitem__ = getitem


@pytest.fixture(autouse=True)
def allocations_filled_at_birth():
    """Every device allocation made while a test runs is filled (NaN / all-ones bytes) before anyone sees it.
    The replay clones each array argument before the launch, outputs and the examples' backward buffers
    included; without this, that copy reads memory nothing has written (compute-sanitizer's initcheck reports
    it), and the twin starts from different garbage than the original."""
    import cupy
    pool = cupy.get_default_memory_pool()

    def filled(nbytes):
        memory = pool.malloc(nbytes)
        cupy.cuda.runtime.memsetAsync(memory.ptr, 0xFF, nbytes, cupy.cuda.get_current_stream().ptr)
        return memory
    cupy.cuda.set_allocator(filled)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:       # torch.empty fills with NaN / the largest integer in deterministic mode
        deterministic = (torch.are_deterministic_algorithms_enabled(),
                         torch.is_deterministic_algorithms_warn_only_enabled())
        fill = torch.utils.deterministic.fill_uninitialized_memory
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        cupy.cuda.set_allocator(pool.malloc)
        if torch is not None:
            torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
            torch.utils.deterministic.fill_uninitialized_memory = fill


# ---- feature kernels -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FEATURES)
def test_feature_kernel_compiled_matches_interpreted(name):
    import cupy
    seed = secrets.randbits(32)
    case = dict(all_cases(np.random.default_rng(seed)))[name]
    table = ELEMENTWISE
    if name.startswith(REDUCING_FEATURES):    # never tighter than the case's own tolerance against float64
        table = {k: (max(r, case["rtol"]), max(a, case["atol"])) for k, (r, a) in REDUCING.items()}
    dev_args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    with every_launch_replayed_on_the_interpreter(table) as launches:
        try:
            case["kernel"][case["grid"]](*dev_args, num_warps=case.get("num_warps", 4), **case["constexprs"])
        except AssertionError as e:
            raise AssertionError(f"seed {seed}: {e}") from None
    assert launches == [case["kernel"].__name__]


# ---- examples ------------------------------------------------------------------------------------------------

def _load_example(name):
    folder = str(ROOT / "examples")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"examples_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _example_cases(module):
    """The example's small CPU cases, plus bf16 twins of its fp16 ones when torch with CUDA is there."""
    cases = list(module.CPU_CASES)
    try:
        import torch
        with_bf16 = torch.cuda.is_available()
    except ImportError:
        with_bf16 = False
    if with_bf16:
        cases += [dict(c, dtype="bfloat16") for c in module.CPU_CASES if c.get("dtype") == "float16"]
    return cases


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_compiled_matches_interpreted(name, monkeypatch):
    module = _load_example(name)
    seed = secrets.randbits(32)
    default_rng = np.random.default_rng
    # The examples seed their inputs from the case's shape; give every run new numbers instead.
    monkeypatch.setattr(np.random, "default_rng", lambda *_: default_rng(seed))
    for case in _example_cases(module):
        lib = "torch" if case.get("dtype") == "bfloat16" else "cupy"
        with every_launch_replayed_on_the_interpreter(REDUCING) as launches:
            try:
                module.run_case(lib, timed=False, **case)
            except AssertionError as e:
                raise AssertionError(f"{name} {case} seed {seed}: {e}") from None
        assert launches, f"{name} {case} launched nothing"
