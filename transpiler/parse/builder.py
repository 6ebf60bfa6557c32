"""Builds the typed IR of one kernel specialization from its libcst tree.

One visitor method per syntax node (`_stmt_*`, `_expr_*`), as Triton's code generator does, in mixins by kind
of syntax: `builder_statements` (assignments, if), `builder_loops`, `builder_expressions`, `builder_calls`
(builtins and inlined helpers); this module holds the build's state and its entry. What an operator
or builtin *means* is delegated to the typing rules in `semantic.py`. Names resolve through the function's
locals, then its globals and closure, by object identity, so `import transpiler.language as tl`, `from
transpiler.language import load` and calls to other `@transpile` functions (inlined here) all work.
Constexpr values are plain Python objects during the build: `if CONST:` and `tl.static_range` vanish here;
runtime `if`/`for`/`while` become ops with regions, and the variables they change become their results.
"""
from __future__ import annotations

import inspect

import libcst as cst

from .. import dtypes
from ..errors import TranspilerError, UnsupportedSyntaxError
from ..language import core
from . import semantic, typing_rules  # noqa: F401  (every typing rule registered)
from ..options import DEFAULT as DEFAULT_OPTIONS
from .builder_calls import CallBuilder
from .builder_expressions import ExpressionBuilder
from .builder_loops import LoopBuilder
from .builder_statements import StatementBuilder
from .dead_code import remove_dead_code
from .dot_accumulate import accumulate_into_dots
from .ir import Argument, KernelIR, Op, Region, Type, Value
from .records import Record
from .scope import Returned, Scope
from .source import parsed_function
from .statement_walk import statements
from .syntax_refusals import SYNTAX_HINT, unsupported_construct

core.TENSOR_CLASSES += [Value, Record]   # `isinstance(x, tl.tensor)` while compiling


def _contains_return(node) -> bool:
    """Whether an if statement holds a `return` in one of its branches (loops and nested functions aside)."""
    return any(isinstance(stmt, cst.Return)
               for stmt in statements(node, stop=(cst.For, cst.While, cst.FunctionDef)))


