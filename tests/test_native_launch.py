"""The compiled launch path (templates/native_launch.c, runtime/native_launch.py) on the CPU: it builds here; its
tables, driven by hand with a fake driver whose functions are C callbacks, pack every slot type as `struct` does,
apply the row-loop rule, switch contexts, and hand to the Python function everything they do not take; through
`kernel[grid]` (the `gpu` fixture's `native` path) it launches what the Python path launches, bit for bit."""
import struct
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

import transpiler
from transpiler.errors import LaunchError
from transpiler.runtime import launch_key, launcher as launcher_mod, native_launch

from test_runtime_launch import (CONTEXT, CUPY_STREAM, TORCH_STREAM, FakeCupy, FakeNativeDriver, FakeTensor, _scale,
                                 gpu, unpack)  # noqa: F401  (gpu: the fixture)
from thread_runner import run_together

native = native_launch.module()
pytestmark = pytest.mark.skipif(native is None, reason=f"no compiled launcher: {native_launch.unavailable_reason()}")

FUNCTION = 1234


class Harness:
    """A table and grid launch driven by hand: `learn` answers `plan` (None: no launcher), the fallback records
    its calls, the fake driver records the launches."""

    def __init__(self, names, mask, codes, row=(-2, 1), environment=0, python_only=False, nslots=None):
        self.driver = FakeNativeDriver(nslots=nslots or len(codes))
        self.environment = [environment]
        self.learned, self.handed, self.recorded = [], [], []
        self.codes, self.row, self.python_only = codes, row, python_only
        self.device = 0
        self.table = native.Table(names=tuple(names), constexpr_mask=tuple(mask), learn=self.learn,
                                  environment=self.environment, record=self.recorded.append,
                                  immutable_types=(), types_from={"_cupy_ndarray": FakeCupy,
                                                                  "_torch_tensor": FakeTensor})

    def learn(self, args, num_warps, num_stages):
        self.learned.append((args, num_warps, num_stages))
        launch, get, set_ = self.driver.native_functions()
        return (self.environment[0], self.device, self.python_only, FUNCTION, CONTEXT[self.device], 32 * num_warps,
                96, self.codes, "k", *self.row, lambda d: CUPY_STREAM + d, False, launch, get, set_)

    def grid(self, gx=1, gy=1, gz=1, grid_fn=None):
        def fallback(*args, **kwargs):
            self.handed.append((args, kwargs))
        return native.GridLaunch(self.table, gx, gy, gz, fallback, grid_fn=grid_fn)


def raw_slots(launch, codes):
    return [r[:struct.calcsize("<" + c)] for r, c in zip(launch.raw, codes)]


# ---- packing -----------------------------------------------------------------------------------------------

RANGES = {"b": (-2**7, 2**7), "B": (0, 2**8), "h": (-2**15, 2**15), "H": (0, 2**16), "i": (-2**31, 2**31),
          "I": (0, 2**32), "q": (-2**63, 2**31), "Q": (0, 2**64)}


@pytest.mark.parametrize("code", sorted(RANGES) + ["f", "e", "d", "?"])
def test_each_slot_type_is_packed_as_struct_packs_it(code):
    rng = np.random.default_rng()
    h = Harness(["x", "v"], [False, False], "Q" + code)
    launch = h.grid(3, 2, 1)
    x = FakeCupy(int(rng.integers(1, 1 << 40)) * 16)
    if code in RANGES:
        lo, hi = RANGES[code]
        # q's values from int32 up: smaller ones select the int32 slot in a real key, the same bytes here
        values = [lo, hi - 1, *(int(v) for v in rng.integers(max(lo, -2**62), min(hi, 2**62), size=4))]
    elif code == "?":
        values = [True, False]
    else:
        values = [float(v) for v in rng.standard_normal(4) * 100] + [0.0, -0.0]
    for v in values:
        launch(x, v)
    assert h.handed == [] and len(h.driver.launches) == len(values)
    for launch_record, v in zip(h.driver.launches, values):
        assert raw_slots(launch_record, "Q" + code) == [struct.pack("<Q", x.data.ptr), struct.pack("<" + code, v)]
        assert launch_record.grid == (3, 2, 1) and launch_record.block == (128, 1, 1)
        assert launch_record.smem == 96 and launch_record.stream == CUPY_STREAM and launch_record.func == FUNCTION
    assert len(h.learned) == len({(type(v), launch_key.scalar_key(v)) for v in values})


