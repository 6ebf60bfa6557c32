"""The specialization key of one launch, computed in one pass over the arguments, cheap enough for every launch.

Decides, per argument, the key part that selects a compiled variant, as Triton does but finer: for pointers the
element type and the address's alignment (the largest of 1, 2, 4, 8, 16 bytes dividing it); for integers int32 /
int64 / uint64 by value, whether the value is 1 (then folded to the constant 1) and the largest of 1, 2, 4, 8, 16
dividing it (Triton knows only 16: a row stride of 4k fp32 elements then still proves 16-byte rows); each is one
field, so a value selects one of at most five variants per argument where Triton's has two; Python floats are
fp32, bools int1; NumPy scalars keep their type; None is None to the compiler (as in Triton: `if B is not
None:` folds) and a null pointer in its slot; constexprs by value. The same pass collects what the launch
needs: the value of each runtime parameter slot (an address or a scalar), the device holding the arrays and
which frameworks they come from. `analysis/specialization.py` turns the key parts back into what the IR
builder is told.

Speed: the pass is a function generated per kernel from its parameter list (`binder_source`), straight-line
code with no loop; the key parts are shared tuples made once (no allocation per argument); the common argument
types (CuPy arrays, torch tensors, Python ints and floats) are recognised by `type(x) is ...` before anything
general runs. Everything else (NumPy scalars, `__cuda_array_interface__` and DLPack objects, NumPy arrays and
`StandIn`s for compile-only use) goes through `_other` and `args.array_info`, slower and general. A launch the
pass refuses (arrays in host memory, arrays on two devices) is worded by `refusal` through the general path, so
the message names every array concerned.
"""
from __future__ import annotations

import hashlib
import marshal
import sys

import numpy as np

from .. import dtypes
from ..options import ENVIRONMENT, environment_token  # noqa: F401  (named by the generated binders)
from ..errors import ArgumentOverflowError, LaunchError
from ..language.core import constexpr  # noqa: F401  (named by the generated binders)
from . import cache
from .args import ArrayInfo, FakeTensorArgument, array_info, device_error

# Framework bits of a launch: they choose the stream (torch's current stream when any tensor is a torch one).
TORCH, CUPY, FOREIGN, HOST = 1, 2, 4, 8

NO_DEVICE = -1

FP32 = ("fp32",)
INT1 = ("int1",)
NONE = ("none",)         # a None given for a pointer (an optional bias): a null slot, None to the compiler
_INT_PARTS = {}          # (dtype name, equal to one, power of two <= 16 dividing it) -> the one shared tuple
_PTR_PARTS = {}          # array dtype object (NumPy, torch) -> its 16 parts, indexed by address & 15
_PTR_BY_NAME = {}        # our dtype name -> the same 16 parts

MAX_KEYED_DIVISOR = 16   # the widest access is 16 bytes: a larger power of two proves nothing more


def low_pow2(low_bits: int) -> int:
    """The largest power of two <= 16 dividing a number whose four low bits are `low_bits`."""
    return low_bits & -low_bits if low_bits else MAX_KEYED_DIVISOR


# Indexed by `x & 15`: what the binder's straight-line code looks up instead of computing a divisor.
_LOW_POW2 = tuple(low_pow2(b) for b in range(16))


def int_part(name: str, value: int):
    part = (name, value == 1, low_pow2(value & 15))
    return _INT_PARTS.setdefault(part, part)


_I32_ONE = int_part("int32", 1)
_I32_BY_LOW_BITS = tuple(_INT_PARTS.setdefault(("int32", False, d), ("int32", False, d)) for d in _LOW_POW2)


def integer_dtype(value: int):
    """As Triton types an int argument: int32 when it fits, uint64 from 2**63, else int64 (`dtypes`)."""
    return dtypes.argument_scalar_dtype(value)


def wide_int_part(value: int, name: str, kernel_name: str):
    """Key part of an int outside int32 (int64, uint64); LaunchError for one that no C integer holds."""
    if -2**63 <= value < 2**64:
        return int_part(integer_dtype(value).name, value)
    raise ArgumentOverflowError.of(name, value, kernel_name)


def scalar_key(value):
    """Key part of a non-array argument (TypeError for anything that is not a scalar)."""
    if isinstance(value, (bool, np.bool_)):
        return INT1
    if isinstance(value, int):
        return int_part(integer_dtype(value).name, value)
    if isinstance(value, float):
        return FP32
    if isinstance(value, np.generic):
        dt = dtypes.from_array_dtype(value.dtype)
        if dt.is_int():
            return int_part(dt.name, int(value))
        return (dt.name,)
    raise TypeError(f"unsupported argument type {type(value).__name__}")


