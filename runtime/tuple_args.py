"""Tuple arguments, as Triton 3.x passes them: each leaf of a tuple (nested tuples too) is a kernel parameter of
its own, specialized like any argument (a pointer's alignment, an integer equal to 1), and the kernel sees the
tuple again (`T[0]`, `len(T)`).

`flattened(kernel, values)` gives a view of `kernel` for the tuple structure of these (bound) argument values:
a `Kernel` whose parameters are the leaves, so the launch binder, the specialization key, the variant cache and
the launcher work on leaves unchanged; the IR builder is told each leaf's parameter and path
(`ArgSpec.path`) and rebuilds the tuple. Views are kept per structure on the kernel.

A host `TensorDescriptor` (transpiler/tools/tensor_descriptor.py) is flattened the same way: its base, shape and
strides are leaves; its block shape and padding are part of the structure (so of the view and its variants),
and each of its leaves' `ArgSpec.descriptor` tells the builder to rebuild a descriptor there.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import LaunchError
from ..tools.tensor_descriptor import TensorDescriptor


@dataclass(frozen=True)
class DescriptorStructure:
    """A host `TensorDescriptor` argument: its leaves are the base, the shape and the strides (one parameter
    each); the block shape and padding are static, part of the specialization as a constexpr is."""
    rank: int
    block_shape: tuple
    padding: str

    def leaf_count(self):
        return 1 + 2 * self.rank


def structure(value):
    """The nesting of a tuple argument (a tuple of its elements' structures; None for a leaf; a
    `DescriptorStructure` for a host tensor descriptor). As in Triton, only tuples (named ones too) are
    flattened: a list stays an unsupported argument."""
    if isinstance(value, tuple):
        return tuple(structure(v) for v in value)
    if isinstance(value, TensorDescriptor):
        return DescriptorStructure(len(value.shape), tuple(int(b) for b in value.block_shape), value.padding)
    return None


def leaves(value, shape):
    if shape is None:
        return [value]
    if isinstance(shape, DescriptorStructure):
        if not isinstance(value, TensorDescriptor) or structure(value) != shape:
            raise LaunchError(f"a tensor descriptor argument changed within one launch: {value!r}")
        return [value.base, *(int(n) for n in value.shape), *(int(s) for s in value.strides)]
    if not isinstance(value, tuple) or len(value) != len(shape):
        raise LaunchError(f"a tuple argument changed shape within one launch: {value!r}")
    return [leaf for v, s in zip(value, shape) for leaf in leaves(v, s)]


def paths(shape, prefix=()):
    if shape is None:
        return [prefix]
    if isinstance(shape, DescriptorStructure):
        return [prefix + (i,) for i in range(shape.leaf_count())]
    return [p for i, s in enumerate(shape) for p in paths(s, prefix + (i,))]


def descriptors(shape, prefix=()):
    """{path of each host tensor descriptor inside the argument: its structure}."""
    if isinstance(shape, DescriptorStructure):
        return {prefix: shape}
    if isinstance(shape, tuple):
        return {p: d for i, s in enumerate(shape) for p, d in descriptors(s, prefix + (i,)).items()}
    return {}


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
            self.descriptor_of = []    # per leaf parameter: (path of its host descriptor, block shape, padding)
            mask, generic = [], []
            for name, shape, c, g in zip(kernel._names, shapes, kernel._constexpr_mask, kernel._generic_mask):
                owners = descriptors(shape)
                for path in paths(shape):
                    self.leaf_of.append((name, path))
                    prefix = path[:-1]
                    d = owners.get(prefix)
                    self.descriptor_of.append((prefix, d.block_shape, d.padding) if d is not None else ())
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
            return [arg_spec(name, part, v.value if hasattr(v, "value") and c else v, c).at_path(path, desc)
                    for (name, path), desc, part, v, c in zip(self.leaf_of, self.descriptor_of, key, values,
                                                              self._constexpr_mask)]

    return TupleArgumentsView()


def _leaf_name(name, path):
    return name if not path else name + "".join(f"_{i}" for i in path)