@pytest.mark.parametrize("code, value", [("i", 2**31), ("I", -1), ("b", 128), ("B", -1), ("h", -2**15 - 1),
                                         ("H", 2**16), ("q", 2**63), ("Q", -1), ("f", 1e300), ("e", 1e6),
                                         ("i", 2.0), ("f", 2), ("?", 1), ("Q", 1.5)])
def test_a_value_its_slot_cannot_hold_goes_to_the_python_path_untouched(code, value):
    h = Harness(["x", "v"], [False, False], "Q" + code)
    launch = h.grid()
    x = FakeCupy(4096)
    launch(x, value, num_warps=8)
    assert h.driver.launches == []
    assert h.handed == [((x, value), {"num_warps": 8})]


def test_none_passes_a_null_pointer_and_bools_an_int1():
    h = Harness(["x", "bias", "flag"], [False, False, False], "QQ?")
    launch = h.grid()
    launch(FakeCupy(4096), None, True)
    assert raw_slots(h.driver.launches[0], "QQ?") == [struct.pack("<Q", 4096), bytes(8), b"\x01"]


# ---- what selects a plan -----------------------------------------------------------------------------------

def test_a_plan_is_learned_once_per_set_of_facts_the_key_reads():
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    launch = h.grid()
    calls = [(FakeCupy(4096), 64, 128), (FakeCupy(8192), 32, 128),           # same facts: 16-aligned, n % 16 == 0
             (FakeCupy(4100), 64, 128),                                      # 4-byte aligned address
             (FakeCupy(4096, dtype=np.float16), 64, 128),                    # another element type
             (FakeCupy(4096), 1, 128),                                       # n == 1
             (FakeCupy(4096), 65, 128),                                      # n odd
             (FakeTensor(4096), 64, 128),                                    # a torch tensor
             (FakeCupy(4096), 64, 256),                                      # another constexpr
             (FakeCupy(4096), 64, "256"),                                    # a string constexpr
             (FakeCupy(4096), 64, 128)]                                      # the first one's facts again
    for args in calls:
        launch(*args)
    assert len(h.learned) == 8 and h.table.counts()["plans"] == 8
    launch(FakeCupy(4096), 64, 128, num_warps=8)                              # num_warps is in the key
    launch(FakeCupy(4096), 64, 128, num_stages=2)
    assert len(h.learned) == 10
    assert h.handed == [] and len(h.driver.launches) == len(calls) + 2


def test_the_environment_token_is_part_of_the_facts_and_an_unknown_token_goes_to_python():
    h = Harness(["x"], [False], "Q")
    launch = h.grid()
    launch(FakeCupy(4096))
    h.environment[0] = None          # os.environ changed: the Python path computes the token again
    launch(FakeCupy(4096))
    assert len(h.handed) == 1
    h.environment[0] = 7
    launch(FakeCupy(4096))
    assert len(h.learned) == 2 and len(h.driver.launches) == 2


def test_a_learned_answer_for_other_facts_is_not_kept():
    h = Harness(["x"], [False], "Q")
    real = h.learn
    h.table = native.Table(names=("x",), constexpr_mask=(False,), learn=lambda *a: (99,) + real(*a)[1:],
                           environment=h.environment, record=h.recorded.append, immutable_types=(),
                           types_from={"_cupy_ndarray": FakeCupy, "_torch_tensor": FakeTensor})
    h.grid()(FakeCupy(4096))
    assert h.table.counts()["plans"] == 0 and len(h.handed) == 1


