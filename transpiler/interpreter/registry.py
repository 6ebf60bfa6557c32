"""The interpreter's rule table: one Python function per `tl.*` builtin, looked up by builtin name.

A rule has the same signature as the builtin it implements (see `transpiler/language/__init__.py`), so the
interpreter can hand it the user's arguments unchanged. `shared_rules.py` registers the builtins run through the
compiler's typing rules (`eager.py`); the interpreter's own rules (iteration, prints, asserts) live in
`rules.py`; each registers itself with `@rule("name")` when its module is imported.
"""
from __future__ import annotations

import importlib

RULES: dict[str, object] = {}

_RULE_MODULES = ("rules", "shared_rules")


def rule(name: str):
    """Register the decorated function as the interpreter rule of builtin `name`."""

    def register(fn):
        if name in RULES:
            raise RuntimeError(f"two interpreter rules for tl.{name}")
        RULES[name] = fn
        return fn

    return register


def all_rules() -> dict[str, object]:
    """The complete table (imports the rule modules on first use, avoiding import cycles)."""
    for module in _RULE_MODULES:
        importlib.import_module(f"{__package__}.{module}")
    return RULES
