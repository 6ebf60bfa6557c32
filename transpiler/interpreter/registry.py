"""The interpreter's rule table: builtin name -> the function a `tl.*` call runs while interpreting.

Every builtin with a typing rule runs that rule against the eager builder (`eager.apply_rule`: the compiler's
semantics, its ops evaluated on NumPy), except the interpreter's own rules (`rules.py`: iteration, prints and
`device_assert`; `map_elementwise.py`: the mapped function called per element; registered with `@rule("name")`). Each entry has its builtin's signature (a test checks it), so
the interpreter hands it the user's arguments unchanged; adding a builtin needs nothing here.
"""
from __future__ import annotations

import functools
import importlib
import inspect

from ..language import core
from ..parse.typing_rules import RULES as TYPING_RULES

OWN_RULES: dict[str, object] = {}
_TABLE: dict[str, object] = {}


def rule(name: str):
    """Register the decorated function as the interpreter's own rule of builtin `name`."""

    def register(fn):
        if name in OWN_RULES:
            raise RuntimeError(f"two interpreter rules for tl.{name}")
        OWN_RULES[name] = fn
        return fn

    return register


def _evaluated(name):
    """Builtin `name` as its typing rule applied eagerly, with that rule's signature less the builder (which must
    be the builtin's); a rule of any number of operands (libdevice's) takes its builtin's."""
    from .eager import apply_rule
    apply = functools.partial(apply_rule, name)
    typing = inspect.signature(TYPING_RULES[name])
    parameters = list(typing.parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        apply.__signature__ = inspect.signature(core.BUILTINS[name])
    else:
        apply.__signature__ = typing.replace(parameters=parameters)
    return apply


def all_rules() -> dict[str, object]:
    """The complete table (made on first use, avoiding import cycles)."""
    if not _TABLE:
        importlib.import_module(f"{__package__}.rules")
        importlib.import_module(f"{__package__}.map_elementwise")
        _TABLE.update({name: _evaluated(name) for name in TYPING_RULES if name in core.BUILTINS})
        _TABLE.update(OWN_RULES)
    return _TABLE
