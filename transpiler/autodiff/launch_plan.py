"""The fast host path of `kernel.backward[grid](...)`: what a call launches, decided once per call signature.

The general path (`BackwardKernel._prepare`) does at every call what depends only on the call's signature:
binding the arguments, the forward's specialization key, finding the derived kernel, the grid and the wave of
a folded backward, the partial-sum plans (buffers, their rows), the summing launches and their grids; and it
launched by keyword. Here that is a `LaunchPlan`, made on a call's first use of its plan key:

    (the forward's launch key (its launch binder's: specialization, num_warps, num_stages, environment,
     device), the gradient names in order, accumulate, TRANSPILER_AUTODIFF_WRITES)

under the tuple grid the launch function was made for, with the buffers and summing launches per stream.
A call then: binds the forward's arguments (all by position, or constexprs after the runtime ones by keyword,
as Triton code passes them), runs the forward's generated binder for the key (the same code as the forward's
own launches: the key cannot drift from the specialization), checks the gradient arrays against the plan
(their types; the shapes and dtypes of those summed through partial buffers, which size the buffers), runs
the zeroing tests of accumulate=False (functions compiled once, of the scalars they name), and launches the
derived kernel and the summing kernels by position (the launcher's fast path) on the stream it read once.
Nothing is allocated and nothing is evaluated from text at a call.

Everything else goes to the general path with the call untouched, which words every refusal the same way:
a callable grid or one the fast grid check does not take, other keyword arguments or counts, missing or
empty `grads`, host arrays, arguments the binder does not take, a stream object, backwards with tapes (their
buffers are sized by the loops' trip counts, read from the scalars of each call).
"""
from __future__ import annotations

import math

from .. import options as environment
from ..runtime import grid_launch, launcher as runtime_launcher
from ..runtime.launch_key import HOST, TORCH
from . import partials
from .gradient_writes import forced_atomic

GENERAL = object()      # a plan key whose calls always take the general path (a backward with tapes)

_forced_seen = [(-1, False)]   # (os.environ's change count when read, forced_atomic() then)


def forced_atomic_now() -> bool:
    """`forced_atomic()`, read again only after os.environ changed (transpiler/options.py counts changes)."""
    if not environment._watching:
        return forced_atomic()
    seen, value = _forced_seen[0]
    changes = environment._changes[0]
    if seen != changes:
        value = forced_atomic()
        _forced_seen[0] = (changes, value)
    return value


class _PerStream:
    """A plan's partial buffers and summing launches on one stream."""

    def __init__(self, plan, grads, stream):
        programs = max(math.prod(plan.launch_grid), 1)
        d = plan.derived
        partial_plans, hidden = [], []
        for slot, (name, full) in enumerate(zip(d.partial_inputs, d.full_rows)):
            p = partials.Plan(grads[name], slot, programs, full, plan.accumulate, stream=stream, zero_now=False)
            hidden += p.arguments()
            partial_plans.append(p)
        hidden += [plan.size[0]] if d.folded else []
        self.hidden = tuple(hidden)
        self.zeroed_buffers = [p.buffer for p in partial_plans if not p.own_rows]   # atomic adds into shared rows
        # The gradient arrays' places are filled at each call: the plan keeps no reference to a user's array.
        self.steps = [(launch, tuple(None if any(i == index for index, _ in slots) else a
                                     for i, a in enumerate(arguments)), slots, warps)
                      for launch, arguments, slots, warps in partials.reduction_steps(partial_plans)]


