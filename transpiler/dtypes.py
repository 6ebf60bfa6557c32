"""Element types of the language and Triton's promotion rules.

One `dtype` object per element type (`tl.float32`, `tl.int1`, ...) and `pointer_type` for pointers. The
promotion functions here are the single source of truth for both the compiler's typing rules and the CPU
interpreter, so the two cannot drift apart. They follow `triton/language/semantic.py`
(`computation_type_impl`, `integer_promote_impl`) rule for rule.
"""
from __future__ import annotations

import enum

import numpy as np

class Kind(enum.IntEnum):
    """Ordering used when a Python scalar meets a block: a scalar of a lower or equal kind does not promote."""

    BOOL = 0
    INT = 1
    FLOAT = 2


class dtype:
    """A scalar element type. Instances are singletons compared by identity and by name."""

    __slots__ = ("name", "bits", "kind", "signed", "mantissa_bits", "c_name", "numpy")

    def __init__(self, name, bits, kind, signed=True, mantissa_bits=0, c_name="", numpy_dtype=None):
        self.name = name
        self.bits = bits
        self.kind = kind
        self.signed = signed
        self.mantissa_bits = mantissa_bits
        self.c_name = c_name
        self.numpy = numpy_dtype

    @property
    def value(self):
        """The dtype itself: Triton hands a helper a dtype wrapped in `tl.constexpr`, and library code unwraps
        it (`dtype_ = dtype.value`) before calling its methods."""
        return self

    # -- Triton's predicate names, so user code such as `X.dtype.element_ty.is_fp16()` works ----------------
    def is_floating(self):
        return self.kind is Kind.FLOAT

    def is_int(self):
        return self.kind is not Kind.FLOAT and not self.is_ptr()

    def is_int_signed(self):
        return self.is_int() and self.signed and self.kind is Kind.INT

    def is_int_unsigned(self):
        return self.is_int() and not self.signed

    def is_bool(self):
        return self.kind is Kind.BOOL

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    def is_const(self):
        """Triton's predicate: only a `tl.const` pointer is const."""
        return False

    def is_void(self):
        return self.name == "void"

    def is_standard_floating(self):
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    @property
    def primitive_bitwidth(self):
        return self.bits

    @property
    def int_bitwidth(self):
        return self.bits

    # Triton's float layout attributes, read by user code that decodes bits (fp16 / fp8 conversions).
    @property
    def fp_mantissa_width(self):
        if not self.is_floating():
            raise AttributeError(f"{self!r} is not a floating-point type: it has no fp_mantissa_width")
        return self.mantissa_bits

    @property
    def exponent_bias(self):
        if not self.is_floating():
            raise AttributeError(f"{self!r} is not a floating-point type: it has no exponent_bias")
        return (1 << (self.bits - self.mantissa_bits - 2)) - 1

    @property
    def itemsize(self):
        return max(1, self.bits // 8)

    @property
    def scalar(self):
        return self

    def __repr__(self):
        return f"tl.{_PUBLIC_NAME.get(self.name, self.name)}"

    def __str__(self):
        return self.name

    def __reduce__(self):
        return (by_name, (self.name,))


class pointer_type(dtype):
    """Pointer to global memory holding `element_ty` elements; `const` (Triton's `tl.const` parameters, and
    `tl.pointer_type(ty, const=True)`) marks one the kernel may only read: a store or an atomic through it is
    refused, and it is a type of its own, as in Triton (an `if` whose branches give a const and a plain pointer
    is refused like any two types)."""

    __slots__ = ("element_ty", "const")
    _interned: dict = {}

    def __new__(cls, element_ty, address_space=1, const=False):
        key = (element_ty.name, bool(const))
        if key not in cls._interned:
            obj = object.__new__(cls)
            prefix = "const_ptr" if const else "ptr"
            dtype.__init__(obj, f"{prefix}<{element_ty.name}>", 64, Kind.INT, False, 0, f"{element_ty.c_name}*", None)
            obj.element_ty = element_ty
            obj.const = bool(const)
            cls._interned[key] = obj
        return cls._interned[key]

    def __init__(self, element_ty, address_space=1, const=False):
        pass

    def is_ptr(self):
        return True

    def is_int(self):
        return False

    def is_const(self):
        return self.const

    def __repr__(self):
        return f"{'const_' if self.const else ''}pointer<{self.element_ty!r}>"

    def __reduce__(self):
        return (pointer_type, (self.element_ty, 1, self.const))


class block_type:
    """Triton's type of a block: an element type and a shape (what `x.type` is for a block, and what a block
    pointer points to). Only a description for kernels to inspect: values carry (dtype, shape) themselves."""

    __slots__ = ("element_ty", "shape")

    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = tuple(int(s) for s in shape)

    @property
    def scalar(self):
        return self.element_ty

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def name(self):
        return f"<{list(self.shape)}, {self.element_ty}>"

    c_name = ""

    def is_block(self):
        return True

    def is_ptr(self):
        return False

    def get_block_shapes(self):
        return self.shape

    def __eq__(self, other):
        return isinstance(other, block_type) and other.element_ty == self.element_ty and other.shape == self.shape

    def __hash__(self):
        return hash((self.element_ty.name, self.shape))

    def __str__(self):
        return self.name

    __repr__ = __str__


# Triton's one-name predicates (`x.dtype.is_int8()`, `P.dtype.element_ty.is_fp8e4nv()`).
for _name in ("int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "fp8e4nv", "fp8e5",
              "fp8e4b15", "fp8e4b8", "fp8e5b16"):
    setattr(dtype, f"is_{_name}", lambda self, _name=_name: self.name == _name)
dtype.is_fp8 = lambda self: self.name.startswith("fp8")


def value_type(element_ty, shape):
    """What Triton's `x.type` is: the element type for a scalar, a `block_type` for a block."""
    return block_type(element_ty, shape) if shape else element_ty


int1 = dtype("int1", 1, Kind.BOOL, False, c_name="bool", numpy_dtype=np.dtype(np.bool_))
int8 = dtype("int8", 8, Kind.INT, True, c_name="signed char", numpy_dtype=np.dtype(np.int8))
int16 = dtype("int16", 16, Kind.INT, True, c_name="short", numpy_dtype=np.dtype(np.int16))
int32 = dtype("int32", 32, Kind.INT, True, c_name="int", numpy_dtype=np.dtype(np.int32))
int64 = dtype("int64", 64, Kind.INT, True, c_name="long long", numpy_dtype=np.dtype(np.int64))
uint8 = dtype("uint8", 8, Kind.INT, False, c_name="unsigned char", numpy_dtype=np.dtype(np.uint8))
uint16 = dtype("uint16", 16, Kind.INT, False, c_name="unsigned short", numpy_dtype=np.dtype(np.uint16))
uint32 = dtype("uint32", 32, Kind.INT, False, c_name="unsigned int", numpy_dtype=np.dtype(np.uint32))
uint64 = dtype("uint64", 64, Kind.INT, False, c_name="unsigned long long", numpy_dtype=np.dtype(np.uint64))
float16 = dtype("fp16", 16, Kind.FLOAT, True, 10, c_name="__half", numpy_dtype=np.dtype(np.float16))
# NumPy has no bfloat16: the interpreter stores bf16 as float32 rounded to bf16 precision.
bfloat16 = dtype("bf16", 16, Kind.FLOAT, True, 7, c_name="__nv_bfloat16", numpy_dtype=None)
float32 = dtype("fp32", 32, Kind.FLOAT, True, 23, c_name="float", numpy_dtype=np.dtype(np.float32))
float64 = dtype("fp64", 64, Kind.FLOAT, True, 52, c_name="double", numpy_dtype=np.dtype(np.float64))
void = dtype("void", 0, Kind.INT, False, c_name="void")
# fp8: nameable in signatures and casts. e4nv (E4M3, no infinities) and e5 (E5M2) are CUDA's __nv_fp8_e4m3 and
# __nv_fp8_e5m2 (cuda_fp8.h); the other three have no CUDA type, so they are bytes that only loads, stores and
# bitcasts may move (converting them is refused). The interpreter holds fp8 values as float32, as it does bf16.
float8e4nv = dtype("fp8e4nv", 8, Kind.FLOAT, True, 3, c_name="__nv_fp8_e4m3")
float8e5 = dtype("fp8e5", 8, Kind.FLOAT, True, 2, c_name="__nv_fp8_e5m2")
float8e4b15 = dtype("fp8e4b15", 8, Kind.FLOAT, True, 3, c_name="unsigned char")
float8e4b8 = dtype("fp8e4b8", 8, Kind.FLOAT, True, 3, c_name="unsigned char")
float8e5b16 = dtype("fp8e5b16", 8, Kind.FLOAT, True, 2, c_name="unsigned char")
FP8 = (float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16)
FP8_CONVERTIBLE = (float8e4nv, float8e5)

ALL = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL + FP8}
_PUBLIC_NAME = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                **{d.name: "float8" + d.name[3:] for d in FP8}}
# Aliases Triton also accepts.
float8 = None
bool_ = int1