def test_plans_are_bounded_and_the_least_recently_used_goes_first():
    h = Harness(["x", "BLOCK"], [False, True], "Q")
    launch = h.grid()
    for block in range(20):
        launch(FakeCupy(4096), block)
    assert h.table.counts()["plans"] == 16
    launch(FakeCupy(4096), 19)
    assert len(h.learned) == 20
    launch(FakeCupy(4096), 0)                 # dropped: learned again
    assert len(h.learned) == 21


@pytest.mark.parametrize("call", [
    lambda g, x: g(x, 5, 128, 7),                          # too many arguments
    lambda g, x: g(x, 5),                                  # a missing one (a default: the Python path)
    lambda g, x: g(x, 5, 128, BLOCK=128),                  # given twice
    lambda g, x: g(x, 5, BLOCKS=128),                      # an unknown keyword
    lambda g, x: g(x, 5, 128, maxnreg=64),                 # a launch option the compiled path does not take
    lambda g, x: g(x, 5, 128, num_warps=4.0),              # not an int
    lambda g, x: g(x, 5, 128, stream=object()),            # a stream object
    lambda g, x: g(x, np.int32(5), 128),                   # a NumPy scalar
    lambda g, x: g(np.zeros(4, np.float32), 5, 128),       # a host array
    lambda g, x: g(FakeTensor(4096, device=-1), 5, 128),   # a torch tensor on the CPU
    lambda g, x: g(x, 2**64, 128),                         # no C integer holds it
    lambda g, x: g(x, 5, [128]),                           # a mutable constexpr
], ids=["many", "missing", "twice", "unknown", "maxnreg", "warps", "stream", "numpy", "host", "cpu-tensor",
        "huge", "list"])
def test_what_the_compiled_path_does_not_take_reaches_the_python_function_as_it_was_given(call):
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    launch = h.grid()
    x = FakeCupy(4096)
    call(launch, x)
    assert h.driver.launches == [] and len(h.handed) == 1


def test_keywords_bind_in_any_order_and_an_explicit_stream_is_used():
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    launch = h.grid()
    x = FakeCupy(4096)
    launch(BLOCK=128, n=5, x=x, stream=55)
    launch(x, 5, BLOCK=128, stream=None)
    built = {"".join(["BL", "OCK"]): 128, "".join(["num_", "stages"]): 3}      # names that are not interned
    assert all(name is not sys.intern(name) for name in built)
    launch(x, 5, **built)
    assert [(r.stream, unpack(r.raw, "Qi")) for r in h.driver.launches] == [(55, [4096, 5]), (CUPY_STREAM, [4096, 5]),
                                                                              (CUPY_STREAM, [4096, 5])]
    assert h.handed == [] and len(h.learned) == 1


class TorchLikeStream:
    """A torch stream's shape: the handle is a property named `cuda_stream`, and there is no `ptr`."""

    def __init__(self, handle):
        self._handle = handle

    @property
    def cuda_stream(self):
        return self._handle


class SubInt(int):
    pass


@pytest.mark.parametrize("stream, handle", [
    (SimpleNamespace(ptr=55), 55),                           # a CuPy stream (Stream, ExternalStream)
    (TorchLikeStream(66), 66),                               # a torch stream
    (SimpleNamespace(ptr=None, cuda_stream=77), 77),         # a `ptr` that is no handle: the next name
    (SimpleNamespace(ptr="s", cuda_stream=78), 78),
    (SimpleNamespace(ptr=0), 0),                             # the legacy default stream of CuPy
    (2**64 - 1, 2**64 - 1),
], ids=["cupy", "torch", "ptr-none", "ptr-str", "null", "widest"])
def test_an_explicit_stream_object_launches_on_its_handle_as_the_python_path_reads_it(stream, handle):
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    launch = h.grid()
    x = FakeCupy(4096)
    for _ in range(3):
        launch(x, 5, 128, stream=stream)
    assert h.handed == [] and len(h.learned) == 1
    assert [r.stream for r in h.driver.launches] == [handle] * 3
    assert launcher_mod.stream_handle(stream) == handle                 # the Python path's reading, the same


