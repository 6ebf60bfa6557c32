"""GPU: the features Triton accepts that were refused here (`triton_frontend_kernels.py`, the libdevice catalogue,
fp8 conversions, host names), compiled and run against NumPy float64 on fresh random inputs with outputs
poisoned, and, where `triton` is importable, against Triton running the same kernel source."""
import math
from pathlib import Path

import numpy as np
import pytest

import libdevice_catalogue as cat
import test_libdevice_catalogue as cat_tests
import test_triton_frontend as cpu
import transpiler
import transpiler.language as tl
import triton_frontend_kernels as fk
from triton_twin import triton_twin_of
from feature_kernels import check

pytestmark = pytest.mark.gpu

NAMES = [c[0] for c in fk.all_cases(np.random.default_rng(0))]


def _to_device(value, make):
    if isinstance(value, np.ndarray):
        return make(value)
    if isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
        return tuple(_to_device(v, make) for v in value)
    return value


def _to_host(value):
    if isinstance(value, tuple):
        return tuple(_to_host(v) for v in value)
    if hasattr(value, "get"):
        return value.get()
    if hasattr(value, "cpu"):
        return value.cpu().numpy()
    return value


def _run(kernel, case, make):
    args = [_to_device(a, make) for a in case["args"]]
    kernel[case["grid"]](*args, **case["constexprs"])
    return [_to_host(a) for a in args]


@pytest.fixture(scope="module")
def triton_twin():
    """This module's kernels as Triton compiles them, or a skip when Triton or torch with CUDA is missing."""
    pytest.importorskip("triton")
    import triton.language.extra.cuda.libdevice  # noqa: F401  (`tl.extra.cuda.libdevice` at module level)
    return triton_twin_of(Path(fk.__file__))


def _torch(a):
    import torch
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


@pytest.mark.parametrize("name", NAMES)
def test_feature_matches_numpy_on_gpu(name):
    import cupy
    case = dict(fk.all_cases(np.random.default_rng()))[name]
    outputs = _run(case["kernel"], case, cupy.asarray)
    cupy.cuda.runtime.deviceSynchronize()
    check(case, outputs)


@pytest.mark.parametrize("name", NAMES)
def test_feature_matches_triton_on_the_same_source(triton_twin, name):
    case = dict(fk.all_cases(np.random.default_rng()))[name]
    theirs_kernel = getattr(triton_twin, case["kernel"].__name__)
    theirs = _run(theirs_kernel, case, _torch)
    ours = _run(case["kernel"], case, _torch)
    check(case, theirs)                     # Triton agrees with the reference too
    for i in case["outputs"]:
        np.testing.assert_allclose(ours[i].astype(np.float64), theirs[i].astype(np.float64),
                                   rtol=case["rtol"], atol=case["atol"], err_msg=f"output {i}")


# ---- fp8 ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", list(cpu.FP8_FORMATS))
def test_fp8_conversions_on_gpu_match_the_rounding_reference(fmt):
    import cupy
    dtype, table = cpu.FP8_FORMATS[fmt]
    x = cpu.fp8_case(np.random.default_rng(), fmt)
    q, y = cupy.full(x.size, 0x5A, cupy.uint8), cupy.full(x.size, np.nan, cupy.float32)
    fk.fp8_roundtrip_kernel[(transpiler.cdiv(x.size, 128),)](cupy.asarray(x), q, y, x.size, FP8=dtype, BLOCK=128)
    q, y = q.get(), y.get()
    for xi, qi, yi in zip(x, q, y):
        want = cpu.fp8_reference(float(xi), table)
        if want is None:
            assert math.isnan(yi)
            continue
        assert int(qi) == want, (fmt, float(xi), hex(qi), hex(want))


@pytest.mark.parametrize("fmt", list(cpu.FP8_FORMATS))
def test_fp8_conversions_match_triton(triton_twin, fmt):
    import torch
    dtype, _ = cpu.FP8_FORMATS[fmt]
    x = cpu.fp8_case(np.random.default_rng(), fmt)
    results = []
    for kernel, fp8 in ((fk.fp8_roundtrip_kernel, dtype), (triton_twin.fp8_roundtrip_kernel,
                                                           getattr(triton_twin.tl, {"fp8e4nv": "float8e4nv",
                                                                                   "fp8e5": "float8e5"}[fmt]))):
        q = torch.zeros(x.size, dtype=torch.uint8, device="cuda")
        y = torch.full((x.size,), float("nan"), device="cuda")
        kernel[(transpiler.cdiv(x.size, 128),)](_torch(x), q, y, x.size, FP8=fp8, BLOCK=128)
        results.append((q.cpu().numpy(), y.cpu().numpy()))
    (q_ours, y_ours), (q_theirs, y_theirs) = results
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(q_ours[finite], q_theirs[finite])
    np.testing.assert_array_equal(y_ours[finite], y_theirs[finite])