def by_name(name: str) -> dtype:
    if name.startswith("ptr<"):
        return pointer_type(by_name(name[4:-1]))
    if name.startswith("const_ptr<"):
        return pointer_type(by_name(name[10:-1]), const=True)
    return _BY_NAME[name]


_FROM_NUMPY = {d.numpy: d for d in ALL if d.numpy is not None}
_FROM_STRING = {
    "float16": float16, "half": float16, "bfloat16": bfloat16, "float32": float32, "float": float32,
    "float64": float64, "double": float64, "bool": int1, "int8": int8, "int16": int16, "int32": int32,
    "int64": int64, "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    # torch's (and ml_dtypes') fp8 names
    "float8_e4m3fn": float8e4nv, "float8_e5m2": float8e5, "float8_e4m3fnuz": float8e4b8, "float8_e5m2fnuz": float8e5b16,
}


def from_array_dtype(dt) -> dtype:
    """The language dtype of an array's element type (NumPy, CuPy or torch)."""
    if isinstance(dt, dtype):
        return dt
    text = str(dt)
    if text.startswith("torch."):
        text = text[len("torch."):]
    if text in _FROM_STRING:
        return _FROM_STRING[text]
    try:
        return _FROM_NUMPY[np.dtype(dt)]
    except (TypeError, KeyError):
        raise TypeError(f"arrays of element type {dt} have no Triton dtype") from None


