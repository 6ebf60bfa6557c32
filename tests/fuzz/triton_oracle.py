"""The typing oracle: the type every Python name is assigned, in our IR builder and in Triton's code generator.

A kernel module (ours, in the Triton dialect) is built twice for one specialization: by our IR builder and, as
bench/twins.py loads the same file under Triton, by Triton's front end (`triton.compile` to TTIR, which needs
no GPU). While each builds, the assignment of a Python name is recorded with the value's dtype and shape:
ours at `StatementBuilder._assign`, Triton's at `CodeGenerator.assignTarget` (plain, augmented and tuple
assignments go through both). Records are keyed by (function, absolute source line, name); a key recorded
several times (a loop body built twice, a helper called twice) keeps its last type, the one of the final
build. A difference is (line, name, ours, Triton's); a name one side binds to a tensor and the other to a
constexpr is a difference too, as is a kernel one side builds and the other refuses.

Typing differences are wrong answers (an int8 product where Triton's is int32 wraps), so this finds them
without a GPU; bench/typing_oracle.py runs it over the fuzzer's kernels and the project's kernel modules.
Triton is imported only when the oracle runs (CI has no Triton: callers skip).
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Difference:
    function: str
    line: int
    name: str
    ours: str
    triton: str
    text: str = ""          # the source line

    def pattern(self) -> str:
        """The difference with the kernel's particulars left out: the two types (shapes as ranks)."""
        return f"{_shape_class(self.ours)} vs {_shape_class(self.triton)}"

    def __str__(self):
        return f"{self.function}:{self.line} {self.name}: ours {self.ours}, Triton {self.triton}   | {self.text.strip()}"


@dataclass
class Comparison:
    """The outcome for one kernel: the types each side assigned, and where they differ."""

    kernel: str
    ours: dict = field(default_factory=dict)       # (function, line, name) -> type string
    triton: dict = field(default_factory=dict)
    ours_error: str = ""
    triton_error: str = ""
    differences: list = field(default_factory=list)

    @property
    def compared(self) -> bool:
        return not self.ours_error and not self.triton_error

    @property
    def build_disagreement(self) -> str:
        """One side builds the kernel and the other refuses it ('' when both build or both refuse)."""
        if bool(self.ours_error) == bool(self.triton_error):
            return ""
        return f"ours refuses: {self.ours_error}" if self.ours_error else f"Triton refuses: {self.triton_error}"


def _shape_class(t: str) -> str:
    if "[" not in t:
        return t
    dt, shape = t.split("[", 1)
    return f"{dt}[{shape.count('x') + 1}-d]"


# ---- type spelling, one for both sides ------------------------------------------------------------------

def _spell(dtype_name: str, shape) -> str:
    shape = [int(s) for s in shape]
    return f"{dtype_name}[{'x'.join(map(str, shape))}]" if shape else dtype_name


def _our_type(value) -> str:
    from transpiler.parse.ir import Value
    if isinstance(value, Value):
        return _spell(value.dtype.name, value.shape)
    if hasattr(value, "block_shape") and hasattr(value, "element_ty"):       # a block pointer (a Record)
        return _spell(f"block_ptr<{value.element_ty.name}>", value.block_shape)
    return _non_tensor(value)


def _triton_dtype_name(dt) -> str:
    if dt.is_ptr():
        return f"ptr<{_triton_dtype_name(dt.element_ty)}>"
    return dt.name


def _triton_pointer_to_block(t):
    """A block pointer's type (a pointer to a block type) spelt as ours is, else None."""
    element = getattr(t, "element_ty", None)
    if t.is_ptr() and element is not None and element.is_block():
        return _spell(f"block_ptr<{_triton_dtype_name(element.element_ty)}>", element.shape)
    return None


def _triton_type(value) -> str:
    import triton.language as tl
    if isinstance(value, tl.tensor):
        t = value.type
        if _triton_pointer_to_block(t):
            return _triton_pointer_to_block(t)
        if t.is_block():
            return _spell(_triton_dtype_name(t.element_ty), t.shape)
        return _spell(_triton_dtype_name(t), ())
    if isinstance(value, tl.constexpr):
        return _non_tensor(value.value)
    return _non_tensor(value)


