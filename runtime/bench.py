"""Timing launches on the GPU: `do_bench`, with CUDA events recorded on the stream the kernel runs on.

Like `triton.testing.do_bench`: one call first (compile, warm caches), five calls to estimate the cost, then
as many untimed calls as fill `warmup` ms and as many timed calls as fill `rep` ms, each timed alone between
two events, with the L2 cache flushed before each (a 256 MiB memset) unless `flush_l2=False`. The result is
in milliseconds: the median by default, or the requested quantiles.

A clock says which events and which stream: `TorchClock` when the launches go to torch's current stream (the
arguments are torch tensors), `CupyClock` otherwise; `clock_for(values)` picks one from launch arguments.
"""
from __future__ import annotations

import contextlib

import numpy as np

L2_FLUSH_BYTES = 256 << 20
MAX_REPS = 10_000

_flush_buffers: dict = {}


class CupyClock:
    """CuPy events on one stream of one device (CuPy's current stream unless one is given)."""

    def __init__(self, device=None, stream=None):
        import cupy
        self.cupy = cupy
        self.device = cupy.cuda.runtime.getDevice() if device is None else device
        if isinstance(stream, int):
            stream = cupy.cuda.ExternalStream(stream)
        with cupy.cuda.Device(self.device):
            self.stream = stream if stream is not None else cupy.cuda.get_current_stream()

    def context(self):
        return self.cupy.cuda.Device(self.device)

    def event(self):
        event = self.cupy.cuda.Event()
        event.record(self.stream)
        return event

    def elapsed_ms(self, start, end):
        return self.cupy.cuda.get_elapsed_time(start, end)

    def synchronize(self):
        self.stream.synchronize()

    def flush_l2(self):
        key = ("cupy", self.device)
        buf = _flush_buffers.get(key)
        if buf is None:
            buf = _flush_buffers[key] = self.cupy.empty(L2_FLUSH_BYTES, dtype=self.cupy.uint8)
        with self.stream:
            buf.fill(0)


class TorchClock:
    """torch CUDA events on torch's current stream of one device."""

    def __init__(self, device=None):
        import torch
        self.torch = torch
        self.device = torch.cuda.current_device() if device is None else device
        self.stream = torch.cuda.current_stream(self.device)

    def context(self):
        return self.torch.cuda.device(self.device)

    def event(self):
        event = self.torch.cuda.Event(enable_timing=True)
        event.record(self.stream)
        return event

    def elapsed_ms(self, start, end):
        return start.elapsed_time(end)

    def synchronize(self):
        self.stream.synchronize()

    def flush_l2(self):
        key = ("torch", self.device)
        buf = _flush_buffers.get(key)
        if buf is None:
            buf = _flush_buffers[key] = self.torch.empty(L2_FLUSH_BYTES // 4, dtype=self.torch.int32,
                                                          device=f"cuda:{self.device}")
        with self.torch.cuda.stream(self.stream):
            buf.zero_()


def device_of(values):
    """The device of the first GPU array among launch argument values, or None."""
    return _launch_target(values)[0]


def clock_for(values, stream=None):
    """The clock for a launch with these argument values: torch's when any is a CUDA tensor (the launch goes
    to torch's current stream), else CuPy's on `stream` or CuPy's current stream; on the arrays' device."""
    device, torch_device = _launch_target(values)
    if torch_device is not None and stream is None:
        return TorchClock(torch_device)
    return CupyClock(device, stream)


def _launch_target(values):
    from .args import array_info
    device, torch_device = None, None
    for v in values:
        if v is None or isinstance(v, (int, float, bool, str, np.generic)):
            continue
        info = array_info(v)
        if info is None or info.device is None:
            continue
        device = info.device if device is None else device
        if info.framework == "torch" and torch_device is None:
            torch_device = info.device
    return device, torch_device


def do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode="median", flush_l2=True, clock=None):
    """Run `fn` (which launches work on the GPU) repeatedly and return its time in ms: the median, or
    `return_mode` ('min', 'max', 'mean', 'median', 'all'), or a list of `quantiles` when given."""
    clock = clock if clock is not None else CupyClock()
    with clock.context() if hasattr(clock, "context") else contextlib.nullcontext():
        fn()
        clock.synchronize()
        start = clock.event()
        for _ in range(5):
            if flush_l2:
                clock.flush_l2()
            fn()
        end = clock.event()
        clock.synchronize()
        estimate = max(clock.elapsed_ms(start, end) / 5, 1e-4)
        for _ in range(min(MAX_REPS, max(1, int(warmup / estimate)))):
            fn()
        pairs = []
        for _ in range(min(MAX_REPS, max(1, int(rep / estimate)))):
            if flush_l2:
                clock.flush_l2()
            begin = clock.event()
            fn()
            pairs.append((begin, clock.event()))
        clock.synchronize()
        times = np.array([clock.elapsed_ms(a, b) for a, b in pairs], dtype=np.float64)
    return summarize(times, quantiles, return_mode)


def summarize(times, quantiles=None, return_mode="median"):
    if quantiles is not None:
        q = np.quantile(times, quantiles).tolist()
        return q[0] if len(q) == 1 else q
    if return_mode == "all":
        return times.tolist()
    modes = {"min": np.min, "max": np.max, "mean": np.mean, "median": np.median}
    if return_mode not in modes:
        raise ValueError(f"return_mode must be one of {sorted(modes) + ['all']}, not {return_mode!r}")
    return float(modes[return_mode](times))
