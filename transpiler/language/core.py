"""The builtin registry: every `tl.*` function is declared here once, by name and signature.

A builtin's Python body never runs in compiled kernels: the parser resolves a call to a builtin by object
identity and hands the bound arguments to the typing rule of the same name (`parse/semantic*.py`). When the
CPU interpreter runs a kernel it installs itself as the current implementation, and a call then goes to the
interpreter's rule of the same name, which for nearly every builtin is the typing rule run against the eager
builder (`interpreter/registry.py`). Adding a builtin is therefore: declare it here, add a typing rule, and give
a new op kind its lowering and its NumPy evaluation.
"""
from __future__ import annotations

import functools
import inspect
import numbers
import operator
import threading

_state = threading.local()


class const:
    """Triton's `tl.const`, an annotation of a kernel's pointer parameter: the kernel only reads through it. The
    parameter's type is then a const pointer (`pointer_type(ty, const=True)`), as in Triton: a `tl.store` or
    an atomic through it, or through a pointer computed from it, is refused at its line, on both paths. On a
    parameter that is not a pointer, and on a `@jit` helper's parameter, the annotation changes nothing (as in
    Triton)."""


def is_const_parameter(param) -> bool:
    """Whether an `inspect.Parameter` of a kernel is annotated `tl.const` (the class, or the string a
    `from __future__ import annotations` module holds: `"tl.const"`, `"const"`)."""
    annotation = param.annotation
    if annotation is const:
        return True
    return isinstance(annotation, str) and annotation.strip().split(".")[-1] == "const"