def pointer_parts(array_dtype):
    """The key parts for arrays of `array_dtype` (a NumPy or torch dtype, or ours), indexed by address & 15."""
    if isinstance(array_dtype, dtypes.dtype):
        return _by_name(array_dtype.name)
    parts = _PTR_PARTS.get(array_dtype)
    if parts is None:
        parts = _PTR_PARTS[array_dtype] = _by_name(dtypes.from_array_dtype(array_dtype).name)
    return parts


def _by_name(name):
    parts = _PTR_BY_NAME.get(name)
    if parts is None:
        parts = _PTR_BY_NAME[name] = tuple(("ptr", name, _LOW_POW2[b]) for b in range(16))
    return parts


def constexpr_key(value):
    """Key part of a constexpr: the value itself for ints and strings (the usual BLOCK sizes and flags), a
    tagged tuple otherwise so that 1, True and 1.0 select different variants."""
    t = type(value)
    if t is int or t is str:
        return value
    if t is bool or t is float:
        return (t.__name__, value)
    if isinstance(value, (list, tuple)):
        return tuple(constexpr_key(v) for v in value)
    if isinstance(value, dtypes.dtype):
        return ("dtype", value.name)
    if value is None:
        return None
    builtin = getattr(value, "__transpiler_builtin__", None)
    if builtin is not None:          # a tl function passed as a constexpr: its name, not its address
        return ("builtin", builtin)
    return (type(value).__name__, repr(value))


class _NeverAType:
    """Stands for CuPy's ndarray and torch's Tensor until one is seen, so nothing imports them early."""


_cupy_ndarray = _NeverAType
_torch_tensor = _NeverAType


def _learn_type(value):
    """Remember CuPy's / torch's array type the first time one is passed (for the `type(x) is` tests)."""
    global _cupy_ndarray, _torch_tensor
    t = type(value)
    mod = t.__module__
    if mod.startswith("cupy") and t.__name__ == "ndarray":
        _cupy_ndarray = t
    elif mod.startswith("torch") and t.__name__ == "Tensor":
        _torch_tensor = t


# ---- the per-kernel binder -------------------------------------------------------------------------------
#
# One function per kernel, generated from its parameter list, does the whole pass in straight-line code (no
# loop, no per-argument calls for the common types). `kernel.launch_binder_source()` prints it. Its arguments
# are the launch arguments in parameter order, num_warps, num_stages and `for_launch` (False for
# `cuda_source` and friends: host arrays are then accepted and no device is asked for). It returns
#   key        (one part per parameter..., num_warps, num_stages, environment token, device): selects the
#              launcher;
#   values     one value per runtime parameter: the address of an array, a scalar as given;
#   device     the device holding the arrays (the current device when there are none; -1 when not for_launch);
#   frameworks TORCH | CUPY | FOREIGN | HOST bits.

_PARAM = """\
    # {name}
    t = type(a{i})
    if t is _cupy_ndarray:
        m = a{i}.data
        v{i} = m.ptr
        k{i} = (_PTR_PARTS.get(a{i}.dtype) or _parts(a{i}.dtype, {name!r}, {kernel!r}))[v{i} & 15]
        frameworks |= CUPY
        if m.device_id != device:
            if device >= 0:
                {refuse}
            device = m.device_id
    elif t is int:
        v{i} = a{i}
        if -2147483648 <= a{i} <= 2147483647:
            k{i} = _I32_ONE if a{i} == 1 else _I32_BY_LOW_BITS[a{i} & 15]
        else:
            k{i} = wide_int_part(a{i}, {name!r}, {kernel!r})
    elif t is _torch_tensor:
        v{i} = a{i}.data_ptr()
        d = a{i}.get_device()
        k{i} = (_PTR_PARTS.get(a{i}.dtype) or _parts(a{i}.dtype, {name!r}, {kernel!r}))[v{i} & 15]
        frameworks |= TORCH if d >= 0 else HOST
        if d >= 0 and d != device:
            if device >= 0:
                {refuse}
            device = d
    elif t is float:
        v{i} = a{i}
        k{i} = FP32
    else:
        k{i}, v{i}, d, f = _other(a{i}, {name!r}, {kernel!r})
        frameworks |= f
        if d >= 0 and d != device:
            if device >= 0:
                {refuse}
            device = d
"""

_CONSTEXPR = """\
    # {name} (constexpr)
    if type(a{i}) is constexpr:
        a{i} = a{i}.value
    t = type(a{i})
    k{i} = a{i} if t is int or t is str else constexpr_key(a{i})
"""


