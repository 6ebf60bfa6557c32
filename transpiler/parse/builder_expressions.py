"""The builder's expressions: names, literals, f-strings, operators, comparisons, conditional expressions,
attributes and subscripts. What an operator means is the typing rules' business (`semantic.py`); here it is
only chosen from the syntax.
"""
from __future__ import annotations

import ast
import math

import libcst as cst

from .. import dtypes
from ..errors import NOT_TRITON, NOT_YET, CompileTimeError, NameResolutionError, ShapeError, UnsupportedSyntaxError
from ..language import TENSOR_METHODS, TENSOR_PROPERTIES
from ..language.core import BUILTINS, constexpr
from . import semantic, semantic_shapes
from .ir import Op, OpKind, Value, walk
from .records import Record, record_attribute
from .scope import BoundMethod, Unbound
from .suggestions import missing_attribute
from .syntax_refusals import SYNTAX_HINT, describe, short, unsupported_construct

# Compile-time values that Triton would see as a `tl.constexpr` in a helper (so `.value` unwraps them).
_CONSTEXPR_VALUES = (dtypes.dtype, bool, int, float, str, tuple, type(None))

_BINOPS = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "truediv", cst.FloorDivide: "floordiv",
    cst.Modulo: "mod", cst.Power: "pow", cst.LeftShift: "lshift", cst.RightShift: "rshift", cst.BitAnd: "and_",
    cst.BitOr: "or_", cst.BitXor: "xor", cst.MatrixMultiply: "matmul",
}
_CMPOPS = {
    cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt", cst.GreaterThanEqual: "ge",
    cst.Equal: "eq", cst.NotEqual: "ne",
}
_UNARY = {cst.Minus: "neg", cst.Plus: "pos", cst.BitInvert: "invert", cst.Not: "not"}

# fault (a load whose address is valid only under the condition that guards it). A runtime conditional
# expression whose branches hold one becomes an `if` with a result, as Triton's scf.if; others are a select.
GUARDED_OPS = frozenset({OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC_RMW, OpKind.ATOMIC_CAS, OpKind.DEVICE_PRINT,
                         OpKind.DEVICE_ASSERT, OpKind.BARRIER})