class constexpr:
    """Annotation for compile-time parameters (`BLOCK: tl.constexpr`); `tl.constexpr(v)` is `v`."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value

    def __bool__(self):
        return bool(self.value)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __hash__(self):
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        """A constexpr holding a function calls it (`@tl.constexpr` on a Python helper, as Triton allows)."""
        return self.value(*args, **kwargs)


def _constexpr_operator(fn, reflected=False):
    """`constexpr op x` is `constexpr(value op x)` (as in Triton), so module-level constants compose."""

    def apply(self, other):
        other = other.value if isinstance(other, constexpr) else other
        result = fn(other, self.value) if reflected else fn(self.value, other)
        # A block operand answers through its own reflected operator; only constants stay constexpr.
        return constexpr(result) if isinstance(result, (numbers.Number, str, tuple)) else result
    return apply


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and", "or", "xor",
              "lt", "le", "gt", "ge", "eq", "ne"):
    _fn = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(constexpr, f"__{_name}__", _constexpr_operator(_fn))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(constexpr, f"__r{_name}__", _constexpr_operator(_fn, reflected=True))
constexpr.__neg__ = lambda self: constexpr(-self.value)
constexpr.__pos__ = lambda self: constexpr(+self.value)
constexpr.__invert__ = lambda self: constexpr(~self.value)


# The classes of runtime values on both paths (the compiler's IR value and block-pointer record, the
# interpreter's block and block pointer); each registers itself here, so `tl.tensor` needs no import of them.
TENSOR_CLASSES: list = []


class _TensorMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, tuple(TENSOR_CLASSES))


class tensor(metaclass=_TensorMeta):
    """Triton's `tl.tensor`, for annotations and `isinstance(x, tl.tensor)`: true of a kernel's runtime values
    (blocks, scalars, block pointers), false of compile-time ones. Values are made by builtins, not by calling it."""

    def __init__(self, *args, **kwargs):
        raise TypeError("tl.tensor values are made by tl builtins (tl.load, tl.full, ...), not by calling tl.tensor")


# The classes of tensor descriptors on both paths (the compiler's record, the interpreter's object).
DESCRIPTOR_CLASSES: list = []


class _DescriptorMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, tuple(DESCRIPTOR_CLASSES))


class tensor_descriptor_base(metaclass=_DescriptorMeta):
    """Triton's `tl.tensor_descriptor` (and `tl.core.tensor_descriptor_base`), for `isinstance(d,
    tl.tensor_descriptor)`: true of descriptors made in the kernel or passed from the host. Made by
    `tl.make_tensor_descriptor` or a host `TensorDescriptor` argument, not by calling it."""

    def __init__(self, *args, **kwargs):
        raise TypeError("tensor descriptors are made by tl.make_tensor_descriptor or passed from the host "
                        "(transpiler.tools.tensor_descriptor.TensorDescriptor), not by calling tl.tensor_descriptor")


tensor_descriptor = tensor_descriptor_base


def current_interpreter():
    """The interpreter running on this thread, or None while compiling or outside kernels."""
    return getattr(_state, "interpreter", None)


def set_interpreter(interpreter):
    previous = current_interpreter()
    _state.interpreter = interpreter
    return previous


BUILTINS: dict[str, object] = {}


def builtin(fn=None, *, name=None):
    """Declare a language builtin. The decorated body only documents the signature."""

    def wrap(f):
        op_name = name or f.__name__

        @functools.wraps(f)
        def call(*args, **kwargs):
            interpreter = current_interpreter()
            if interpreter is None:
                raise RuntimeError(
                    f"tl.{op_name} can only be called inside a @transpile kernel (or under the interpreter)")
            return interpreter.call_builtin(op_name, call, args, kwargs)

        call.__transpiler_builtin__ = op_name
        call.__signature__ = inspect.signature(f)
        BUILTINS[op_name] = call
        return call

    return wrap(fn) if fn is not None else wrap


def builtin_name(obj):
    """The builtin name of `obj` if it is a `tl` builtin, else None."""
    return getattr(obj, "__transpiler_builtin__", None)


def helper(fn):
    """Declare a `tl` function written in the language itself (Triton's `@jit` functions inside
    `triton.language`, such as `tl.rand`): the compiler inlines it like a `@transpile` helper, and the
    interpreter calls it as the Python function it is, so it needs no rules of its own."""
    fn.__transpiler_inline__ = True
    return fn


def constexpr_function(fn):
    """Triton's `triton.constexpr_function`: a plain Python function that a kernel may call while it is compiled,
    on compile-time arguments only; its result is a compile-time value (`triton.cdiv(N, BLOCK)`,
    `triton.language.standard._log2(BLOCK)` inside a kernel). The interpreter calls it as it is."""
    fn.__transpiler_constexpr_function__ = True
    return fn


def is_constexpr_function(obj):
    return getattr(obj, "__transpiler_constexpr_function__", False)


@constexpr_function
def get_int_dtype(bitwidth: int, signed: bool):
    """Triton's `tl.core.get_int_dtype`: the integer dtype of `bitwidth` bits (int1 for 1) and signedness."""
    from .. import dtypes
    if bitwidth == 1:
        return dtypes.int1
    found = {(8, True): dtypes.int8, (8, False): dtypes.uint8, (16, True): dtypes.int16, (16, False): dtypes.uint16,
             (32, True): dtypes.int32, (32, False): dtypes.uint32, (64, True): dtypes.int64,
             (64, False): dtypes.uint64}.get((int(bitwidth), bool(signed)))
    if found is None:
        raise ValueError(f"Unsupported bitwidth {bitwidth} and signedness {signed}")
    return found


@builtin
def to_tensor(x):
    """`x` as a kernel value: a Python number becomes a scalar typed as Triton types literals, a value stays
    itself. As in Triton, it lives in `tl.core`, not in `tl`."""


def __getattr__(name):
    """`triton.language.core.X` as Triton's module offers it: code written against Triton reaches builtins
    through `tl.core` (`core.associative_scan`, `core.tensor`) and a few of its private helpers
    (`core_private.py`). Resolved on use, since `transpiler.language` imports this module."""
    from . import core_private
    if name in core_private.PRIVATE_NAMES:
        return getattr(core_private, name)
    if not name.startswith("__"):
        import transpiler.language as language
        if hasattr(language, name):
            return getattr(language, name)
    raise AttributeError(f"module 'tl.core' has no attribute '{name}'")
