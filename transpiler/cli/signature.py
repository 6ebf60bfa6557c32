"""Triton's ahead-of-time signature syntax, read into stand-in launch arguments.

`"*fp16:16, *fp16, i32:16, i64, i32:1, fp32, 1024"` gives, per kernel parameter in order: a pointer to fp16
16-byte aligned, a pointer of unknown alignment, an int32 divisible by 16, an int64, an int32 equal to 1 (folded
as Triton folds it), an fp32, and a constexpr value. The stand-ins (`StandIn` pointers, NumPy scalars chosen to
have exactly the stated properties) select through the ordinary launch binding the same specialization a real
launch with such arguments would, so `dump`, `explain` and `compile` cannot disagree with a launch.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..errors import NOT_YET, Refusal, refusal_text

# Triton's spelling of each element type -> ours.
TRITON_TYPE_NAMES = {
    "i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u1": "int1", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "fp64": "fp64",
}
# An integer scalar stands in by a value with exactly the stated property: not 1 and not a multiple of 16, a
# multiple of 16, or 1.
_INT_VALUE_FOR_HINT = {None: 3, 16: 16, 1: 1}


class SignatureError(ValueError):
    """A signature or -D definition the command line cannot read (a usage error, not a kernel error), or one it
    refuses (`refusal` given)."""

    def __init__(self, message: str, refusal: Refusal | None = None):
        self.refusal = refusal
        super().__init__(refusal_text(message, refusal))


@dataclass(frozen=True)
class SignatureEntry:
    """One parameter's entry: a pointer, a scalar (with its hint), or a constexpr value."""

    text: str
    kind: str                 # "ptr", "scalar" or "constexpr"
    dtype: object = None      # our dtype for pointers and scalars
    hint: int | None = None   # 16 (aligned / divisible by 16) or 1 (== 1)
    value: object = None      # constexpr value

    def stand_in(self):
        """A launch argument with exactly this entry's properties (no data behind it)."""
        from ..runtime.args import StandIn
        if self.kind == "constexpr":
            return self.value
        if self.kind == "ptr":
            return StandIn(self.dtype, aligned=self.hint == 16)
        if self.dtype.is_bool():
            return np.bool_(True)
        if self.dtype.numpy is None:
            raise SignatureError(f"'{self.text}': a {self.dtype.name} scalar argument on the command line (NumPy has "
                                 "no such scalar)", refusal=NOT_YET)
        if self.dtype.is_int():
            return self.dtype.numpy.type(_INT_VALUE_FOR_HINT[self.hint])
        if self.dtype.name == "fp64":
            raise SignatureError(f"'{self.text}': no launch passes an fp64 scalar (Python and NumPy floats are fp32, "
                                 "as in Triton), so no specialization has one")
        return self.dtype.numpy.type(0.5)


def _element_type(name: str, entry: str):
    ours = TRITON_TYPE_NAMES.get(name)
    if ours is None:
        known = ", ".join(TRITON_TYPE_NAMES)
        raise SignatureError(f"'{entry}': unknown type '{name}' (Triton's type names: {known})")
    return dtypes.by_name(ours)


def _hint(text: str, entry: str, allowed: tuple) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = None
    if value not in allowed:
        what = " or ".join(f":{a}" for a in allowed)
        raise SignatureError(f"'{entry}': the hint after ':' must be {what}, not ':{text}'")
    return value


def parse_entry(entry: str) -> SignatureEntry:
    text = entry.strip()
    if not text:
        raise SignatureError("an empty entry in the signature (two commas in a row?)")
    if text.startswith("*"):
        name, _, hint = text[1:].partition(":")
        dt = _element_type(name.strip(), text)
        return SignatureEntry(text, "ptr", dt, _hint(hint.strip() if hint else None, text, (16, 1)))
    name, _, hint = text.partition(":")
    if name.strip() in TRITON_TYPE_NAMES:
        dt = _element_type(name.strip(), text)
        allowed = (16, 1) if dt.is_int() and not dt.is_bool() else ()
        if hint and not allowed:
            raise SignatureError(f"'{text}': only integer scalars take a hint (':16' divisible by 16, ':1' "
                                 "equal to 1)")
        return SignatureEntry(text, "scalar", dt, _hint(hint.strip() if hint else None, text, allowed))
    return SignatureEntry(text, "constexpr", value=parse_value(text))


def parse_signature(text: str) -> list:
    return [parse_entry(e) for e in text.split(",")]


def parse_value(text: str):
    """A constexpr value: a Python literal (1024, 0.5, True, 'name'), `tl.float16`-style dtypes, else the text."""
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    name = text[3:] if text.startswith("tl.") else text
    if text.startswith("tl."):
        from .. import language as tl
        if hasattr(tl, name):
            return getattr(tl, name)
        raise SignatureError(f"'{text}': transpiler.language has no '{name}'")
    return text


def parse_definitions(items) -> dict:
    """`-D NAME=VALUE` options to a dict of constexpr values."""
    out = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise SignatureError(f"-D {item}: expected NAME=VALUE, e.g. -D BLOCK=1024")
        out[name.strip()] = parse_value(value)
    return out