@pytest.mark.parametrize("stream", [
    object(), "default", -1, 2**64, SubInt(5), True, SimpleNamespace(ptr=SubInt(5)), SimpleNamespace(ptr=True),
    SimpleNamespace(ptr=-3), SimpleNamespace(cuda_stream=1.5), SimpleNamespace(ptr=2**70),
], ids=["object", "str", "negative", "too-wide", "int-subclass", "bool", "ptr-int-subclass", "ptr-bool",
        "ptr-negative", "float", "ptr-too-wide"])
def test_a_stream_the_compiled_path_cannot_read_is_handed_over_as_it_was_given(stream):
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    launch = h.grid()
    x = FakeCupy(4096)
    launch(x, 5, 128, stream=stream)
    assert h.driver.launches == [] and h.learned == []
    assert len(h.handed) == 1 and h.handed[0][1]["stream"] is stream


def test_threads_share_a_table_each_launching_on_its_own_streams_and_one_plan_is_kept(monkeypatch):
    """16 threads x 2 streams, as bench/load_test.py launches: every launch through the compiled path, on the
    stream it was given, with its own arguments; a plan learned by several threads at once is kept once (the
    harness's `learn` sleeps, so that the threads pile up inside it)."""
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    real_learn = h.learn

    def slow_learn(*args):
        time.sleep(0.02)
        return real_learn(*args)
    h.learn = slow_learn                      # the table calls the bound method it was given: rebuild it
    h.table = native.Table(names=("x", "n", "BLOCK"), constexpr_mask=(False, False, True), learn=slow_learn,
                           environment=h.environment, record=h.recorded.append, immutable_types=(),
                           types_from={"_cupy_ndarray": FakeCupy, "_torch_tensor": FakeTensor})
    launch = h.grid(4)
    threads, per_thread = 16, 200

    def work(index):
        streams = [SimpleNamespace(ptr=10000 + 2 * index), TorchLikeStream(10001 + 2 * index)]
        x = FakeCupy(4096 * (index + 1))
        for i in range(per_thread):
            launch(x, 16 * (i + 1), 128, stream=streams[i % 2])
    assert run_together(threads, work) == [] and h.handed == []
    counts = h.table.counts()
    assert counts["compiled"] == threads * per_thread and counts["handed_over"] == 0
    assert counts["plans"] == 1 and counts["learned"] == 1 and len(h.learned) >= 1
    seen = {}
    for r in h.driver.launches:
        x_ptr, n = unpack(r.raw, "Qi")
        index = x_ptr // 4096 - 1
        seen.setdefault(index, []).append((r.stream, n))
    assert sorted(seen) == list(range(threads))
    for index, launches in seen.items():     # each thread's launches in its own order, each on its stream
        assert sorted(launches, key=lambda sn: sn[1]) == [(10000 + 2 * index + i % 2, 16 * (i + 1))
                                                          for i in range(per_thread)]


def test_arrays_on_two_devices_go_to_python_and_another_devices_context_is_made_current_then_put_back():
    h = Harness(["x", "y"], [False, False], "QQ")
    launch = h.grid()
    launch(FakeCupy(4096, device=0), FakeCupy(8192, device=1))
    assert len(h.handed) == 1
    h.device = 1
    launch(FakeCupy(4096, device=1), FakeCupy(8192, device=1))
    assert h.driver.launches[0].ctx == CONTEXT[1] and h.driver.current == CONTEXT[0]
    assert h.driver.switches == [CONTEXT[1], CONTEXT[0]]
    h.driver.current = 0                   # a thread with no context yet: left without one
    launch(FakeCupy(4096, device=1), FakeCupy(8192, device=1))
    assert h.driver.launches[1].ctx == CONTEXT[1] and h.driver.current == 0


def test_a_launch_the_driver_refuses_is_redone_by_the_python_path_once():
    h = Harness(["x"], [False], "Q")
    launch = h.grid()
    launch(FakeCupy(4096))

    def refusing(*args):
        raise RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    h.driver.launchKernel = refusing
    launch(FakeCupy(4096))
    assert len(h.handed) == 1 and len(h.driver.raw_errors) == 1