class Builder(StatementBuilder, LoopBuilder, ExpressionBuilder, CallBuilder):
    """The state of one build (the region being filled, the scope, the source position) and the entry points;
    statements, loops, expressions and calls are built by the mixins of the modules `builder_*`."""

    def __init__(self, kernel_fn, arg_specs, options=DEFAULT_OPTIONS):
        self.kernel_fn = kernel_fn
        self.arg_specs = arg_specs
        self.region: Region | None = None
        self.scope: Scope | None = None
        self.loc = None
        self.runtime_depth = 0        # > 0 inside runtime if/for/while regions
        self.loop_depth = 0           # > 0 inside any loop body (runtime or tl.static_range)
        self.return_depth = 0         # the runtime_depth at which a bare `return` may end a branch (see _stmt_If)
        self.call_sites: list = []
        self.options = options        # compile options: only `debug` (device_assert compiled in) changes the IR

    # -- emitting ------------------------------------------------------------------------------------------
    def emit(self, name, operands, result_type, regions=(), **attrs):
        results = [Value(result_type)] if result_type is not None else []
        op = Op(name, list(operands), results, attrs, self.loc, list(regions))
        self.region.ops.append(op)
        return results[0] if results else None

    def emit_multi(self, name, operands, result_types, regions=(), **attrs):
        op = Op(name, list(operands), [Value(t) for t in result_types], attrs, self.loc, list(regions))
        self.region.ops.append(op)
        return op

    def error(self, cls, message, hint=None, refusal=None):
        return cls(message, self.loc, hint=hint, refusal=refusal)

    # -- entry ---------------------------------------------------------------------------------------------
    def build(self) -> KernelIR:
        parsed = parsed_function(self.kernel_fn)
        self.scope = Scope(self.kernel_fn, parsed)
        self.loc = parsed.loc(parsed.node)
        body = Region()
        self.region = body
        args = []
        signature = inspect.signature(self.kernel_fn).parameters
        params = list(signature)
        read_only = {name for name, p in signature.items() if core.is_const_parameter(p)}
        tuples = {}                    # tuple parameters: name -> {leaf path: what the kernel sees}
        descriptors = {}               # host tensor descriptors: name -> {path: (block shape, padding)}
        for index, spec in enumerate(self.arg_specs):
            if spec.is_constexpr:
                seen = spec.constexpr
            else:
                value = Value(Type(_parameter_dtype(spec, read_only)), name=spec.c_name)
                args.append(Argument(spec.c_name, value, index, spec.divisibility, spec.equal_to_one, spec.is_none))
                # Triton specializes integer arguments equal to 1 into the constant 1, which still behaves as
                # a scalar of the argument's type (`n.to(tl.uint8)` works, `x_int8 + n` is int32).
                seen = (semantic.constant(self, 1, spec.dtype) if spec.equal_to_one else None if spec.is_none
                        else value)
            if spec.path:
                tuples.setdefault(spec.name, {})[spec.path] = seen
                if spec.descriptor:
                    descriptors.setdefault(spec.name, {})[spec.descriptor[0]] = spec.descriptor[1:]
            else:
                self.scope.locals[spec.name] = seen
        for name, leaves in tuples.items():
            self.scope.locals[name] = _rebuild_tuple(leaves, descriptor=self._host_descriptor(descriptors.get(name)))
        assert list(dict.fromkeys(s.name for s in self.arg_specs)) == params[:len(set(s.name for s in self.arg_specs))]
        try:
            self._block(parsed.node.body)
        except Returned:
            pass
        return KernelIR(self.kernel_fn.__name__, args, body, parsed.file, parsed.lines,
                        {s.name: s.constexpr for s in self.arg_specs if s.is_constexpr})

    def _host_descriptor(self, statics):
        """For a parameter holding host tensor descriptors (`statics`: {path: (block shape, padding)}), the maker
        `_rebuild_tuple` calls at each path: the descriptor `tl.make_tensor_descriptor` would build from the
        leaves there (base, shape..., strides...), so its checks and errors are that rule's."""
        if not statics:
            return None

        def make(prefix, leaves):
            if prefix not in statics:
                return None
            block_shape, padding = statics[prefix]
            rank = len(block_shape)
            parts = [leaves[prefix + (i,)] for i in range(1 + 2 * rank)]
            return semantic.RULES["make_tensor_descriptor"](self, parts[0], list(parts[1:1 + rank]),
                                                            list(parts[1 + rank:]), list(block_shape), padding)
        return make

    # -- statements ----------------------------------------------------------------------------------------
    def _block(self, body):
        statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else body
        for i, stmt in enumerate(statements):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.loc = self.scope.parsed.loc(small)
                    self._dispatch_stmt(small)
            elif isinstance(stmt, cst.If) and _contains_return(stmt):
                self.loc = self.scope.parsed.loc(stmt)
                if self._stmt_If(stmt, rest=list(statements[i + 1:])):
                    return
            else:
                self.loc = self.scope.parsed.loc(stmt)
                self._dispatch_stmt(stmt)

    def _dispatch_stmt(self, stmt):
        method = getattr(self, f"_stmt_{type(stmt).__name__}", None)
        if method is None:
            what, kind = unsupported_construct(stmt)
            raise self.error(UnsupportedSyntaxError, what, hint=SYNTAX_HINT, refusal=kind)
        method(stmt)


def _parameter_dtype(spec, read_only):
    """A parameter's type: a pointer parameter annotated `tl.const` is a const pointer (Triton's `*k` types)."""
    if spec.name in read_only and not spec.path and spec.dtype.is_ptr() and not spec.is_none:
        return dtypes.pointer_type(spec.dtype.element_ty, const=True)
    return spec.dtype


def _rebuild_tuple(leaves: dict, prefix=(), descriptor=None):
    """The nested tuple whose leaf at each index path is `leaves[path]` (a tuple argument, flattened by the
    runtime into one parameter per leaf); where `descriptor(prefix, leaves)` makes one, a host tensor
    descriptor stands at that path instead."""
    if prefix in leaves:
        return leaves[prefix]
    made = descriptor(prefix, leaves) if descriptor else None
    if made is not None:
        return made
    items, i = [], 0
    while any(p[:len(prefix) + 1] == prefix + (i,) for p in leaves):
        items.append(_rebuild_tuple(leaves, prefix + (i,), descriptor))
        i += 1
    return tuple(items)

def build_kernel_ir(fn, arg_specs, options=DEFAULT_OPTIONS) -> KernelIR:
    """Parse (cached) and build the IR of `fn` for one specialization: from the source and the specialization
    alone (and `options.debug`, which compiles device asserts in); the launch options reach analysis instead."""
    builder = Builder(fn, arg_specs, options)
    try:
        kernel = builder.build()
    except TranspilerError as e:
        raise e.with_context(kernel=fn.__name__)
    accumulate_into_dots(kernel)
    remove_dead_code(kernel)
    return kernel
