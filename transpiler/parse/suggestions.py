"""What to say when a kernel names something that does not exist: "did you mean", or "Triton's, not supported yet".

Decides, from the object a kernel looks an attribute up on (usually `tl`, `tl.math`, libdevice) and the name it
asked for, the message and hint of the NameResolutionError: a name Triton's language has that we lack is "not
supported yet" (the user's kernel is right, we are behind); a near miss of one of our names is "did you mean"
(difflib's closest matches); anything else is "not Triton's language".
"""
from __future__ import annotations

import difflib
import types

from ..errors import NOT_TRITON, NOT_YET

# Names of `triton.language` (3.x) that `transpiler.language` does not have yet.
TRITON_LANGUAGE_NOT_YET = frozenset({
    "target_info", "tuple", "tuple_type", "slice", "constexpr_type", "tensor_descriptor_type", "str_to_ty",
    "tensor_descriptor",
    "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16",
})

# Our module -> the names its Triton 3.6 counterpart has that it lacks (so far).
TRITON_NOT_YET = {
    "transpiler.language": TRITON_LANGUAGE_NOT_YET,
    "transpiler.language.extra.cuda": frozenset({
        "num_threads", "num_warps", "globaltimer", "smid", "gdc", "gdc_launch_dependents", "gdc_wait",
        "convert_custom_float8_sm70", "convert_custom_float8_sm80", "utils",
    }),
}


def _language_module(base) -> bool:
    return isinstance(base, types.ModuleType) and base.__name__.startswith("transpiler.language")


def _public_names(base):
    return [n for n in dir(base) if not n.startswith("_")]


def _spelled(base) -> str:
    name = base.__name__
    return "tl" + name[len("transpiler.language"):] if _language_module(base) else name


def missing_attribute(base, attr: str, base_text: str) -> tuple:
    """(message, hint, refusal kind or None) for `base.attr` that does not exist; `base_text` is how the error
    names `base`."""
    if _language_module(base) and attr in TRITON_NOT_YET.get(base.__name__, ()):
        return (f"{_spelled(base)}.{attr} is Triton's", "docs/language.md lists what is missing", NOT_YET)
    close = difflib.get_close_matches(attr, _public_names(base), n=3, cutoff=0.6) if isinstance(
        base, types.ModuleType) else []
    message = f"{base_text} has no attribute '{attr}'"
    if close:
        prefix = _spelled(base) + "." if _language_module(base) else ""
        return message, "did you mean " + " or ".join(f"{prefix}{c}" for c in close) + "?", None
    if _language_module(base):
        return message, None, NOT_TRITON
    return message, None, None