_GENERIC = """\
    k{i} = generic_part(k{i})   # do_not_specialize
"""


def generic_part(part):
    """The key part of a `do_not_specialize` parameter: the type only, never ==1, divisibility or alignment."""
    if part[0] == "ptr":
        return _by_name(part[1])[1]          # address 1 mod 16: alignment 1
    if len(part) == 3:
        generic = (part[0], False, 1)
        return _INT_PARTS.setdefault(generic, generic)
    return part


# The launch key, as the binder makes it (a flat tuple: it is hashed on every launch, and a flat tuple of shared
# parts hashes fastest): one part per parameter, then the parts of launch options that select another variant
# (("maxnreg", n)), then the launch options every key ends with and the token of the code-changing environment
# variables (`options.environment_token`: a launcher is made under the values it names). Read and extended only
# through the functions below, never by position.
LAUNCH_TAIL = ("num_warps", "num_stages", "environment", "device")


def specialization_of(key) -> tuple:
    """The parts that select a compiled variant: the parameters' parts and the option parts after them."""
    return key[:-len(LAUNCH_TAIL)]


def with_option_parts(key, parts) -> tuple:
    """`key` with launch-option parts (("maxnreg", n), ...) after the parameters' parts."""
    return key[:-len(LAUNCH_TAIL)] + tuple(parts) + key[-len(LAUNCH_TAIL):]


def device_of(key) -> int:
    return key[-1]


def environment_of(key) -> int:
    """The code-changing environment's token the key was made under."""
    return key[-2]


def on_device(key, device) -> tuple:
    return key[:-1] + (device,)


def option_parts(specialization, n_params) -> dict:
    """{option: value} of the launch-option parts of a specialization key of a kernel with `n_params` parameters."""
    return dict(specialization[n_params:])


def parameter_pass(names, constexpr_mask, kernel_name, generic_mask, refuse) -> list:
    """The lines of the pass over `a0, a1, ...` that set `k<i>` (key part), `v<i>` (slot value), `device` and
    `frameworks` (both initialised by the caller), one block per parameter; `refuse` is the statement run for
    arrays on two devices."""
    lines = []
    for i, (name, is_constexpr) in enumerate(zip(names, constexpr_mask)):
        lines.append((_CONSTEXPR if is_constexpr else _PARAM).format(i=i, name=name, kernel=kernel_name,
                                                                     refuse=refuse).rstrip())
        if generic_mask and generic_mask[i]:
            lines.append(_GENERIC.format(i=i).rstrip())
    return lines


def tuple_of(items) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def binder_source(names, constexpr_mask, kernel_name, generic_mask=None) -> str:
    args = [f"a{i}" for i in range(len(names))]
    # The refusal's constants are a default argument, not literals at each refusal: a kernel of 60 parameters
    # has 180 refusal sites, and compiling 180 copies of two 60-element tuples took 70 ms of a cold launch.
    refusal_args = f"{tuple(names)!r}, {tuple(constexpr_mask)!r}, {kernel_name!r}"
    lines = [f"def launch_facts(args, num_warps, num_stages, for_launch=True, _refusal=({refusal_args})):",
             f"    {tuple_of(args)} = args" if names else "    assert not args",
             "    device = -1", "    frameworks = 0"]
    lines += parameter_pass(names, constexpr_mask, kernel_name, generic_mask, refuse="raise refusal(args, *_refusal)")
    keys = [f"k{i}" for i in range(len(names))] + ["num_warps", "num_stages", "environment", "device"]
    values = [f"v{i}" for i, c in enumerate(constexpr_mask) if not c]
    lines += ["    if frameworks & HOST and for_launch:", "        raise refusal(args, *_refusal)",
              "    if device < 0 and for_launch:", "        device = current_device()",
              "    environment = ENVIRONMENT[0]", "    if environment is None:",
              "        environment = environment_token()",
              f"    return {tuple_of(keys)}, {tuple_of(values)}, device, frameworks"]
    return "\n".join(lines) + "\n"


def make_binder(names, constexpr_mask, kernel_name, generic_mask=None):
    """The generated `launch_facts` of a kernel with these parameters (see `binder_source`; `generic_mask`
    marks the `do_not_specialize` ones). Compiling it costs milliseconds, so the code object is kept in the disk
    cache (marshal) for the next process."""
    namespace = {}
    exec(_code_of(binder_source(names, constexpr_mask, kernel_name, generic_mask), kernel_name), globals(),
         namespace)
    return namespace["launch_facts"]


