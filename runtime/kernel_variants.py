"""The kernel's specializations: the key that selects one, the frozen compile options it is made under, its
build (the disk cache of generated CUDA, else parse -> analysis -> emission) and the entry points that compile
without launching (`cuda_source`, `compiled_variant`, `ir`, `analysis`, `explain`). A mixin of `Kernel`, which
supplies the arguments' binding (`_bind_for_compile`, the launch binder) and the errors' location."""
from __future__ import annotations

import hashlib
import linecache
import os

from ..errors import InternalCompilerError, TranspilerError
from .. import options as options_mod
from ..language.core import constexpr
from ..targets import source_target
from . import build_events, cache, launch_key, tuple_args
from .error_location import at_definition
from .variant import CompiledVariant, requirement_from_json, requirement_to_json


class KernelVariants:
    # -- specialization ----------------------------------------------------------------------------------
    @at_definition
    def spec_key(self, values):
        """The specialization key of argument values given in parameter order (host arrays and `StandIn`s
        allowed)."""
        key, _, _, _ = (self._binder or self._make_binder())(tuple(values), None, None, False)
        return launch_key.specialization_of(key)

    def source_hash(self):
        if self._source_hash is None:
            self._source_hash = _dependencies_hash(self.fn)
        return self._source_hash

    def compile_options(self):
        """The compile options in force for this kernel now (its own `debug` flag, the environment)."""
        return options_mod.from_env(self.debug)

    def variant(self, key, values, num_warps, num_stages=3, arch=None):
        """The compiled variant of specialization `key` (built once per compile options; `values` are the
        arguments in order) for a device of architecture `arch` (None: any; the source differs only where the
        architecture has instructions the others lack, see `targets.source_target`)."""
        opts = self.variant_options(key, num_warps, num_stages, arch)
        return self._variant_map.get((key, opts), lambda: self._new_variant(key, values, opts))

    def _new_variant(self, key, values, opts):
        variant = self._build_variant(key, values, opts)
        build_events.send("variant", kernel=self, key=key, opts=opts, values=values)
        return variant

    def variant_options(self, key, num_warps, num_stages=3, arch=None):
        """The frozen `CompileOptions` a variant of specialization `key` is made under: this kernel's compile
        options now, with the launch options (`maxnreg` read from the key's option parts)."""
        maxnreg = launch_key.option_parts(key, len(self._names)).get("maxnreg")
        return self.compile_options().for_launch(num_warps, num_stages, source_target(arch), maxnreg)

    def _maxnreg_part(self, maxnreg):
        """The key part a launch's `maxnreg` adds after the parameters' parts (none for the default)."""
        if maxnreg is None:
            return ()
        if type(maxnreg) is not int or not 1 <= maxnreg <= 255:
            raise self._launch_error(f"maxnreg must be an int between 1 and 255 registers per thread, not "
                                     f"{maxnreg!r}", hint="ptxas raises values below its lower bound (24 on sm_90)")
        return (("maxnreg", maxnreg),)

    def _build_variant(self, key, values, opts):
        disk_key = cache.entry_key((self.source_hash(), key, opts, cache.toolchain_fingerprint()))
        entry = cache.load(disk_key)
        if entry is None:
            emitted = self._generate(key, values, opts)
            param_kinds = [None if c else ("ptr" if part[0] in ("ptr", "none") else part[0])
                           for part, c in zip(key, self._constexpr_mask)]
            entry = {"name": self.fn.__name__, "source": emitted.source, "param_kinds": param_kinds,
                     "shared_bytes": emitted.shared_bytes, "row_loop": emitted.row_loop,
                     "persistent": emitted.persistent, "programs_per_block": emitted.programs_per_block,
                     "row_loop_waves": emitted.row_loop_waves, "num_warps": emitted.num_warps,
                     "required_arch": requirement_to_json(emitted.required_arch, self.fn),
                     "tensor_maps": list(emitted.tensor_maps)}
            cache.store(disk_key, entry)
        dump = os.environ.get("TRANSPILER_DUMP_DIR")
        if dump:
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, f"{self.fn.__name__}_{disk_key[:8]}.cu"), "w") as f:
                f.write(entry["source"])
        return CompiledVariant(entry["name"], entry["source"], entry["param_kinds"], entry.get("shared_bytes", 0),
                               disk_key, opts, requirement_from_json(entry.get("required_arch"), self.fn),
                               opts.maxnreg, entry.get("tensor_maps", ()), entry.get("row_loop", False),
                               entry.get("persistent"), entry.get("programs_per_block", 1),
                               entry.get("row_loop_waves", 0), entry.get("num_warps") or opts.num_warps)

    def _arg_specs(self, key, values):
        from ..analysis.specialization import arg_spec
        return [arg_spec(n, part, _unwrap(v), c)
                for n, part, v, c in zip(self._names, key, values, self._constexpr_mask)]

    def _generate(self, key, values, opts):
        """Parse → analysis → emission: the `EmittedKernel` (source and dynamic shared memory) of a variant made
        under the frozen compile options `opts` (the IR from the source and the specialization alone)."""
        from ..analysis import analyze
        from ..emit_cuda import emit_kernel
        from ..emit_cuda.emitter import jinja_env
        from ..parse import build_kernel_ir
        from .template_cache import install, installation_folder
        install(jinja_env(), installation_folder())
        try:
            ir = build_kernel_ir(self.fn, self._arg_specs(key, values), opts)
            try:
                emitted = emit_kernel(ir, analyze(ir, opts))
            except TranspilerError as e:
                raise e.with_context(kernel=self.fn.__name__)
            except Exception as e:   # a typed IR the later passes cannot handle is our bug, not the user's
                raise InternalCompilerError(
                    f"generating CUDA for '{self.fn.__name__}' failed after the kernel type-checked "
                    f"({type(e).__name__}: {e}); this is a bug in transpiler, not in your kernel",
                    self.definition(), kernel=self.fn.__name__,
                    hint="please report it with the kernel's source; kernel.interpret[grid](...) runs it on the "
                         "CPU meanwhile") from e
        except BaseException as e:
            build_events.send("generated", kernel=self, key=key, opts=opts, values=values, error=e)
            raise
        build_events.send("generated", kernel=self, key=key, opts=opts, values=values, source=emitted.source)
        return emitted

    # -- public helpers ----------------------------------------------------------------------------------
    @at_definition
    def cuda_source(self, *args, num_warps=4, num_stages=3, arch=None, include_headers=False, **kwargs):
        """The `.cu` of the specialization these arguments select (NumPy arrays and `StandIn`s may stand in
        for device ones), for a device of architecture `arch` ('sm_90a': with warpgroup MMA). It stands alone
        (our device helpers inlined, as NVRTC compiles it); with `include_headers`, it `#include`s them instead,
        for `nvcc -I"$(python -m transpiler include-dir)"`."""
        if include_headers:
            from ..emit_cuda import emit_kernel
            ir, analysis = self.analysis(*args, num_warps=num_warps, num_stages=num_stages, arch=arch, **kwargs)
            return emit_kernel(ir, analysis, include_headers=True).source
        return self.compiled_variant(*args, num_warps=num_warps, num_stages=num_stages, arch=arch, **kwargs).source

    @at_definition
    def compiled_variant(self, *args, num_warps=4, num_stages=3, arch=None, maxnreg=None, **kwargs):
        """The specialization these arguments select: its source and launch needs (no GPU needed)."""
        values = self._bind_for_compile(args, kwargs, num_warps)
        flat = tuple_args.flattened(self, values)
        if flat is not None:
            return flat[0].compiled_variant(*flat[1], num_warps=num_warps, num_stages=num_stages, arch=arch,
                                            maxnreg=maxnreg)
        return self.variant(self.spec_key(values) + self._maxnreg_part(maxnreg), values, num_warps, num_stages,
                            arch)

    @at_definition
    def ir(self, *args, **kwargs):
        """The typed IR of a specialization (for tests and for reading): made from the source and the
        specialization alone, so it takes no launch options (`analysis` does)."""
        for option in ("num_warps", "num_stages", "maxnreg", "arch"):
            if option in kwargs:
                raise TypeError(f"{self.__name__}.ir() takes no launch options ({option}): the IR does not depend "
                                f"on them; {self.__name__}.analysis(..., {option}=...) applies them")
        return self._ir_of(self._bind_for_compile(args, kwargs, 4))[0]

    @at_definition
    def analysis(self, *args, num_warps=4, num_stages=3, arch=None, maxnreg=None, **kwargs):
        """(IR, analysis) of the specialization these arguments select under these launch options, for a device
        of architecture `arch` (see `cuda_source`): every decision, before any CUDA is written."""
        from ..analysis import analyze
        ir, kernel, key = self._ir_of(self._bind_for_compile(args, kwargs, num_warps))
        key = key + kernel._maxnreg_part(maxnreg)
        return ir, analyze(ir, kernel.variant_options(key, num_warps, num_stages, arch))

    def _ir_of(self, values):
        """(IR, the kernel that built it, its specialization key): tuple arguments flattened first."""
        from ..parse import build_kernel_ir
        flat = tuple_args.flattened(self, values)
        if flat is not None:
            kernel, leaves = flat
            return kernel._ir_of(kernel._bind_for_compile(leaves, {}, 4))
        key = self.spec_key(values)
        return build_kernel_ir(self.fn, self._arg_specs(key, values), self.compile_options()), self, key

    @at_definition
    def explain(self, *args, num_warps=4, num_stages=3, arch=None, **kwargs):
        """A readable report of this specialization's decisions: layouts, vector widths, reductions, shared
        memory, per Python line (see `transpiler/explain.py`); with `arch`, also registers and occupancy."""
        from ..explain import explain_kernel
        return explain_kernel(self, *args, num_warps=num_warps, num_stages=num_stages, arch=arch, **kwargs)


def _unwrap(v):
    return v.value if isinstance(v, constexpr) else v


def _dependencies_hash(fn, seen=None):
    """Hash of fn's source and the sources of the @transpile helpers it names (recursively)."""
    seen = seen if seen is not None else set()
    if fn in seen:
        return ""
    seen.add(fn)
    h = hashlib.sha256(_source_text(fn).encode())
    for name in fn.__code__.co_names:
        obj = fn.__globals__.get(name)
        if getattr(obj, "__transpiler_kernel__", False):
            h.update(_dependencies_hash(obj.fn, seen).encode())
    return h.hexdigest()


def _source_text(fn):
    """The lines of fn's definition, from its first decorator to its last line of code. Found from the code
    object's line table rather than `inspect.getsource`, whose tokenizer costs a new process ~10 ms."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return f"{fn.__qualname__}:{code.co_code.hex()}:{code.co_consts!r}"
    last = max((line for _, _, line in code.co_lines() if line), default=code.co_firstlineno)
    return "".join(lines[code.co_firstlineno - 1:last])