class ExpressionBuilder:
    """Expressions, for `Builder` (which supplies the state, `call`, `_call_builtin` and `_build_branch`)."""

    def eval(self, node):
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is None:
            self.loc = self.scope.parsed.loc(node)
            what, kind = unsupported_construct(node)
            raise self.error(UnsupportedSyntaxError, what, hint=SYNTAX_HINT, refusal=kind)
        return method(node)

    def _lookup(self, name):
        try:
            value = self.scope.lookup(name)
        except KeyError:
            raise self.error(NameResolutionError, f"name '{name}' is not defined",
                             hint="assign it before this line, pass it as a kernel argument, or define it at "
                                  "module level (a number, a tl.constexpr or a @transpile function)") from None
        if isinstance(value, Unbound):
            raise self.error(NameResolutionError, f"'{name}' is defined on only one side of a runtime if",
                             hint="assign it before the if, or in both branches")
        if isinstance(value, constexpr):
            return value.value
        return value

    def _expr_Name(self, node):
        if node.value == "True":
            return True
        if node.value == "False":
            return False
        if node.value == "None":
            return None
        return self._lookup(node.value)

    def _expr_Integer(self, node):
        return int(node.value, 0)

    def _expr_Float(self, node):
        return float(node.value)

    def _expr_SimpleString(self, node):
        return node.evaluated_value

    def _expr_ConcatenatedString(self, node):
        return node.evaluated_value

    def _expr_FormattedString(self, node):
        """An f-string of compile-time values is formatted now, as Python formats it (Triton does the same, so
        `tl.static_assert(..., f"BLOCK={BLOCK}")` reads its constexprs); a runtime value in it is refused."""
        return "".join(self._formatted_parts(node.parts, node.start))

    def _formatted_parts(self, parts, start):
        out = []
        for part in parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(_fstring_text(part.value, start))
                continue
            value = self.eval(part.expression)
            if isinstance(value, (Value, Record)):
                self.loc = self.scope.parsed.loc(part.expression)
                raise self.error(UnsupportedSyntaxError, "an f-string can hold only compile-time values, not a "
                                 "runtime value (Triton formats f-strings while compiling)",
                                 hint="print runtime values with tl.device_print(prefix, value)", refusal=NOT_TRITON)
            spec = "".join(self._formatted_parts(part.format_spec, start)) if part.format_spec else ""
            label = ""
            if part.equal is not None:   # f"{BLOCK=}"
                label = (cst.Module([]).code_for_node(part.expression) + part.equal.whitespace_before.value
                         + "=" + part.equal.whitespace_after.value)
            if part.conversion is not None:
                value = {"r": repr, "s": str, "a": ascii}[part.conversion](value)
            elif part.equal is not None and not spec:
                value = repr(value)
            out.append(label + format(value, spec))
        return out

    def _expr_Ellipsis(self, node):
        return Ellipsis

    def _expr_Tuple(self, node):
        return tuple(self._elements(node.elements))

    def _expr_List(self, node):
        return tuple(self._elements(node.elements))

    def _elements(self, elements):
        out = []
        for e in elements:
            if isinstance(e, cst.StarredElement):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e.value))
        return out

    def _expr_BinaryOperation(self, node):
        left, right = self.eval(node.left), self.eval(node.right)
        self.loc = self.scope.parsed.loc(node)
        return semantic.binary_op(self, _BINOPS[type(node.operator)], left, right)

    def _expr_UnaryOperation(self, node):
        value = self.eval(node.expression)
        self.loc = self.scope.parsed.loc(node)
        return semantic.unary_op(self, _UNARY[type(node.operator)], value)

    def _expr_BooleanOperation(self, node):
        left = self.eval(node.left)
        is_and = isinstance(node.operator, cst.And)
        if semantic.is_const(left):
            if is_and and not left:
                return left
            if not is_and and left:
                return left
            return self.eval(node.right)
        right = self.eval(node.right)
        if semantic.is_const(right):
            if is_and:
                return semantic.to_bool(self, left) if right else False
            return True if right else semantic.to_bool(self, left)
        return semantic.logical(self, "and" if is_and else "or", left, right)

    def _expr_Comparison(self, node):
        left = self.eval(node.left)
        result = None
        for target in node.comparisons:
            right = self.eval(target.comparator)
            op = type(target.operator)
            self.loc = self.scope.parsed.loc(node)
            if op in _CMPOPS:
                r = semantic.binary_op(self, _CMPOPS[op], left, right)
            elif op in (cst.Is, cst.IsNot, cst.In, cst.NotIn):
                # `B is not None` on a runtime value is known (True) while compiling, as in Triton.
                identity_with_none = op in (cst.Is, cst.IsNot) and (left is None or right is None)
                if not (semantic.is_const(left) and semantic.is_const(right)) and not identity_with_none:
                    # Triton's compiler answers `is` between any two values (Python's identity, while it
                    # compiles), and rejects `in` on runtime values.
                    kind = NOT_YET if op in (cst.Is, cst.IsNot) else NOT_TRITON
                    raise self.error(UnsupportedSyntaxError, f"'{_cmp_text(op)}' of runtime values ('{_cmp_text(op)}' "
                                     "works on constexprs only here)", refusal=kind)
                r = {cst.Is: lambda a, b: a is b, cst.IsNot: lambda a, b: a is not b,
                     cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b}[op](left, right)
            else:
                raise self.error(UnsupportedSyntaxError, f"comparison {describe(target.operator)}", refusal=NOT_YET)
            result = r if result is None else semantic.logical(self, "and", result, r) \
                if not (semantic.is_const(result) and semantic.is_const(r)) else (result and r)
            left = right
        return result

    def _expr_IfExp(self, node):
        cond = semantic.assigned_constant(self.eval(node.test))
        if isinstance(cond, constexpr):
            cond = cond.value
        if semantic.is_const(cond):
            return self.eval(node.body) if cond else self.eval(node.orelse)
        self.loc = self.scope.parsed.loc(node)
        if cond.shape:
            # Triton lowers a runtime conditional expression to an scf.if, which takes a scalar condition only.
            raise self.error(ShapeError, f"the condition of a conditional expression must be a scalar, not a block "
                             f"of shape {list(cond.shape)}", hint="use tl.where(cond, a, b) for elementwise choices",
                             refusal=NOT_TRITON)
        cond = semantic.to_bool(self, cond)
        before = dict(self.scope.locals)
        results = []
        then_region, _ = self._build_branch(lambda: results.append(self.eval(node.body)), before)
        else_region, _ = self._build_branch(lambda: results.append(self.eval(node.orelse)), before)
        self.scope.locals = before
        self.loc = self.scope.parsed.loc(node)
        guarded = any(op.name in GUARDED_OPS for r in (then_region, else_region) for op in walk(r))
        t, e = results
        if isinstance(t, Value) and isinstance(e, Value) and t.type != e.type:
            # Triton asserts one type for both branches; a select would promote, the interpreter keeps the
            # taken branch's type.
            raise self.error(CompileTimeError, f"Ternary expression with dynamic condition has inconsistent types "
                             f"{t.type} and {e.type}: the branches of a conditional expression on a runtime "
                             "condition must have the same type (Triton's rule)",
                             hint="convert one side with .to(...)")
        if not guarded:
            # Pure branches: computing both and selecting gives the taken branch's value, without a branch.
            self.region.ops.extend(then_region.ops + else_region.ops)
            return semantic.RULES["where"](self, cond, *results)
        return self._conditional_region(cond, then_region, else_region, *results)

    def _conditional_region(self, cond, then_region, else_region, then_value, else_value):
        """`a if cond else b` whose branches load, store or have other effects: an `if` yielding the value, so
        only the taken branch runs, as Triton's scf.if does."""
        for v in (then_value, else_value):
            if not isinstance(v, (Value, bool, int, float)):
                raise self.error(UnsupportedSyntaxError, f"a conditional expression on a runtime condition giving "
                                 f"{short(v)}", hint="write it as an if statement", refusal=NOT_YET)
        t, e = self._unify_branch_values("the conditional expression", then_value, else_value,
                                         then_region, else_region)
        then_region.ops.append(Op(OpKind.YIELD, [t], [], {}, self.loc))
        else_region.ops.append(Op(OpKind.YIELD, [e], [], {}, self.loc))
        op = Op(OpKind.IF, [cond], [Value(t.type, name="sel")], {}, self.loc, [then_region, else_region])
        self.region.ops.append(op)
        return op.results[0]

    def _expr_Attribute(self, node):
        base = self.eval(node.value)
        attr = node.attr.value
        self.loc = self.scope.parsed.loc(node)
        if isinstance(base, Value):
            if attr == "dtype":
                return base.dtype
            if attr == "shape":
                return tuple(base.shape)
            if attr == "numel":       # Triton's `x.numel`: the element count, a compile-time number
                return math.prod(base.shape)
            if attr == "type":
                return dtypes.value_type(base.dtype, base.shape)
            if attr in TENSOR_METHODS:
                return BoundMethod(BUILTINS[TENSOR_METHODS[attr]], base)
            if attr in TENSOR_PROPERTIES:
                return self._call_builtin(BUILTINS[TENSOR_PROPERTIES[attr]], [base], {})
            raise self.error(NameResolutionError, f"a block has no attribute '{attr}'")
        if attr in TENSOR_METHODS and isinstance(base, (int, float)) and not isinstance(base, bool):
            # `SCALE.to(tl.float32)` on a constexpr (or an argument specialized to 1): the number as the scalar
            # Triton types it (`tl.core.to_tensor`), then the block method.
            return BoundMethod(BUILTINS[TENSOR_METHODS[attr]], semantic.to_value(self, base))
        if isinstance(base, Record):
            return record_attribute(base, attr, self.error, lambda builtin: BoundMethod(BUILTINS[builtin], base))
        try:
            return getattr(base, attr)
        except AttributeError:
            if attr == "value" and isinstance(base, _CONSTEXPR_VALUES):
                # Triton hands a helper its compile-time arguments wrapped in tl.constexpr, and library code
                # unwraps them (`dtype_ = dtype.value`); ours arrive unwrapped, so `.value` is the value.
                return base
            message, hint, kind = missing_attribute(base, attr, short(base))
            raise self.error(NameResolutionError, message, hint=hint, refusal=kind) from None

    def _expr_Subscript(self, node):
        base = self.eval(node.value)
        self.loc = self.scope.parsed.loc(node)
        items = []
        for element in node.slice:
            s = element.slice
            if isinstance(s, cst.Index):
                items.append(self.eval(s.value))
            elif isinstance(s, cst.Slice):
                if s.lower is None and s.upper is None and s.step is None:
                    items.append(slice(None))
                else:
                    if isinstance(base, Value):
                        raise self.error(UnsupportedSyntaxError, "unsupported tensor index (a slice with bounds): "
                                           "blocks can be indexed only with None and ':'", refusal=NOT_TRITON)
                    items.append(slice(*(self.eval(p) if p is not None else None for p in (s.lower, s.upper, s.step))))
        if not isinstance(base, Value):
            key = items[0] if len(items) == 1 else tuple(items)
            try:
                return base[key]
            except Exception as e:
                raise self.error(CompileTimeError, f"indexing failed: {e}") from None
        return semantic_shapes.index(self, base, items)


def _fstring_text(text, start):
    """The characters a literal part of an f-string stands for: braces undoubled, escapes read as Python reads
    them in a string of the same prefix (`rf"..."` keeps backslashes)."""
    prefix = start.rstrip("'\"").replace("f", "").replace("F", "")
    quote = start[len(start.rstrip("'\"")):]
    return ast.literal_eval(prefix + quote + text.replace("{{", "{").replace("}}", "}") + quote)


def _cmp_text(op):
    return {cst.Is: "is", cst.IsNot: "is not", cst.In: "in", cst.NotIn: "not in"}[op]