# ---------------------------------------------------------------------------------------------------------
# Promotion (semantic.py of Triton, reproduced as rules)
# ---------------------------------------------------------------------------------------------------------

def python_scalar_dtype(value) -> dtype:
    """How Triton types a Python literal: bool→int1, int→int32/uint32/int64/uint64 by value, float→fp32 (fp64
    outside fp32's normal range)."""
    if isinstance(value, (bool, np.bool_)):
        return int1
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.integer):
        if -2**31 <= value < 2**31:
            return int32
        if 2**31 <= value < 2**32:
            return uint32
        if -2**63 <= value < 2**63:
            return int64
        if 2**63 <= value < 2**64:
            return uint64
        raise OverflowError(f"integer {value} does not fit in 64 bits")
    if isinstance(value, np.generic):
        return from_array_dtype(value.dtype)
    if isinstance(value, float):
        # Triton keeps fp32 for 0, inf, NaN and fp32's normal range; other magnitudes are fp64.
        magnitude = abs(value)
        if magnitude in (0.0, float("inf")) or value != value or 2.0**-126 <= magnitude <= (2 - 2**-23) * 2.0**127:
            return float32
        return float64
    raise TypeError(f"cannot use a {type(value).__name__} as a scalar")


def argument_scalar_dtype(value) -> dtype:
    """How Triton types a number passed to a kernel (its launch specialization, not its literal rule): bool→int1;
    int→int32 when it fits, uint64 from 2**63, else int64 (no uint32); float, np.float64 included (a Python
    float)→fp32; other NumPy scalars their own type."""
    if isinstance(value, (bool, np.bool_)):
        return int1
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return int32
        if 2**63 <= value < 2**64:
            return uint64
        if -2**63 <= value < 2**63:
            return int64
        raise OverflowError(f"integer {value} does not fit in 64 bits")
    if isinstance(value, float):
        return float32
    if isinstance(value, np.generic):
        return from_array_dtype(value.dtype)
    raise TypeError(f"cannot use a {type(value).__name__} as a scalar")


