"""The wording of the builder's refusals of Python syntax: what a construct is called, and whether refusing it is
"not Triton's language" (Triton's code generator rejects it too) or "not supported yet"."""
from __future__ import annotations

from ..errors import NOT_TRITON, NOT_YET


SYNTAX_HINT = ("kernels use assignments, if/for/while, tl builtins and @transpile helpers; "
                "do other work on the host, before the launch")


def describe(node) -> str:
    names = {
        "While": "while", "With": "a with statement", "Try": "try/except", "Raise": "raise", "Lambda": "lambda",
        "ListComp": "a list comprehension", "GeneratorExp": "a generator expression", "DictComp": "a dict "
        "comprehension", "SetComp": "a set comprehension", "Dict": "a dict literal", "Set": "a set literal",
        "FunctionDef": "a nested function definition", "ClassDef": "a class definition", "Global": "global",
        "Nonlocal": "nonlocal", "Del": "del", "Import": "import", "ImportFrom": "import", "Await": "await",
        "Yield": "yield", "FormattedString": "an f-string", "NamedExpr": "the walrus operator :=",
        "Imaginary": "a complex number", "Match": "match", "Subscript": "a subscript",
        "Attribute": "an attribute",
    }
    kind = type(node).__name__
    return names.get(kind, f"'{kind}'")


# Constructs Triton's code generator also rejects; any other construct we refuse is one we do not support yet.
_NOT_TRITON = {"Lambda", "Try", "TryStar", "Raise", "ClassDef", "FunctionDef", "Global", "Nonlocal", "Del", "Import",
               "ImportFrom", "Await", "Yield", "YieldFrom", "Dict", "Set", "DictComp", "SetComp", "GeneratorExp",
               "Match", "NamedExpr", "Imaginary", "ListComp", "Break", "Continue"}


# Loop exits Triton's code generator has no rule for (its "unsupported AST node type: Break"), with the hint, for
# both paths: the compiler refuses one when it builds it, the interpreter when it reaches it (its rewrite of the
# kernel, `interpreter/loops.py`), so one under a constexpr `if` that is false is refused by neither, as in Triton.
LOOP_EXITS = {
    "Break": ("break (Triton rejects it too)", "use a while loop whose condition carries the exit"),
    "Continue": ("continue (Triton rejects it too)", "guard the rest of the body with an if"),
}


def unsupported_construct(node) -> tuple:
    """(what is refused, its kind) for a construct the builder has no rule for."""
    if type(node).__name__ in _NOT_TRITON:
        return f"{describe(node)} (Triton's compiler rejects it too)", NOT_TRITON
    return f"{describe(node)} in kernels", NOT_YET


def short(obj):
    name = getattr(obj, "__name__", None)
    return f"'{name}'" if name else f"a {type(obj).__name__}"