def test_torch_float8_tensors_are_arguments():
    torch = pytest.importorskip("torch")
    codes = torch.arange(0, 126, dtype=torch.uint8, device="cuda")
    y = torch.full((126,), float("nan"), device="cuda")
    cpu._fp8_in_signature[(1,)](codes.view(torch.float8_e4m3fn), y, 126, BLOCK=128)
    np.testing.assert_array_equal(y.cpu().numpy(), [v for _, v in cpu.FP8_FORMATS["fp8e4nv"][1]][:126])


# ---- libdevice ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(cat_tests.GROUPS), ids=cat_tests.IDS)
def test_libdevice_catalogue_on_gpu_matches_independent_references(key):
    import cupy
    arrays, out, constexprs = cat_tests._case(key, np.random.default_rng())
    d_out = cupy.asarray(out)
    cat.group_kernel[(transpiler.cdiv(cat_tests.N, 128),)](*[cupy.asarray(a) for a in arrays], d_out, cat_tests.N,
                                                          **constexprs)
    out = d_out.get()
    types, result, _ = key
    failures = []
    for row, name in enumerate(cat_tests.GROUPS[key]):
        for i in range(cat_tests.N):
            xs = [a[i].item() for a in arrays[:len(types)]]
            message = cat_tests._check_element(name, types, result, xs, out[row][i].item())
            if message:
                failures.append(f"{name}{tuple(xs)}: {message}")
                break
    assert not failures, "\n".join(failures)


_OURS_ONLY = {"fmax", "fmin", "fabs"}      # CUDA functions Triton's libdevice does not declare


@pytest.mark.parametrize("key", list(cat_tests.GROUPS), ids=cat_tests.IDS)
def test_libdevice_catalogue_matches_triton(triton_twin, key):
    arrays, _, _ = cat_tests._case(key, np.random.default_rng())
    types, result, _ = key
    theirs_lib = triton_twin.libdevice
    for name in cat_tests.GROUPS[key]:
        if name in _OURS_ONLY:
            continue
        outs = []
        for kernel, fn in ((cat.one_kernel, getattr(cat.libdevice, name)),
                           (triton_twin_one_kernel(), getattr(theirs_lib, name))):
            out = _torch(cat.poisoned(cat_tests.N, result))
            kernel[(transpiler.cdiv(cat_tests.N, 128),)](*[_torch(a) for a in arrays], out, cat_tests.N, FN=fn,
                                                        ARITY=len(types), BLOCK=128)
            outs.append(out.cpu().numpy())
        ours, theirs = outs
        if result in ("fp32", "fp64"):
            tol = cat_tests._float_tolerance(name, result)
            np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=name)


_ONE_KERNEL_TWIN = {}


def triton_twin_one_kernel():
    """`libdevice_catalogue.one_kernel` under Triton (that module is loaded as a twin of its own)."""
    if "k" not in _ONE_KERNEL_TWIN:
        _ONE_KERNEL_TWIN["k"] = triton_twin_of(Path(cat.__file__)).one_kernel
    return _ONE_KERNEL_TWIN["k"]


# ---- host names on the device ---------------------------------------------------------------------------------

def test_device_properties_and_target_on_the_gpu():
    import cupy
    from transpiler.runtime import driver
    props = driver.active.utils.get_device_properties(0)
    attrs = cupy.cuda.runtime.getDeviceProperties(0)
    assert props["multiprocessor_count"] == attrs["multiProcessorCount"] and props["warpSize"] == 32
    assert props["max_shared_mem"] == attrs["sharedMemPerBlockOptin"]
    target = driver.active.get_current_target()
    assert target.backend == "cuda" and target.arch == attrs["major"] * 10 + attrs["minor"]


def test_device_properties_match_tritons(triton_twin):
    import triton

    from transpiler.runtime import driver
    theirs = triton.runtime.driver.active.utils.get_device_properties(0)
    ours = driver.active.utils.get_device_properties(0)
    assert {k: ours[k] for k in ours if k in theirs} == {k: theirs[k] for k in ours if k in theirs}
    assert driver.active.get_current_target().arch == triton.runtime.driver.active.get_current_target().arch