def _non_tensor(value) -> str:
    """Names bound to something that is not a tensor: compared by kind only (records, dtypes, tuples...)."""
    if isinstance(value, (bool, int, float)) or value is None:
        return f"constexpr {type(value).__name__}"
    if isinstance(value, tuple):
        return "tuple"
    return "other"


# ---- the recorders ----------------------------------------------------------------------------------------

@contextlib.contextmanager
def _recording_ours(into: dict):
    import libcst as cst
    from transpiler.parse import builder_statements
    original = builder_statements.StatementBuilder._assign

    def _assign(self, target, value, typed_numbers=False):
        original(self, target, value, typed_numbers)
        if isinstance(target, cst.Name) and self.loc is not None:
            bound = self.scope.locals.get(target.value)
            into[(self.loc.function, self.loc.line, target.value)] = _our_type(bound)

    builder_statements.StatementBuilder._assign = _assign
    try:
        yield
    finally:
        builder_statements.StatementBuilder._assign = original


@contextlib.contextmanager
def _recording_triton(into: dict):
    import ast
    from triton.compiler import code_generator
    original = code_generator.CodeGenerator.assignTarget

    def assignTarget(self, target, value):
        result = original(self, target, value)
        if isinstance(target, ast.Name) and hasattr(target, "lineno"):   # Triton's own rewrites have none
            name = self.function_name if hasattr(self, "function_name") else self.jit_fn.__name__
            into[(_short(name), self.begin_line + target.lineno, target.id)] = _triton_type(self.lscope[target.id])
        return result

    code_generator.CodeGenerator.assignTarget = assignTarget
    try:
        yield
    finally:
        code_generator.CodeGenerator.assignTarget = original


def _short(function_name: str) -> str:
    """Triton names a helper's instance after its module and argument types; the Python name is its stem."""
    return function_name.rsplit(".", 1)[-1].split("__", 1)[0]


# ---- signatures -------------------------------------------------------------------------------------------

_NUMPY_TO_TRITON = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                    "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "fp16", "float32": "fp32",
                    "float64": "fp64"}


def triton_signature(names, args, constexprs):
    """Triton's signature and constexprs for launch arguments `args` (NumPy arrays, StandIns, numbers), with the
    specialization Triton's launcher makes: an int equal to 1 and None become constexprs."""
    from transpiler.runtime.args import StandIn
    signature, fixed = {}, dict(constexprs)
    for name, arg in zip(names, args):
        if isinstance(arg, np.ndarray):
            signature[name] = "*" + _NUMPY_TO_TRITON[arg.dtype.name]
        elif isinstance(arg, StandIn):
            signature[name] = "*" + {"bfloat16": "bf16", "bf16": "bf16"}.get(str(getattr(arg.dtype, "name", arg.dtype)),
                                                                         _NUMPY_TO_TRITON.get(str(arg.dtype), "fp32"))
        elif arg is None or (type(arg) is int and arg == 1):
            signature[name], fixed[name] = "constexpr", arg
        elif isinstance(arg, bool):
            signature[name] = "i1"
        elif isinstance(arg, int):
            signature[name] = "i32" if -2**31 <= arg < 2**31 else ("i64" if arg < 2**63 else "u64")
        elif isinstance(arg, float):
            signature[name] = "fp32"
        else:
            raise TypeError(f"no Triton signature for argument {name} = {arg!r}")
    for name in constexprs:
        signature[name] = "constexpr"
    return signature, fixed


# ---- the comparison ---------------------------------------------------------------------------------------

def _first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def build_ours(kernel, args, constexprs) -> tuple[dict, str]:
    types = {}
    try:
        with _recording_ours(types):
            kernel.ir(*args, **constexprs)
    except Exception as error:       # the kernel refused (or our bug): reported, the other kernels go on
        return types, _first_line(error)
    return types, ""