def _code_of(source, kernel_name, filename=None):
    """The code object of a generated `source` (compiled as `filename`), from the disk cache when it is there."""
    named = source if filename is None else filename + source      # the code object holds its file name
    filename = filename or f"<launch binder of {kernel_name}>"
    name = f"binder-{sys.implementation.cache_tag}-{hashlib.sha256(named.encode()).hexdigest()[:24]}.marshal"
    payload = cache.load_named(name)       # checked against its digest: marshal must never see a damaged file
    if payload is not None:
        try:
            return marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            pass
    code = compile(source, filename, "exec")
    cache.write(name, marshal.dumps(code))
    return code


_binders = {}


def launch_facts(constexpr_mask, args, names, kernel_name, for_launch=False):
    """`(key parts, slot values, device, framework bits)` for arguments in parameter order, through the binder
    of a kernel with these parameters (for tests and tools; kernels keep their own binder)."""
    sig = (tuple(names), tuple(constexpr_mask), kernel_name)
    binder = _binders.get(sig) or _binders.setdefault(sig, make_binder(*sig))
    key, values, device, frameworks = binder(tuple(args), None, None, for_launch)
    return list(specialization_of(key)), list(values), device, frameworks


def current_device() -> int:
    from cupy_backends.cuda.api import runtime
    return runtime.getDevice()


def _other(v, name, kernel_name):
    """Everything the binder does not recognise by its type: `(key part, value, device, framework bits)`. An
    array in host memory is marked HOST: a launch refuses it (`refusal`), `cuda_source` and friends take it."""
    if type(v) is bool or isinstance(v, np.generic):
        return _scalar_part(v, name, kernel_name), v, NO_DEVICE, 0
    if v is None:
        return NONE, 0, NO_DEVICE, 0
    info = _array(v, name, kernel_name)
    part = _parts(info.dtype, name, kernel_name)[info.ptr & 15]
    if info.device is None:
        return part, info.ptr, NO_DEVICE, HOST
    return part, info.ptr, info.device, TORCH if info.framework == "torch" else FOREIGN


def refusal(args, names, constexpr_mask, kernel_name):
    """The LaunchError for arguments the binder refused (arrays in host memory, arrays on two devices), in the
    words of the general path (`args.device_error`), which names every array concerned. An argument of an
    unsupported type or element type raises its own error first, as it would on the general path."""
    named = []
    for v, name, is_constexpr in zip(args, names, constexpr_mask):
        if not is_constexpr:
            info = _placement(v, name, kernel_name)
            if info is not None:
                named.append((name, info))
    return device_error(kernel_name, named)


def _placement(v, name, kernel_name):
    """The ArrayInfo of an array argument (its device None in host memory), None for a scalar."""
    t = type(v)
    if t is _cupy_ndarray:
        _parts(v.dtype, name, kernel_name)
        return ArrayInfo(v.data.ptr, None, v.data.device_id, "cupy", v)
    if t is _torch_tensor:
        _parts(v.dtype, name, kernel_name)
        d = v.get_device()
        return ArrayInfo(v.data_ptr(), None, d, "torch", v) if d >= 0 else ArrayInfo(0, None, None, "torch-cpu", v)
    if t is int or t is float or t is bool or isinstance(v, np.generic):
        _scalar_part(v, name, kernel_name)
        return None
    info = _array(v, name, kernel_name)
    _parts(info.dtype, name, kernel_name)
    return info


def _array(v, name, kernel_name):
    _learn_type(v)
    try:
        info = array_info(v)
    except TypeError as e:
        raise _bad_element_type(name, e, kernel_name) from None
    except FakeTensorArgument as e:
        raise FakeTensorArgument(e.tensor, name, kernel_name) from None
    if info is None:
        raise _unsupported(v, name, kernel_name)
    return info


def _parts(array_dtype, name, kernel_name):
    try:
        return pointer_parts(array_dtype)
    except TypeError as e:
        raise _bad_element_type(name, e, kernel_name) from None


def _scalar_part(v, name, kernel_name):
    try:
        return scalar_key(v)
    except TypeError:
        raise _unsupported(v, name, kernel_name) from None


def _unsupported(v, name, kernel_name):
    return LaunchError(f"argument '{name}' has unsupported type {type(v).__name__}", kernel=kernel_name,
                       hint="pass an array (CuPy, torch, anything with __cuda_array_interface__) or a number")


def _bad_element_type(name, error, kernel_name):
    return LaunchError(f"argument '{name}': {error}", kernel=kernel_name,
                       hint="convert it, e.g. to float32, float16, bfloat16 or an integer type")
