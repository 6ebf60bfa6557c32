"""torch integration: a kernel's host wrapper registered as a `torch.library` custom op in one call.

    @transpiler.custom_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
        y = torch.empty_like(x)
        scale_kernel[(transpiler.cdiv(x.numel(), 1024),)](x, y, x.numel(), factor, BLOCK=1024)
        return y

`scale` is then `torch.ops.mylib.scale` (a `torch.library.CustomOpDef`): `torch.compile(fullgraph=True)` sees
one opaque op (no graph break: Dynamo does not trace into the wrapper or our launch path), and CUDA graphs
(`torch.cuda.graph`, `mode="reduce-overhead"`) capture its launch, which goes to torch's current stream.

What it decides: the fake (meta) implementation, which torch.compile runs on FakeTensors to learn the shapes,
dtypes and devices of the outputs. Unless `fake=` is given it is the wrapper itself, run with every kernel
launch elided (`launches_elided`): the wrapper's own torch calls (`torch.empty_like`, views, `.shape`) build
fake outputs of the right shape, and each launch, which meets a FakeTensor argument (`args.FakeTensorArgument`),
returns without running. A launch meets a FakeTensor outside such a run only when something traces our launch
path itself; it is refused there (a FakeTensor has no memory), never launched on a null pointer. A wrapper whose
output shapes depend on data (`.item()`, `.tolist()`) needs an explicit `fake=`.

Everything else is `torch.library.custom_op`'s: `mutates_args` (required, as there: the names of the tensor
arguments the wrapper writes in place), `device_types`, `schema`, `tags`; the wrapper's annotations give the
schema. torch is imported only when an op is registered.
"""
from __future__ import annotations

import functools
import threading

_state = threading.local()


def launches_elided() -> bool:
    """Whether this thread is inside a fake run of a custom op's wrapper (where launches do nothing)."""
    return getattr(_state, "depth", 0) > 0


class _ElidingLaunches:
    def __enter__(self):
        _state.depth = getattr(_state, "depth", 0) + 1

    def __exit__(self, *exc):
        _state.depth -= 1


eliding_launches = _ElidingLaunches()


def fake_from_wrapper(wrapper):
    """The fake implementation that runs `wrapper` on FakeTensors with its kernel launches elided."""
    @functools.wraps(wrapper)
    def fake(*args, **kwargs):
        with eliding_launches:
            return wrapper(*args, **kwargs)
    return fake


def custom_op(name, fn=None, /, *, mutates_args, fake=None, device_types=None, schema=None, tags=None):
    """Register host wrapper `fn` as torch custom op `name` ("namespace::op_name") together with its fake
    implementation (`fake`, else `fn` run with launches elided; see the module's docstring); returns torch's
    `CustomOpDef`, callable as the wrapper was. Usable as a decorator (`fn` omitted)."""
    def register(wrapper):
        import torch

        options = {"mutates_args": mutates_args, "device_types": device_types, "schema": schema}
        if tags is not None:
            options["tags"] = tags
        op = torch.library.custom_op(name, wrapper, **options)
        op.register_fake(fake if fake is not None else fake_from_wrapper(wrapper))
        return op

    return register if fn is None else register(fn)
