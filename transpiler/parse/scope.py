"""What names mean while a kernel is built: a function's scope and the few objects that stand for names.

`Scope` resolves a name through one function's locals, then its globals, closure and Python's builtins.
`Unbound` stands for a name a runtime branch defines on one side only; `BoundMethod` for `x.sum` and the like
before the call; `Returned` carries a `return` out of the statements being built.
"""
from __future__ import annotations

import builtins


class Unbound:
    """Placeholder for names a runtime branch defines on one side only."""

    def __init__(self, name):
        self.name = name


class BoundMethod:
    """`x.sum` etc.: a builtin with its first argument fixed."""

    def __init__(self, builtin, self_value):
        self.builtin = builtin
        self.self_value = self_value


# Ops that must run only when the program reaches them: their effect is more than their result, or they can

class Returned(Exception):
    pass


def is_kernel_object(obj):
    return getattr(obj, "__transpiler_kernel__", False)


def kernel_function(obj):
    return obj.fn if is_kernel_object(obj) else obj


class Scope:
    """One function's view of names: locals (mutable), then the function's globals, closure and builtins."""

    def __init__(self, fn, parsed):
        self.fn = fn
        self.parsed = parsed
        self.locals: dict = {}
        self.globals = dict(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.globals[name] = cell.cell_contents
                except ValueError:
                    pass

    def lookup(self, name):
        if name in self.locals:
            return self.locals[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise KeyError(name)
