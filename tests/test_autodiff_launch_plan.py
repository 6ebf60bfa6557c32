"""The fast host path of `kernel.backward[grid](...)` (transpiler/autodiff/launch_plan.py) on the CPU: with the
GPU's edges faked (device arrays that are objects with CuPy's attributes, every kernel launch recorded instead of
run), each call must make exactly the launches, with the same arguments, streams and zeroings, as the general
path (`BackwardKernel._launch`) makes for the same call; it must decide once (no `_prepare` after the first call
of a signature) and decide again when what it decided from changes."""
import numpy as np
import pytest

import transpiler
from autodiff_kernels import boxes_kernel, layernorm_kernel, loop_sum_kernel, recurrence_kernel
from transpiler.autodiff import kernel as autodiff_kernel, partials, tapes
from transpiler.runtime import launch_key, launcher as runtime_launcher
from transpiler.runtime.kernel import Kernel

STREAM = 77


class FakeDeviceArray:
    """What the launch binder and transpiler.autodiff read of a CuPy array."""
    _next = [1 << 40]

    def __init__(self, shape, dtype=np.float32):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._next[0] += 1 << 20
        self.data = type("Memory", (), {"ptr": self._next[0], "device_id": 0})()
        self.device = type("Device", (), {"id": 0})()

    def fill(self, value):
        raise AssertionError("zeroing goes through partials._zero (recorded)")


FakeDeviceArray.__module__ = "cupy._fake"


@pytest.fixture
def device(monkeypatch):
    """The log of launches [(kernel, grid, arguments, options)] and zeroings [array] the calls make."""
    log = {"launches": [], "zeroed": []}

    def launch_function(self, grid):
        def record(*args, num_warps=4, num_stages=3, stream=None, **kwargs):
            assert not kwargs, "launched with keyword arguments: not the launcher's positional path"
            log["launches"].append((self.__name__, tuple(grid), args, num_warps, num_stages,
                                    STREAM if stream is None else stream))
        return record

    monkeypatch.setattr(launch_key, "_cupy_ndarray", FakeDeviceArray)
    monkeypatch.setattr(runtime_launcher, "cupy_stream", lambda device: STREAM)
    monkeypatch.setattr(Kernel, "__getitem__", launch_function)
    monkeypatch.setattr(partials, "_buffers", {})
    monkeypatch.setattr(partials, "zeros_like_library", lambda a, shape: FakeDeviceArray(shape))
    monkeypatch.setattr(partials, "_zero", lambda a: log["zeroed"].append(a))
    monkeypatch.setattr(autodiff_kernel.BackwardKernel, "_wave", lambda *args: 32)
    monkeypatch.setattr(tapes, "allocate", lambda like, tape, programs, trips:
                        FakeDeviceArray((programs, max(trips, 1), max(tape.elements, 1))))
    return log


def _take(log):
    taken = {k: list(v) for k, v in log.items()}
    for v in log.values():
        v.clear()
    return taken


def _same_calls(log, fast, general):
    """Run fast(), general(), fast() again; the three must launch and zero the same."""
    fast()
    first = _take(log)
    general()
    reference = _take(log)
    fast()
    again = _take(log)
    assert reference["launches"], "nothing launched"
    for got in (first, again):
        assert len(got["launches"]) == len(reference["launches"])
        for a, b in zip(got["launches"], reference["launches"]):
            assert a[:2] == b[:2] and a[3:] == b[3:], (a, b)
            assert len(a[2]) == len(b[2]) and all(x is y if isinstance(y, FakeDeviceArray) else x == y
                                                  for x, y in zip(a[2], b[2])), (a[0], a[2], b[2])
        assert [id(z) for z in got["zeroed"]] == [id(z) for z in reference["zeroed"]]
    return reference


def _layernorm(rows=300, cols=100, stride=None):
    forward = transpiler.jit(layernorm_kernel.fn)
    stride = stride or cols
    arrays = [FakeDeviceArray((rows, stride)), FakeDeviceArray((cols,)), FakeDeviceArray((cols,)),
              FakeDeviceArray((rows, stride))]
    grads = {"X": FakeDeviceArray((rows, stride)), "W": FakeDeviceArray((cols,)), "B": FakeDeviceArray((cols,)),
             "Y": FakeDeviceArray((rows, stride))}
    return forward, (*arrays, stride, cols, 1e-5), grads


@pytest.mark.parametrize("accumulate", [True, False])
def test_folded_partial_sums_launch_as_the_general_path(device, accumulate):
    forward, args, grads = _layernorm()
    fast = lambda: forward.backward[(300,)](*args, BLOCK=128, num_warps=4, grads=grads, accumulate=accumulate)
    general = lambda: forward.backward._launch((300,), args, dict(BLOCK=128, num_warps=4, grads=grads,
                                                                   accumulate=accumulate))
    reference = _same_calls(device, fast, general)
    names = [launch[0] for launch in reference["launches"]]
    assert names == ["layernorm_kernel_backward", "sum_two_into"], names


def test_the_zeroing_test_is_evaluated_at_each_call(device):
    """accumulate=False: X's writes are plain when stride >= n_cols (no zeroing), atomic otherwise."""
    forward, args, grads = _layernorm(cols=100, stride=100)
    calls = []
    for stride in (100, 60, 100):
        call_args = args[:4] + (stride,) + args[5:]
        forward.backward[(300,)](*call_args, BLOCK=128, grads=grads, accumulate=False)
        calls.append([id(a) for a in _take(device)["zeroed"]])
        forward.backward._launch((300,), call_args, dict(BLOCK=128, grads=grads, accumulate=False))
        assert calls[-1] == [id(a) for a in _take(device)["zeroed"]]
    assert id(grads["X"]) not in calls[0] and id(grads["X"]) in calls[1] and calls[2] == calls[0]


