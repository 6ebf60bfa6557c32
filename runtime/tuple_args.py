"""Tuple arguments, as Triton 3.x passes them: each leaf of a tuple (nested tuples too) is a kernel parameter of
its own, specialized like any argument (a pointer's alignment, an integer equal to 1), and the kernel sees the
tuple again (`T[0]`, `len(T)`).

`flattened(kernel, values)` gives a view of `kernel` for the tuple structure of these (bound) argument values:
a `Kernel` whose parameters are the leaves, so the launch binder, the specialization key, the variant cache and
the launcher work on leaves unchanged; the IR builder is told each leaf's parameter and path
(`ArgSpec.path`) and rebuilds the tuple. Views are kept per structure on the kernel.
"""
from __future__ import annotations

from ..errors import LaunchError


def structure(value):
    """The nesting of a tuple argument (a tuple of its elements' structures; None for a leaf). As in Triton,
    only tuples (named ones too) are flattened: a list stays an unsupported argument."""
    if isinstance(value, tuple):
        return tuple(structure(v) for v in value)
    return None


def leaves(value, shape):
    if shape is None:
        return [value]
    if not isinstance(value, tuple) or len(value) != len(shape):
        raise LaunchError(f"a tuple argument changed shape within one launch: {value!r}")
    return [leaf for v, s in zip(value, shape) for leaf in leaves(v, s)]


def paths(shape, prefix=()):
    if shape is None:
        return [prefix]
    return [p for i, s in enumerate(shape) for p in paths(s, prefix + (i,))]


def flattened(kernel, values):
    """`(view, leaf values)` when some runtime argument is a tuple, else None."""
    shapes = tuple(None if c else structure(v) for v, c in zip(values, kernel._constexpr_mask))
    if all(s is None for s in shapes):
        return None
    view = kernel._tuple_views.get(shapes)
    if view is None:
        view = kernel._tuple_views.setdefault(shapes, _view(kernel, shapes))
    flat = [leaf for v, s in zip(values, shapes) for leaf in leaves(v, s)]
    return view, tuple(flat)


def _view(kernel, shapes):
    from .kernel import Kernel

    class TupleArgumentsView(Kernel):
        """`kernel` with its tuple parameters flattened into leaf parameters."""

        def __init__(self):
            super().__init__(kernel.fn)
            self.options, self.debug = kernel.options, kernel.debug
            self.leaf_of = []          # per leaf parameter: (parameter name, path in its tuple)
            mask, generic = [], []
            for name, shape, c, g in zip(kernel._names, shapes, kernel._constexpr_mask, kernel._generic_mask):
                for path in paths(shape):
                    self.leaf_of.append((name, path))
                    mask.append(c)
                    generic.append(g)      # do_not_specialize on a tuple parameter covers its leaves
            self._names = tuple(_leaf_name(n, p) for n, p in self.leaf_of)
            self._constexpr_mask, self._generic_mask = tuple(mask), tuple(generic)
            self._arity = len(self._names)
            self.constexpr_names = kernel.constexpr_names
            self._shapes = shapes

        def source_hash(self):
            return kernel.source_hash() + repr(self._shapes)

        def _arg_specs(self, key, values):
            from ..analysis.specialization import arg_spec
            return [arg_spec(name, part, v.value if hasattr(v, "value") and c else v, c).at_path(path)
                    for (name, path), part, v, c in zip(self.leaf_of, key, values, self._constexpr_mask)]

    return TupleArgumentsView()


def _leaf_name(name, path):
    return name if not path else name + "".join(f"_{i}" for i in path)