def test_a_launcher_the_compiled_path_does_not_take_is_remembered_and_handed_over_without_learning_again():
    h = Harness(["x"], [False], "Q", python_only=True)
    launch = h.grid()
    for _ in range(3):
        launch(FakeCupy(4096))
    assert len(h.learned) == 1 and len(h.handed) == 3 and h.driver.launches == []


@pytest.mark.parametrize("blocks, per_block", [(-1, 1), (4, 1), (132, 4), (-1, 8)])
def test_a_row_loop_launches_at_most_its_blocks_and_passes_the_users_grid_x_last(blocks, per_block):
    h = Harness(["x"], [False], "Qi", row=(blocks, per_block))
    for gx in (1, 3, 7, 1000, 100000):
        h.grid(gx, 2)(FakeCupy(4096))
        needed = -(-gx // per_block)
        launched = needed if blocks == -1 else min(needed, blocks)
        record = h.driver.launches[-1]
        assert record.grid == (launched, 2, 1) and unpack(record.raw, "Qi") == [4096, gx]
        assert h.recorded[-1] == ("k", launched, 2, 1)
    h.grid(2**31 - 2, 1)(FakeCupy(4096))            # past the loop's int range: the Python path refuses it
    assert len(h.handed) == 1


def test_a_row_loop_near_the_int_limit_is_handed_to_python_when_rows_ahead_would_overflow():
    """The loop computes rows up to 3 x programs past a row below the grid's x (a row ring: row_loop.py): a grid
    within that of the int limit goes to the Python path (RowLoopLauncher: one wave, or its located refusal)."""
    h = Harness(["x"], [False], "Qi", row=(4, 1))
    h.grid(2**31 - 1 - 12, 1)(FakeCupy(4096))       # 3 x 4 programs ahead: exactly within the range
    assert len(h.handed) == 0 and h.driver.launches[-1].grid == (4, 1, 1)
    h.grid(2**31 - 1 - 8, 1)(FakeCupy(4096))        # within one row's range, not within three
    assert len(h.handed) == 1


def test_torch_tensors_launch_on_their_own_stream_provider():
    h = Harness(["x"], [False], "Q")
    h.table.forget()
    h.grid()(FakeTensor(4096, device=0))
    assert h.driver.launches[0].stream == CUPY_STREAM      # the harness's provider: learn chooses it per plan
    assert raw_slots(h.driver.launches[0], "Q") == [struct.pack("<Q", 4096)]


# ---- callable grids -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("answer, launched", [(7, (7, 1, 1)), ((7,), (7, 1, 1)), ((7, 3), (7, 3, 1)),
                                              ((7, 3, 2), (7, 3, 2)), ((2**31 - 1, 65535, 65535), None)])
def test_a_callable_grid_is_asked_with_the_arguments_by_name_and_the_launch_options(answer, launched):
    h = Harness(["x", "n", "BLOCK"], [False, False, True], "Qi")
    asked = []

    def grid(meta):
        asked.append(dict(meta))
        return answer
    launch = h.grid(grid_fn=grid)
    x = FakeCupy(4096)
    launch(x, 1000, BLOCK=128, num_warps=8)
    assert asked == [{"x": x, "n": 1000, "BLOCK": 128, "num_warps": 8, "num_stages": 3}]
    assert h.handed == [] and h.driver.launches[0].grid == (launched or answer)
    assert h.recorded == [("k", *(launched or answer))]


@pytest.mark.parametrize("answer", [0, (4, 0), (2**31,), (1, 65536), (1, 1, 65536), [4], 4.0, (np.int64(3),), (),
                                    (1, 1, 1, 1), "4"], ids=repr)
def test_a_grid_answer_the_python_path_must_convert_refuse_or_skip_is_handed_over(answer):
    h = Harness(["x"], [False], "Q")
    launch = h.grid(grid_fn=lambda meta: answer)
    launch(FakeCupy(4096))
    assert h.driver.launches == [] and len(h.handed) == 1