class LaunchPlan:
    """One call signature's launches (see the module docstring)."""

    def __init__(self, backward, values, grads, accumulate, num_warps, num_stages, grid):
        names = list(grads)
        forward = backward.forward
        d = self.derived = backward.derived(values, names, num_warps, num_stages, accumulate)
        self.accumulate = accumulate
        if d.unread_axes and len(grid) > d.unread_axes[0]:
            backward._check_unread_axes(d, grid, values, num_warps, num_stages)
        arrays = [grads[n] for n in names]
        self.grad_types = tuple(map(type, arrays))
        self.partial_indices = tuple(names.index(n) for n in d.partial_inputs)
        self.partial_facts = tuple((tuple(arrays[i].shape), arrays[i].dtype) for i in self.partial_indices)
        self.zero_tests = [(names.index(n), test) for n, test in d.zeroed_inputs.items()]
        if d.partial_inputs or d.folded:
            self.size = forward._grid(grid, values, num_warps, num_stages)
            self.launch_grid = self.size
            if d.folded:
                wave = backward._wave(d, values, names, grads, self.size, {"num_warps": num_warps,
                                                                            "num_stages": num_stages}, accumulate)
                self.launch_grid = (min(self.size[0], wave),) + tuple(self.size[1:])
        else:
            self.size = self.launch_grid = grid
        self.kernel_launch = d.kernel[self.launch_grid]
        self.streams = {}

    def matches(self, arrays) -> bool:
        """Whether the gradient arrays of a call are what the plan was made for."""
        if tuple(map(type, arrays)) != self.grad_types:
            return False
        for i, (shape, dtype) in zip(self.partial_indices, self.partial_facts):
            if arrays[i].shape != shape or arrays[i].dtype != dtype:
                return False
        return True

    def per_stream(self, grads, stream) -> _PerStream:
        found = self.streams.get(stream)
        if found is None:
            if len(self.streams) > 16:
                self.streams.clear()
            found = self.streams[stream] = _PerStream(self, grads, stream)
        return found


def make_launch(backward, grid, general):
    """The function `backward[grid]` returns for a tuple grid of ints: the fast path, `general(args, kwargs)`
    (the general path, kwargs with grads and the options back in) for anything else."""
    forward = backward.forward
    names = forward._names
    n = len(names)
    tails = tuple(tuple(names[i:]) for i in range(n + 1))
    checked = grid_launch.fast_grid(grid)
    plans = {}

    def slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream):
        kwargs = dict(kwargs, grads=grads, accumulate=accumulate, num_warps=num_warps, num_stages=num_stages)
        if stream is not None:
            kwargs["stream"] = stream
        return general(args, kwargs)

    if checked is None:
        return lambda *args, **kwargs: general(args, kwargs)

    def launch(*args, grads=None, accumulate=True, num_warps=4, num_stages=3, stream=None, **kwargs):
        if kwargs:
            if len(args) + len(kwargs) != n:
                return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
            try:
                values = args + tuple(map(kwargs.__getitem__, tails[len(args)]))
            except KeyError:
                return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
        elif len(args) != n:
            return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
        else:
            values = args
        if type(grads) is not dict or not grads or type(stream) not in (int, type(None)):
            return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
        accumulate = bool(accumulate)
        try:
            key, _, device, frameworks = (forward._binder or forward._make_binder())(values, num_warps, num_stages)
        except Exception:
            return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
        if frameworks & HOST or device < 0:
            return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
        plan_key = (key, tuple(grads), accumulate, forced_atomic_now())
        arrays = tuple(grads.values())
        plan = plans.get(plan_key)
        if plan is None or (plan is not GENERAL and not plan.matches(arrays)):
            try:
                plan = LaunchPlan(backward, values, grads, accumulate, num_warps, num_stages, grid)
                if plan.derived.tapes:
                    plan = GENERAL
            except Exception:
                return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
            if len(plans) > 64:
                plans.clear()
            plans[plan_key] = plan
        if plan is GENERAL:
            return slow(args, kwargs, grads, accumulate, num_warps, num_stages, stream)
        if stream is None:
            stream = runtime_launcher.torch_stream(device) if frameworks & TORCH else \
                runtime_launcher.cupy_stream(device)
        for index, test in plan.zero_tests:
            if test(values):
                partials._zero(arrays[index])
        on_stream = plan.per_stream(grads, stream)
        for buffer in on_stream.zeroed_buffers:
            partials._zero(buffer)
        plan.kernel_launch(*values, *arrays, *on_stream.hidden, num_warps=num_warps, num_stages=num_stages,
                           stream=stream)
        if on_stream.steps:
            partials.run_steps(on_stream.steps, arrays_of(arrays, plan.partial_indices), stream=stream)
        return None

    return launch


def arrays_of(arrays, indices):
    """The gradient arrays of the partial plans, in their order."""
    return [arrays[i] for i in indices]
