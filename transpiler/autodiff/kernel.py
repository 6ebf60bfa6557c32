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
from . import partials, tapes
from .gradient_writes import forced_atomic
from .launch_plan import make_launch
from .reverse import Derivation

_OPTIONS = ("num_warps", "num_stages", "stream", "maxnreg")


INTERPRETER_WAVE = 2     # programs a folded backward runs on the interpreter (so tests see programs run rows)
UNKNOWN_WAVE = 132 * 8   # a folded backward's programs where the cubin's occupancy is unknown


class Derived:
    """One derived backward: its Python source, compiled kernel, and the autodiff decisions."""

    def __init__(self, source, kernel, decisions, grad_names, partial_inputs, zeroed_inputs=(), full_rows=(),
                 folded=False, tapes=(), unread_axes=()):
        self.source = source
        self.kernel = kernel
        self.decisions = decisions
        self.grad_names = grad_names
        self.partial_inputs = partial_inputs    # inputs whose gradient goes through partials.py's buffer
        self.zeroed_inputs = dict(zeroed_inputs)    # accumulate=False: array -> _ZeroTest (zeroed before the
        #                                             launch, unless its writes are plain under a runtime test
        #                                             that holds for the launch's arguments)
        self.full_rows = list(full_rows)            # per partial input: its full row length, or 0
        self.folded = folded                        # one program runs several forward programs (reverse.Fold)
        self.waves = {}                             # (device, num_warps, num_stages) -> resident programs
        self.tapes = list(tapes)                    # tapes.Tape per taped carried value of a loop
        self.unread_axes = tuple(unread_axes)       # grid axes whose program id the forward never reads


def _device_of(a):
    module = type(a).__module__.split(".")[0]
    if module == "torch":
        return a.device.index if a.device.index is not None else 0
    if module == "cupy":
        return a.device.id
    from ..runtime.launch_key import current_device
    return current_device()