def test_a_grid_that_raises_raises_through_the_compiled_path_and_nothing_launches():
    h = Harness(["x"], [False], "Q")

    def grid(meta):
        raise KeyError("BLOCK_SIZE")
    with pytest.raises(KeyError, match="BLOCK_SIZE"):
        h.grid(grid_fn=grid)(FakeCupy(4096))
    assert h.driver.launches == [] and h.handed == []


def test_a_callable_grid_is_not_asked_before_a_plan_exists():
    h = Harness(["x"], [False], "Q")
    asked = []
    h.learn = lambda *a: None                          # no launcher yet: the Python path builds and asks
    h.table = native.Table(names=("x",), constexpr_mask=(False,), learn=h.learn, environment=h.environment,
                           record=h.recorded.append, immutable_types=(),
                           types_from={"_cupy_ndarray": FakeCupy, "_torch_tensor": FakeTensor})
    h.grid(grid_fn=lambda meta: asked.append(meta) or 1)(FakeCupy(4096))
    assert asked == [] and len(h.handed) == 1


def test_a_row_loop_takes_its_grid_x_from_a_callable_grid():
    h = Harness(["x"], [False], "Qi", row=(4, 2))
    h.grid(grid_fn=lambda meta: (1000, 3))(FakeCupy(4096))
    record = h.driver.launches[0]
    assert record.grid == (4, 3, 1) and unpack(record.raw, "Qi") == [4096, 1000]


# ---- through kernel[grid] ----------------------------------------------------------------------------------

def _random_calls(rng):
    calls = []
    for _ in range(12):
        x = FakeCupy(int(rng.integers(1, 1 << 30)) * int(rng.choice([1, 2, 4, 16])))
        y = FakeTensor(int(rng.integers(1, 1 << 30)) * 16) if rng.random() < 0.3 else FakeCupy(4096 * 3)
        n = int(rng.choice([1, int(rng.integers(2, 5000)), 2**31 + 16 * int(rng.integers(1, 99))]))
        calls.append((x, y, n, float(rng.standard_normal()), 128))
    return calls


def test_kernel_grid_launches_through_the_compiled_path_exactly_what_the_python_path_launches(gpu, monkeypatch):
    if not gpu.native:
        pytest.skip("the compiled path only")
    rng = np.random.default_rng()
    calls = _random_calls(rng)
    recorded = {}
    for path in ("python", "native"):
        monkeypatch.setattr(native_launch, "enabled", path == "native")
        k = transpiler.jit(_scale)
        del gpu.driver.launches[:]
        for _ in range(2):                      # the second round meets learned plans
            for x, y, n, s, block in calls:
                k[(2, 3)](x, y, n, s, BLOCK=block)
        recorded[path] = [(r.func, r.grid, r.block, r.smem, r.stream, r.ctx, r.raw) for r in gpu.driver.launches]
        counts = k._native_table.counts() if k._native_table else None
        assert (counts is not None) == (path == "native")
    assert recorded["native"] == recorded["python"]
    assert len(recorded["native"]) == 2 * len(calls)
    assert counts["compiled"] >= len(calls)                    # the whole second round at least
    streams = {r[4] for r in recorded["native"]}
    assert streams <= {CUPY_STREAM, TORCH_STREAM}