def build_triton(fn, names, args, constexprs) -> tuple[dict, str]:
    """Triton's front end only (the code generator to TTIR, as `triton.compile` starts): the later stages
    (optimization, PTX, ptxas) decide no Python name's type and cost most of the time."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend
    types = {}
    try:
        signature, fixed = triton_signature(names, args, constexprs)
        source = ASTSource(fn, signature, constexprs=fixed)
        target = GPUTarget("cuda", 90, 32)
        backend = make_backend(target)
        options = backend.parse_options(dict(num_warps=4, **source.parse_options()))
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        with _recording_triton(types):
            source.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                           context)
    except Exception as error:
        message = _first_line(error)
        cause = getattr(error, "__cause__", None) or getattr(error, "__context__", None)
        if cause is not None:
            message += " <- " + _first_line(cause)
        return types, message
    return types, ""


def compare_module(path, kernel_name, args, constexprs=None, label=None) -> Comparison:
    """Build kernel `kernel_name` of the module at `path` for launch arguments `args` (NumPy arrays or StandIns
    for pointers, numbers for scalars) and `constexprs`, by us and by Triton, and compare the assigned types."""
    from bench.twins import load
    constexprs = dict(constexprs or {})
    path = Path(path)
    result = Comparison(label or f"{path.name}:{kernel_name}")
    try:
        ours_kernel = getattr(load(path, "ours"), kernel_name)
        triton_fn = getattr(load(path, "triton"), kernel_name)
    except Exception as error:
        result.ours_error = result.triton_error = "module did not load: " + _first_line(error)
        return result
    names = [n for n in ours_kernel.arg_names if n not in constexprs]
    result.ours, result.ours_error = build_ours(ours_kernel, args, constexprs)
    result.triton, result.triton_error = build_triton(triton_fn, names, args, constexprs)
    if result.compared:
        result.differences = differences(result.ours, result.triton, path)
    return result


def compare_source(source: str, kernel_name, args, constexprs=None, label=None) -> Comparison:
    """`compare_module` for a module given as source text (written to a file: both compilers read source files)."""
    return compare_module(write_source(source, kernel_name), kernel_name, args, constexprs, label)


def write_source(source: str, stem: str) -> Path:
    """`source` in a file of its own (a fresh directory: the twins' module names come from the file's stem)."""
    path = Path(tempfile.mkdtemp(prefix="typing_oracle_")) / f"{stem}.py"
    path.write_text(source)
    return path


def differences(ours: dict, triton: dict, path=None) -> list:
    import linecache
    found = []
    for key in sorted(set(ours) | set(triton), key=lambda k: (k[1], k[0], k[2])):
        a, b = ours.get(key, "unbound"), triton.get(key, "unbound")
        if "unbound" in (a, b):
            continue       # a name only one side records: a branch one side folded away, not a type
        if a != b:
            function, line, name = key
            text = linecache.getline(str(path), line) if path else ""
            found.append(Difference(function, line, name, a, b, text))
    return found


def compare_case(case, directory) -> Comparison:
    """Compare one fuzzer case (tests/fuzz/generator.py or families.py), written into `directory`."""
    from .runner import fresh_outputs, launch_args, make_inputs, write_module
    path = write_module(case, directory)
    inputs = make_inputs(case, np.random.default_rng(case.seed))
    args = launch_args(case, inputs, fresh_outputs(case))
    return compare_module(path, case.kernel_name, args, case.constexprs, label=f"seed {case.seed}")


def isolated(compare, *args, label="kernel", **kwargs) -> Comparison:
    """`compare(*args, **kwargs)` in a forked child: an MLIR assertion in Triton's front end aborts the process,
    and it must end one kernel's comparison only (the child's result comes back pickled)."""
    import pickle
    import triton.compiler  # noqa: F401  (imported once, in the parent, so that every child starts warm)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the child: compare, send, leave without cleanup
        os.close(read)
        try:
            payload = pickle.dumps(compare(*args, **kwargs))
        except BaseException as error:             # noqa: BLE001  (anything at all is reported, not raised)
            payload = pickle.dumps(Comparison(label, ours_error=_first_line(error), triton_error="not run"))
        with os.fdopen(write, "wb") as out:
            out.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as incoming:
        payload = incoming.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        return Comparison(label, triton_error=f"the compile crashed (wait status {status})")
    return pickle.loads(payload)