class _ZeroTest:
    """Whether an array whose writes are plain under a runtime test (None: never) must be zeroed for a launch:
    the test (the write decision's own text: argument names, integers, `>=`, `-`) is compiled once into a
    function of the scalars it names and evaluated on the host when they are plain numbers."""

    def __init__(self, condition, names):
        self.holds, self.slots = None, []
        if condition is not None:
            code = compile(condition, "<autodiff write condition>", "eval")
            used = [n for n in dict.fromkeys(code.co_names) if n in names]
            self.slots = [names.index(n) for n in used]
            self.holds = eval(compile(f"lambda {', '.join(used)}: {condition}", "<autodiff write condition>",
                                      "eval"), {"__builtins__": {}})

    def __call__(self, values):
        if self.holds is None:
            return True
        scalars = [values[i] for i in self.slots]
        for v in scalars:
            if type(v) not in (int, float):
                return True
        try:
            return not self.holds(*scalars)
        except NameError:           # a name that is no argument
            return True


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
        self._grid_launches = {}        # tuple grid -> its launch function (launch_plan.py)

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
                            {} if accumulate else {n: _ZeroTest(dec.condition, list(fwd.arg_names))
                                                   for n, dec in derivation.decisions.items()
                                                   if not dec.plain and not dec.partials},
                            [derivation.decisions[n].full_row for n in derivation.partial_params],
                            folded=derivation.fold is not None, tapes=derivation.tapes,
                            unread_axes=sorted({0, 1, 2} - derivation.forms.program_axes))
            self._derived[key] = found
        return found

    def _prepare(self, args, kwargs, launching=False, grid=None, interpret=False):
        """(derived kernel, its arguments, launch options, [partials.Plan], the grid it launches on); `grid`
        (None: not launching) sizes the partial buffers and, folded, the programs."""
        values, grads, options, accumulate = self._split(args, kwargs)
        names = list(grads)
        warps, stages = options.get("num_warps", 4), options.get("num_stages", 3)
        d = self.derived(values, names, warps, stages, accumulate)
        for n, needs_zeroing in d.zeroed_inputs.items() if launching else ():
            if needs_zeroing(values):
                partials._zero(grads[n])
        if grid is not None and d.unread_axes and (type(grid) is not tuple or len(grid) > d.unread_axes[0]):
            self._check_unread_axes(d, grid, values, warps, stages)
        size = launch = (partials.GROUPS, 1, 1)     # not launching: the sizes a typical launch has
        if grid is not None and not d.partial_inputs and not d.folded and not d.tapes:
            return d, tuple(values) + tuple(grads[n] for n in names), options, [], grid
        if grid is not None:
            size = launch = self.forward._grid(grid, values, warps, stages)
            if d.folded:
                wave = INTERPRETER_WAVE if interpret else self._wave(d, values, names, grads, size, options,
                                                                     accumulate)
                launch = (min(size[0], wave),) + tuple(size[1:])
        programs = max(launch[0] * launch[1] * launch[2], 1)
        hidden, plans = [], []
        for slot, (n, full) in enumerate(zip(d.partial_inputs, d.full_rows)):
            plan = partials.Plan(grads[n], slot, programs, full, accumulate)
            hidden += plan.arguments()
            plans.append(plan)
        hidden += [size[0]] if d.folded else []
        if d.tapes:
            arguments = dict(zip(self.forward.arg_names, values))
            like = grads[names[0]]
            for t in d.tapes:
                trips = t.trip_count(arguments)
                hidden += [tapes.allocate(like, t, programs if grid is not None else 1, trips), max(trips, 1)]
        return d, tuple(values) + tuple(grads[n] for n in names) + tuple(hidden), options, plans, launch

    def _check_unread_axes(self, d, grid, values, warps, stages):
        """Programs along a grid axis the forward never reads compute the same thing: the forward's result is
        that of one of them, but each would add its gradient again. Refused rather than multiplied."""
        sizes = grid if type(grid) is tuple and all(type(g) is int for g in grid) else \
            self.forward._grid(grid, values, warps, stages)
        for axis in d.unread_axes:
            if axis < len(sizes) and sizes[axis] > 1:
                raise ValueError(f"{self.__name__}: the grid has {sizes[axis]} programs along axis {axis}, whose "
                                 f"program id {self.forward.__name__} never reads; they compute the same values, "
                                 "and the backward would add each gradient once per program (launch the backward "
                                 f"with 1 along axis {axis})")

    def _wave(self, d, values, names, grads, size, options, accumulate):
        """Programs of the folded backward one wave of the device holds (the cubin's registers and shared
        memory), a multiple of 16 (so the partial buffer's row count keeps its specialization); cached."""
        device = _device_of(grads[names[0]])
        key = (device, options.get("num_warps", 4), options.get("num_stages", 3))
        found = d.waves.get(key)
        if found is None:
            from ..runtime import compiler
            probe = (min(size[0] // 16 * 16, UNKNOWN_WAVE) or size[0],) + tuple(size[1:])
            programs = max(probe[0] * probe[1] * probe[2], 1)
            hidden = []
            for slot, (n, full) in enumerate(zip(d.partial_inputs, d.full_rows)):
                hidden += partials.Plan(grads[n], slot, programs, full, accumulate).arguments()
            probe_values = tuple(values) + tuple(grads[n] for n in names) + tuple(hidden) + (size[0],)
            variant = d.kernel.compiled_variant(*probe_values, num_warps=key[1], num_stages=key[2],
                                                arch=compiler.device_arch(device), maxnreg=options.get("maxnreg"))
            resident = variant.resident_programs(device) or UNKNOWN_WAVE
            found = d.waves[key] = max(16, resident // 16 * 16)
        return found

    # -- the kernel object's entry points --------------------------------------------------------------
    def __getitem__(self, grid):
        """The launch function on `grid`: launch_plan.py's fast path, the general path (`_launch`) for the
        calls it does not take; kept per tuple grid (a few hundred at most), as the forward's are."""
        try:
            return self._grid_launches[grid]
        except (KeyError, TypeError):       # not seen yet, or not hashable
            pass
        launch = make_launch(self, grid, lambda args, kwargs: self._launch(grid, args, kwargs))
        if type(grid) is tuple and len(self._grid_launches) < 256:
            self._grid_launches[grid] = launch
        return launch

    def _launch(self, grid, args, kwargs):
        """The general path: everything decided again from the call."""
        d, values, options, plans, size = self._prepare(args, kwargs, launching=True, grid=grid)
        d.kernel[size](*values, **options)
        if plans:
            partials.run_steps(partials.reduction_steps(plans),
                               **({"stream": options["stream"]} if "stream" in options else {}))

    @property
    def interpret(self):
        outer = self

        class _Interpret:
            def __getitem__(self, grid):
                def run(*args, **kwargs):
                    d, values, options, plans, size = outer._prepare(args, kwargs, launching=True, grid=grid,
                                                                     interpret=True)
                    options.pop("stream", None)
                    d.kernel.interpret[size](*values, **options)
                    if plans:
                        partials.reduce_all(plans, interpret=True)
                return run
        return _Interpret()

    def cuda_source(self, *args, arch=None, **kwargs):
        d, values, options, _, _ = self._prepare(args, kwargs)
        return d.kernel.cuda_source(*values, arch=arch, **options)

    def python_source(self, *args, **kwargs) -> str:
        """The derived backward kernel as Triton-dialect Python."""
        return self._prepare(args, kwargs)[0].source

    def ir(self, *args, **kwargs):
        d, values, options, _, _ = self._prepare(args, kwargs)
        return d.kernel.ir(*values, **options)

    def explain(self, *args, arch=None, **kwargs) -> str:
        d, values, options, _, _ = self._prepare(args, kwargs)
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