def test_a_callable_grid_through_the_compiled_path_launches_what_the_python_path_launches(gpu, monkeypatch):
    if not gpu.native:
        pytest.skip("the compiled path only")
    rng = np.random.default_rng()
    sizes = [int(v) for v in rng.integers(1, 100000, size=6)]
    recorded = {}
    for path in ("python", "native"):
        monkeypatch.setattr(native_launch, "enabled", path == "native")
        k = transpiler.jit(_scale)
        del gpu.driver.launches[:]
        for _ in range(2):
            for n in sizes:
                k[lambda meta: (transpiler.cdiv(meta["n"], meta["BLOCK"]), meta["num_warps"])](
                    FakeCupy(4096), FakeCupy(8192), n, 0.5, BLOCK=256, num_warps=2)
        recorded[path] = [(r.grid, r.block, r.raw) for r in gpu.driver.launches]
    assert recorded["native"] == recorded["python"] and len(recorded["native"]) == 2 * len(sizes)
    assert recorded["native"][0][0] == (-(-sizes[0] // 256), 2, 1)
    assert k._native_table.counts()["compiled"] >= len(sizes)


def test_kernel_grid_from_threads_on_explicit_streams_launches_through_the_compiled_path(gpu, monkeypatch):
    """bench/load_test.py's pattern on the fakes: threads, each with a CuPy-like and a torch-like stream object
    given as `stream=`, several specializations; the compiled path takes every launch once a launcher exists
    and launches exactly what the Python path launches."""
    if not gpu.native:
        pytest.skip("the compiled path only")
    threads, rounds = 8, 30
    recorded, counts = {}, {}
    for path in ("python", "native"):
        monkeypatch.setattr(native_launch, "enabled", path == "native")
        k = transpiler.jit(_scale)
        del gpu.driver.launches[:]

        def work(index):
            streams = [SimpleNamespace(ptr=20000 + 2 * index), TorchLikeStream(20001 + 2 * index)]
            x, y = FakeCupy(4096 * (index + 1)), FakeCupy(4096 * (index + 100))
            for i in range(rounds):
                k[(index + 1, 2)](x, y, 100 + (i % 3), 0.5 * i, BLOCK=128 * (1 + i % 2), stream=streams[i % 2])
        assert run_together(threads, work) == []
        recorded[path] = sorted((r.func, r.grid, r.block, r.stream, tuple(r.raw)) for r in gpu.driver.launches)
        counts[path] = k._native_table.counts() if k._native_table else None
    assert len(recorded["python"]) == threads * rounds and recorded["native"] == recorded["python"]
    assert counts["python"] is None
    # the Python path takes a call only while its launcher is being built (one per specialization and thread)
    assert counts["native"]["handed_over"] <= threads * 6
    assert counts["native"]["compiled"] + counts["native"]["handed_over"] == threads * rounds
    assert counts["native"]["plans"] == 6 and counts["native"]["learned"] == 6


def test_threads_meeting_a_new_kernel_at_once_make_one_table(gpu, monkeypatch):
    """Every grid object of a kernel launches through the one table `counts()` reads, however many threads ask
    for the kernel's first grids at once (`table_for` slowed down here, so that they all meet inside it)."""
    if not gpu.native:
        pytest.skip("the compiled path only")
    real = native_launch.table_for
    made = []

    def slow_table_for(kernel):
        time.sleep(0.05)
        made.append(kernel)
        return real(kernel)
    monkeypatch.setattr(native_launch, "table_for", slow_table_for)
    k = transpiler.jit(_scale)
    threads, grids = 8, [None] * 8

    def work(index):
        grids[index] = k[(index + 1,)]
        for _ in range(5):
            grids[index](FakeCupy(4096), FakeCupy(8192), 100, 1.0, BLOCK=128)
    assert run_together(threads, work) == []
    assert len(made) == 1 and all(g.table is k._native_table for g in grids)
    counts = k._native_table.counts()
    assert counts["compiled"] + counts["handed_over"] == 5 * threads and counts["plans"] == 1


def test_kernel_grid_is_the_python_function_when_nothing_can_be_built(gpu, monkeypatch):
    monkeypatch.setattr(native_launch, "_module", None)
    monkeypatch.setattr(native_launch, "_reason", None)
    monkeypatch.setattr(native_launch.shutil, "which", lambda name: None)
    monkeypatch.delenv("CC", raising=False)
    k = transpiler.jit(_scale)
    launch = k[(1,)]
    assert type(launch).__name__ == "function"
    if gpu.native:
        assert "no C compiler" in native_launch.unavailable_reason()
    k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    assert len(gpu.driver.launches) == 1


def test_the_switch_turns_the_compiled_path_off(gpu, monkeypatch):
    monkeypatch.setenv("TRANSPILER_NATIVE_LAUNCH", "0")
    monkeypatch.setattr(native_launch, "_module", None)
    monkeypatch.setattr(native_launch, "_reason", None)
    assert native_launch.module() is None and native_launch.unavailable_reason() == "TRANSPILER_NATIVE_LAUNCH=0"


def test_a_debug_launcher_is_launched_by_the_python_path(gpu, monkeypatch):
    if not gpu.native:
        pytest.skip("the compiled path only")
    monkeypatch.setenv("TRANSPILER_DEBUG", "1")
    synced = []
    gpu.driver.streamSynchronize = synced.append
    k = transpiler.jit(_scale)
    for _ in range(3):
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    assert synced == [CUPY_STREAM] * 3 and k._native_table.counts()["compiled"] == 0


def test_a_refusal_through_the_compiled_path_points_at_the_users_line(gpu):
    k = gpu.kernel
    x, y = FakeCupy(4096), FakeCupy(8192)
    k[(1,)](x, y, 100, 2.5, BLOCK=128)
    k[(1,)](x, y, 100, 2.5, BLOCK=128)
    with pytest.raises(LaunchError, match="does not fit") as info:
        k[(1,)](x, y, 100, 1e300, BLOCK=128)
    assert [site.file for site in info.value.call_chain] == [__file__]


def test_the_driver_offers_its_functions_by_address_only_with_libcuda(monkeypatch):
    from transpiler.runtime import driver
    monkeypatch.setattr(driver, "_LIBRARY", "libcuda-that-is-not-here.so.1")
    monkeypatch.setattr(driver, "_lib", None)
    with pytest.raises(OSError):
        driver.driver.native_functions()
    monkeypatch.setattr(launcher_mod, "driver", driver.driver)
    assert native_launch.table_for(transpiler.jit(_scale)) is None


@pytest.mark.parametrize("compiled", [True, False])
def test_a_dropped_kernel_is_collected_with_its_plans_and_grid_objects(gpu, monkeypatch, compiled):
    """The table and the grid objects refer back to the kernel (its learner, the Python fallback): they take
    part in the garbage collector's cycle search, so a dropped kernel goes, as it does on the Python path."""
    import gc
    import weakref
    monkeypatch.setattr(native_launch, "enabled", compiled)
    k = transpiler.jit(_scale)
    for _ in range(3):
        k[(1,)](FakeCupy(4096), FakeCupy(8192), 100, 2.5, BLOCK=128)
    assert bool(k._native_table) == (compiled and gpu.native)
    if k._native_table:
        assert k._native_table.counts()["compiled"] == 2
    dropped = weakref.ref(k)
    del k
    gc.collect()
    assert dropped() is None


def test_a_damaged_built_launcher_is_built_again(monkeypatch, tmp_path):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path))
    path = native_launch._built_path(native_launch._compiler())
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF truncated")
    monkeypatch.setattr(native_launch, "_module", None)
    monkeypatch.setattr(native_launch, "_reason", None)
    assert native_launch.module() is not None, native_launch.unavailable_reason()
    assert path.stat().st_size > 1000


def test_a_built_launcher_that_would_load_but_does_not_match_its_digest_is_built_again(monkeypatch, tmp_path):
    """A damaged build that the dynamic loader might still accept (a byte changed in its code) is never run:
    its digest, written beside it when built, no longer matches, and it is built again before loading."""
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path))
    compiler = native_launch._compiler()
    path = native_launch._build(compiler, native_launch._built_path(compiler))    # built, not loaded here
    assert native_launch._intact(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert not native_launch._intact(path)
    built = []
    real_build = native_launch._build
    monkeypatch.setattr(native_launch, "_build", lambda *a: built.append(a) or real_build(*a))
    monkeypatch.setattr(native_launch, "_module", None)
    monkeypatch.setattr(native_launch, "_reason", None)
    assert native_launch.module() is not None, native_launch.unavailable_reason()
    assert len(built) == 1 and native_launch._intact(path)