def test_shared_partial_rows_are_zeroed_at_each_call(device, monkeypatch):
    monkeypatch.setattr(partials, "CAP_BYTES", 0)
    forward, args, grads = _layernorm()
    reference = _same_calls(device, lambda: forward.backward[(300,)](*args, BLOCK=128, grads=grads),
                            lambda: forward.backward._launch((300,), args, dict(BLOCK=128, grads=grads)))
    assert len(reference["zeroed"]) == 2        # the shared rows of dW and dB, before their atomic adds


def test_plain_writes_and_positional_constexprs(device):
    forward = transpiler.jit(boxes_kernel.fn)
    pred, target, loss = FakeDeviceArray((45, 4)), FakeDeviceArray((45, 4)), FakeDeviceArray((45,))
    grads = {"PRED": FakeDeviceArray((45, 4)), "TARGET": FakeDeviceArray((45, 4)), "LOSS": FakeDeviceArray((45,))}
    args = (pred, target, loss, 45, 1e-7)
    reference = _same_calls(device, lambda: forward.backward[(3,)](*args, 16, grads=grads, accumulate=False),
                            lambda: forward.backward._launch((3,), args + (16,), dict(grads=grads,
                                                                                      accumulate=False)))
    assert [launch[0] for launch in reference["launches"]] == ["boxes_kernel_backward"]


def test_one_derivation_per_signature_and_again_when_it_changes(device, monkeypatch):
    forward, args, grads = _layernorm()
    prepared = []
    real = autodiff_kernel.BackwardKernel._prepare
    monkeypatch.setattr(autodiff_kernel.BackwardKernel, "_prepare",
                        lambda self, *a, **k: prepared.append(1) or real(self, *a, **k))
    derived = []
    real_derived = autodiff_kernel.BackwardKernel.derived
    monkeypatch.setattr(autodiff_kernel.BackwardKernel, "derived",
                        lambda self, *a, **k: derived.append(1) or real_derived(self, *a, **k))
    launch = forward.backward[(300,)]
    for _ in range(5):
        launch(*args, BLOCK=128, grads=grads, accumulate=False)
    assert prepared == [] and len(derived) == 1
    assert forward.backward[(300,)] is launch
    _take(device)
    # A partial gradient of another size (buffers sized again), another num_warps, the writes forced atomic:
    # each is a new plan, and launches as the general path does.
    wider = dict(grads, W=FakeDeviceArray((120,)))
    _same_calls(device, lambda: launch(*args, BLOCK=128, grads=wider),
                lambda: forward.backward._launch((300,), args, dict(BLOCK=128, grads=wider)))
    _same_calls(device, lambda: launch(*args, BLOCK=128, num_warps=8, grads=grads),
                lambda: forward.backward._launch((300,), args, dict(BLOCK=128, num_warps=8, grads=grads)))
    monkeypatch.setenv("TRANSPILER_AUTODIFF_WRITES", "atomic")
    atomic = _same_calls(device, lambda: launch(*args, BLOCK=128, grads=grads),
                         lambda: forward.backward._launch((300,), args, dict(BLOCK=128, grads=grads)))
    assert [launch[0] for launch in atomic["launches"]] == ["layernorm_kernel_backward"]   # no partial sums


def test_what_the_fast_path_does_not_take_goes_to_the_general_path(device, monkeypatch):
    """Tapes (sized by each call's trip counts), a callable grid, and errors worded by the general path."""
    general = []
    real = autodiff_kernel.BackwardKernel._launch
    monkeypatch.setattr(autodiff_kernel.BackwardKernel, "_launch",
                        lambda self, *a: general.append(1) or real(self, *a))
    forward = transpiler.jit(recurrence_kernel.fn)
    x, w, out = FakeDeviceArray((20,)), FakeDeviceArray((20,)), FakeDeviceArray((20,))
    grads = {"X": FakeDeviceArray((20,)), "W": FakeDeviceArray((20,)), "OUT": FakeDeviceArray((20,))}
    for steps in (5, 9):
        forward.backward[(2,)](x, w, out, steps, 20, BLOCK=16, grads=grads)
    assert len(general) == 2
    tape_shapes = [a.shape for launch in _take(device)["launches"] for a in launch[2]
                   if isinstance(a, FakeDeviceArray) and len(a.shape) == 3]
    assert [shape[1] for shape in tape_shapes] == [5, 9], tape_shapes     # sized by each call's trip count
    loop = transpiler.jit(loop_sum_kernel.fn)
    lx, lw, lout = FakeDeviceArray((3, 37)), FakeDeviceArray((37,)), FakeDeviceArray((3,))
    lgrads = {"X": FakeDeviceArray((3, 37)), "W": FakeDeviceArray((37,)), "OUT": FakeDeviceArray((3,))}
    loop.backward[lambda meta: (3,)](lx, lw, lout, 37, 37, BLOCK=16, grads=lgrads)
    assert len(general) == 3
    with pytest.raises(TypeError, match="needs grads="):
        loop.backward[(3,)](lx, lw, lout, 37, 37, BLOCK=16)