def integer_promote(a: dtype, b: dtype) -> dtype:
    """C's usual arithmetic conversions on integer widths and signedness."""
    if a.signed == b.signed or a.kind is Kind.BOOL or b.kind is Kind.BOOL:
        if a.kind is Kind.BOOL:
            return b
        if b.kind is Kind.BOOL:
            return a
        return a if a.bits > b.bits else b
    if not a.signed:
        return a if a.bits >= b.bits else b
    return b if b.bits >= a.bits else a


def computation_type(a: dtype, a_is_python_scalar: bool, b: dtype, b_is_python_scalar: bool,
                     div_or_mod: bool = False) -> dtype:
    """The type in which a binary arithmetic op is computed (Triton's `computation_type_impl`). fp8 follows
    Triton too: a wider float operand wins (the fp8 side is converted up), two different fp8 types meet in
    fp16, one fp8 type stays itself (which only selections and min/max then accept: see `fp8_computable`), and
    fp8 with an integer block is refused."""
    if a_is_python_scalar != b_is_python_scalar:
        scalar, block = (a, b) if a_is_python_scalar else (b, a)
        if scalar.kind <= block.kind:
            if div_or_mod and block in (float16, bfloat16):
                return float32
            return block
    if a is float64 or b is float64:
        return float64
    if a is float32 or b is float32:
        return float32
    if a is float16 or b is float16:
        return float32 if div_or_mod else float16
    if a is bfloat16 or b is bfloat16:
        if div_or_mod:
            return float32
        return bfloat16 if (a is bfloat16 and b is bfloat16) else float32
    if a.is_fp8() and b.is_fp8():
        return a if a is b else float16
    if a.is_fp8() or b.is_fp8():
        raise TypeError(f"invalid operands of type {a!r} and {b!r}: an fp8 value meets an integer block (Triton's "
                        "rule); convert one of them first")
    # int1 counts as unsigned here, as in Triton (its UINT_TYPES): `bools // 2` and `bools / int32s` are refused.
    if div_or_mod and a.signed != b.signed and a.is_int() and b.is_int():
        raise TypeError(f"Cannot use /, // or % with {a!r} and {b!r} because they have different signedness; "
                        "cast them to the same signedness")
    return integer_promote(a, b)


# What Triton 3.6 compiles on fp8 operands of one type (the computation type above left them fp8): selection
# (`tl.where`), `tl.abs` (the sign bit cleared) and `tl.maximum` / `tl.minimum`. Its arithmetic, comparisons,
# math functions and sums pass Triton's front end and then fail in its LLVM lowering (fp8 is an i8 there).
FP8_COMPUTATIONS = frozenset({"select", "abs", "max", "min"})


def fp8_computable(fn: str, dt: dtype, what: str | None = None) -> None:
    """Refuse computing `fn` in the fp8 type `dt` where Triton's compiler cannot either (a TypeError)."""
    if dt.is_fp8() and fn not in FP8_COMPUTATIONS:
        raise TypeError(f"{what or fn} on {dt!r} values: Triton's compiler cannot lower fp8 "
                        "arithmetic, comparisons or math either (its front end types them, its LLVM lowering "
                        "fails); convert first, e.g. x.to(tl.float32), or combine with a float32 block, which "
                        "converts the fp8 side")


def float_of_width(bits: int) -> dtype:
    return {16: float16, 32: float32, 64: float64}[bits]


def accumulate_type(dt):
    """The type a reduction or scan accumulates in: float32 for the 16-bit floats, the type itself otherwise."""
    return float32 if dt in (float16, bfloat16) else dt
