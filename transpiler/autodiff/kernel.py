"""`kernel.backward`: the derived backward as an ordinary kernel object.

`kernel.backward[grid](*forward_args, grads={name: array}, **constexprs)` launches it on the forward's grid;
`.cuda_source`, `.explain`, `.ir`, `.interpret[grid]` and `.python_source` take the same arguments. For a
pointer the forward stores to, `grads[name]` holds the incoming gradient of that output; for a pointer it
loads from, the gradient is added into `grads[name]` (torch's `.grad` convention). With `accumulate=False`
the elements the forward reads receive their gradient whatever the array held (no read of the old values: a
gradient written once costs one store); arrays whose writes are not plain stores are zeroed first.

Each call derives (once per forward specialization, set of gradient names, num_warps and num_stages) a
Python kernel in the Triton dialect from the forward's IR (`reverse.py`), registers its source with
`linecache` so errors and the emitted CUDA quote its lines, and compiles it with `transpiler.jit` like any
kernel: its parameters are the forward's followed by one gradient array per name in `grads`.
"""
from __future__ import annotations

import hashlib
import linecache

from ..runtime.kernel import _is_constexpr_param
from . import partials
from .gradient_writes import forced_atomic
from .reverse import Derivation

_OPTIONS = ("num_warps", "num_stages", "stream", "maxnreg")
_ZERO = {"torch": lambda a: a.zero_(), "cupy": lambda a: a.fill(0), "numpy": lambda a: a.fill(0)}


class Derived:
    """One derived backward: its Python source, compiled kernel, and the autodiff decisions."""

    def __init__(self, source, kernel, decisions, grad_names, partial_inputs, zeroed_inputs=(), full_rows=()):
        self.source = source
        self.kernel = kernel
        self.decisions = decisions
        self.grad_names = grad_names
        self.partial_inputs = partial_inputs    # inputs whose gradient goes through partials.py's buffer
        self.zeroed_inputs = list(zeroed_inputs)    # accumulate=False: arrays zeroed before the launch
        self.full_rows = list(full_rows)            # per partial input: its full row length, or 0


def _module_namespace():
    import transpiler
    import transpiler.language as tl
    from transpiler.language.extra import libdevice
    return {"transpiler": transpiler, "tl": tl, "libdevice": libdevice}


def compile_source(source: str, name: str):
    """exec the derived source under a linecache file name (so inspect and the emitter can read it)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    filename = f"<transpiler.autodiff {name} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = _module_namespace()
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[name]
    fn.__module__ = "transpiler.autodiff.derived"
    from ..runtime.kernel import Kernel
    return Kernel(fn)


class BackwardKernel:
    """The backward of `forward` (a transpiler Kernel); see the module docstring."""

    def __init__(self, forward):
        self.forward = forward
        self.__name__ = f"{forward.__name__}_backward"
        self._derived = {}

    # -- derivation -------------------------------------------------------------------------------------
    def _split(self, args, kwargs):
        kwargs = dict(kwargs)
        grads = kwargs.pop("grads", None)
        accumulate = bool(kwargs.pop("accumulate", True))
        if not isinstance(grads, dict) or not grads:
            raise TypeError(f"{self.__name__} needs grads={{name: array}}: the incoming gradient of each output "
                            "to differentiate and the array receiving the gradient of each input")
        options = {k: kwargs.pop(k) for k in _OPTIONS if k in kwargs}
        values = self.forward._bind_args(args, kwargs)
        return values, grads, options, accumulate

    def derived(self, values, grad_names, num_warps=4, num_stages=3, accumulate=True) -> Derived:
        fwd = self.forward
        key = (fwd.spec_key(values), tuple(grad_names), num_warps, num_stages, forced_atomic(), accumulate)
        found = self._derived.get(key)
        if found is None:
            ir = fwd.ir(*values)     # the IR depends on no launch option; the derived kernel gets them at launch
            signature = [f"{p.name}: tl.constexpr" if _is_constexpr_param(p) else p.name for p in fwd.params]
            derivation = Derivation(ir, grad_names, self.__name__, fwd.arg_names, accumulate)
            source = derivation.source(signature)
            kernel = compile_source(source, self.__name__)
            found = Derived(source, kernel, derivation.w.decisions,
                            [derivation.grad_param[n] for n in grad_names], list(derivation.partial_params),
                            [] if accumulate else [n for n, dec in derivation.decisions.items() if not dec.plain],
                            [derivation.decisions[n].full_row for n in derivation.partial_params])
            self._derived[key] = found
        return found

    def _prepare(self, args, kwargs, launching=False, grid=None):
        """(derived kernel, its arguments, launch options, [partials.Plan]); `grid` (None: not launching)
        sizes the partial buffers."""
        values, grads, options, accumulate = self._split(args, kwargs)
        names = list(grads)
        d = self.derived(values, names, options.get("num_warps", 4), options.get("num_stages", 3), accumulate)
        for n in d.zeroed_inputs if launching else ():
            _ZERO[type(grads[n]).__module__.split(".")[0]](grads[n])
        programs = partials.GROUPS
        if grid is not None and d.partial_inputs:
            size = self.forward._grid(grid, values, options.get("num_warps", 4), options.get("num_stages", 3))
            programs = max(size[0] * size[1] * size[2], 1)
        hidden, plans = [], []
        for slot, (n, full) in enumerate(zip(d.partial_inputs, d.full_rows)):
            plan = partials.Plan(grads[n], slot, programs, full)
            hidden += plan.arguments()
            plans.append(plan)
        return d, tuple(values) + tuple(grads[n] for n in names) + tuple(hidden), options, plans

    # -- the kernel object's entry points --------------------------------------------------------------
    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            d, values, options, plans = self._prepare(args, kwargs, launching=True, grid=grid)
            d.kernel[grid](*values, **options)
            for plan in plans:
                plan.reduce()
        return launch

    @property
    def interpret(self):
        outer = self

        class _Interpret:
            def __getitem__(self, grid):
                def run(*args, **kwargs):
                    d, values, options, plans = outer._prepare(args, kwargs, launching=True, grid=grid)
                    options.pop("stream", None)
                    d.kernel.interpret[grid](*values, **options)
                    for plan in plans:
                        plan.reduce(interpret=True)
                return run
        return _Interpret()

    def cuda_source(self, *args, arch=None, **kwargs):
        d, values, options, _ = self._prepare(args, kwargs)
        return d.kernel.cuda_source(*values, arch=arch, **options)

    def python_source(self, *args, **kwargs) -> str:
        """The derived backward kernel as Triton-dialect Python."""
        return self._prepare(args, kwargs)[0].source

    def ir(self, *args, **kwargs):
        d, values, options, _ = self._prepare(args, kwargs)
        return d.kernel.ir(*values, **options)

    def explain(self, *args, arch=None, **kwargs) -> str:
        d, values, options, _ = self._prepare(args, kwargs)
        head = [f"autodiff: {self.__name__} (derived from {self.forward.__name__})"]
        head += [f"  {line}" for line in d.decisions]
        return "\n".join(head) + "\n\n" + d.kernel.explain(*values, arch=arch, **options)


def backward_of(kernel) -> BackwardKernel:
    """The (cached) backward kernel object of a transpiler kernel."""
    found = getattr(kernel, "_backward_kernel", None)
    if found is None:
        found = BackwardKernel(kernel)
        kernel._backward_kernel = found
    return found
