"""Typing rules of the scans: `cumsum`, `cumprod` and `tl.associative_scan`.

Every scan becomes one `scan` op over one or more same-shaped operands along one axis, with results of the
operands' shapes and dtypes. `cumsum` and `cumprod` name their combiner (`add`, `mul`) so the lowering can
accumulate 16-bit floats in fp32; a user `combine_fn` becomes the op's region, its scalar arguments being
the earlier (left) partial results, then the later (right) ones. Dtypes follow Triton's standard library:
bf16 scans as fp32, and `cumsum` widens integers narrower than 32 bits to (u)int32 (booleans to uint32),
or casts to `dtype` when given.
"""
from __future__ import annotations

from .. import dtypes
from ..errors import NOT_YET, DTypeError, ShapeError
from .ir import OpKind, Region, Type, Value
from .semantic import cast, const_value, rule, to_value
from .semantic_reduce import normalize_axis


def scan_values(b, values, axis, combine, reverse, region=None):
    """Emit one `scan` over `values` (a list of same-shaped blocks); returns the list of results."""
    values = [to_value(b, v) for v in values]
    if any(v.dtype.is_fp8() for v in values):
        raise b.error(DTypeError, "scanning fp8 values", hint="convert them first, e.g. x.to(tl.float32)",
                      refusal=NOT_YET)
    shape = values[0].shape
    if not shape:
        raise b.error(ShapeError, "cannot scan a scalar", hint="scans take blocks")
    for v in values:
        if v.shape != shape:
            raise b.error(ShapeError, f"scan operands must have one shape, got {list(shape)} and {list(v.shape)}")
        if v.dtype.is_ptr():
            raise b.error(DTypeError, "cannot scan pointers")
    if const_value(b, axis, "the scan axis") is None:
        raise b.error(ShapeError, "a scan needs an axis", hint="pass axis=0 (or another dimension)")
    axis = normalize_axis(b, axis, len(shape))
    reverse = const_value(b, reverse, "reverse")
    if not isinstance(reverse, (bool, int)):
        raise b.error(DTypeError, f"reverse must be True or False, not {reverse!r}")
    op = b.emit_multi(OpKind.SCAN, values, [v.type for v in values], axis=axis, combine=combine, reverse=bool(reverse),
                      regions=[region] if region else [])
    return list(op.results)


def _bf16_as_fp32(b, v):
    return cast(b, v, dtypes.float32) if v.dtype is dtypes.bfloat16 else v


@rule("cumsum")
def _cumsum(b, input, axis=0, reverse=False, dtype=None):
    v = _bf16_as_fp32(b, to_value(b, input))
    dt = const_value(b, dtype, "dtype")
    if dt is None and v.dtype.is_int() and v.dtype.bits < 32:
        # As tl.sum: narrow integers sum as 32 bits; booleans count as unsigned.
        dt = dtypes.int32 if v.dtype.signed else dtypes.uint32
    if dt is not None:
        if not isinstance(dt, dtypes.dtype) or dt.is_ptr():
            raise b.error(DTypeError, f"tl.cumsum: dtype must be an element type, not {dt!r}")
        v = cast(b, v, dt)
    (out,) = scan_values(b, [v], axis, "add", reverse)
    return out


@rule("cumprod")
def _cumprod(b, input, axis=0, reverse=False):
    v = _bf16_as_fp32(b, to_value(b, input))
    (out,) = scan_values(b, [v], axis, "mul", reverse)
    return out


@rule("associative_scan")
def _associative_scan(b, input, axis, combine_fn, reverse=False):
    inputs = [to_value(b, v) for v in (input if isinstance(input, (tuple, list)) else [input])]
    region = Region(args=[Value(Type(v.dtype), name=f"{side}{i}") for side in ("a", "b")
                          for i, v in enumerate(inputs)])
    b.inline_into_region(combine_fn, region, "tl.associative_scan's combine_fn", [v.dtype for v in inputs])
    out = scan_values(b, inputs, axis, "custom", reverse, region=region)
    return tuple(out) if isinstance(input, (tuple, list)) else out[0]
