"""Assigned numbers and loop-carried values: the interpreter gives them the compiled path's types.

Triton makes a number assigned to a name (`c = 100`, `eps = 1e-6`, not `c: tl.constexpr = 100`) an int32 / fp32
/ ... scalar, so `x_int8 * c` is int32 and `x_fp16 + eps` fp32, where `x_int8 * 100` keeps int8. The rewrite
below wraps each assigned value in `carry`, which types Python numbers that way (the compiler does the same in
`parse/builder_statements.py`). A number a helper returns is typed the same way (`return 3` gives an int32
scalar in Triton; the compiler's `inline_call` does the same).

In a compiled kernel a runtime `for ... in range(...)` / `tl.range(...)` or `while` loop turns every variable
it reassigns into a typed runtime value: `count = 0` before the loop is an int32 scalar after it, and
`k.to(tl.float32)` works on it. Run as plain Python, `count` would stay a Python int (no `.to`, no int32
wrap-around, no fp32 rounding). So, before running a kernel that has such loops, the interpreter rewrites
its syntax tree: ahead of each runtime loop, every number the loop reassigns becomes a 0-d block typed as
Triton types the literal, and so does the loop variable at the top of each iteration. `tl.static_range`
loops are left alone, as the compiler unrolls them. Line and column numbers stay those of the source file,
so errors, tracebacks and pdb point at the user's lines. Kernels that assign nothing, have no runtime
loops and no `and` / `or` / `not` run unchanged.

`break` and `continue`, which Triton's compiler refuses (and ours, `parse/syntax_refusals.py` `LOOP_EXITS`), become
a call raising the compiler's refusal, so the interpreter refuses one where it reaches it, with the same words at
the same line, instead of running it as Python would; and the condition of an `if` whose branches hold one is
checked: a runtime condition means the compiler builds both branches, so the first exit is refused then, taken
or not. (Still unseen: an exit in a loop body that runs no iteration, or under an inner `if` that is not
reached; the compiler refuses those too.)

The same rewrite gives `and`, `or` and `not` the compiled path's meaning on blocks (Triton's
`logical_and` / `logical_or` / `logical_not`, elementwise: `mask = rows < M and cols < N`), which plain
Python cannot (a block has no truth value); on Python values they keep Python's short-circuit meaning.
"""
from __future__ import annotations

import __future__
import ast
import dataclasses
import inspect
import sys
import textwrap

import numpy as np

from .. import dtypes as dt
from ..errors import NOT_TRITON, UnsupportedSyntaxError
from ..language import core
from ..parse.syntax_refusals import LOOP_EXITS
from .location import error
from .tensor import AssignedNumber, Tensor, is_python_number

_CARRY = "__transpiler_carry__"
_BOOL_OP = "__transpiler_bool_op__"
_NOT = "__transpiler_not__"
_REFUSE = "__transpiler_refuse__"
_CHECKED = "__transpiler_checked_condition__"
_cache: dict = {}


def carry(value, each=False):
    """A number entering a runtime loop, or assigned to a name, as a typed 0-d block; anything else unchanged.
    With `each`, the items of a tuple or list (`a, b = 0, 1.0`) are typed one by one."""
    if each and isinstance(value, (tuple, list)):
        return type(value)(carry(v, True) for v in value)
    value = value.value if isinstance(value, core.constexpr) else value
    return AssignedNumber(value) if is_python_number(value) else value


def refuse_loop_exit(kind, line=None, col=None):
    """A `break` / `continue` (`kind`: "Break" / "Continue") the compiler would build: its refusal, at this line
    (or at `line`, `col` of this kernel's file)."""
    words, hint = LOOP_EXITS[kind]
    err = error(UnsupportedSyntaxError, words, hint=hint, refusal=NOT_TRITON)
    if line is not None and err.loc is not None:
        err.loc = dataclasses.replace(err.loc, line=line, col=col)
        err.args = (err._format(),)
    raise err


def checked_condition(cond, exits):
    """The condition of an `if` whose branches hold loop exits (`exits`: (kind, line, col) in the order the
    compiler builds them): a runtime condition (a block, not an assigned number) makes the compiler build both
    branches, so the first exit is refused even where this run would not reach it."""
    if isinstance(cond, Tensor) and not isinstance(cond, AssignedNumber):
        refuse_loop_exit(*exits[0])
    return cond


def _is_block(value) -> bool:
    return isinstance(value, Tensor)


def bool_op(is_and, left, right_thunk):
    """`left and right` / `left or right` as the compiler builds it: short-circuit while the left side is a
    Python value, elementwise on blocks (both sides evaluated, each `!= 0`)."""
    left = left.value if isinstance(left, core.constexpr) else left
    if not _is_block(left):
        if is_and:
            return right_thunk() if left else left
        return left if left else right_thunk()
    right = right_thunk()
    right = right.value if isinstance(right, core.constexpr) else right
    if not _is_block(right):
        if is_and:
            return _nonzero(left) if right else False
        return True if right else _nonzero(left)
    return (_nonzero(left) & _nonzero(right)) if is_and else (_nonzero(left) | _nonzero(right))


def not_op(value):
    """`not value`: elementwise on a block (`value == 0`), Python's `not` otherwise."""
    value = value.value if isinstance(value, core.constexpr) else value
    return (_nonzero(value) == 0) if _is_block(value) else not value


def _nonzero(block):
    """`block != 0` as int1; pointers are compared with null, as compiled code (and Triton) does, and are never
    null here (see `Pointer.__bool__`)."""
    if block.dtype.is_ptr():
        return Tensor(np.ones(block.shape, dtype=bool), dt.int1)
    return block != 0


def interpreted_function(fn):
    """`fn` with its runtime loops' carried numbers typed (cached per function); `fn` itself when it has none
    or its source cannot be read."""
    cached = _cache.get(fn)
    if cached is None:
        cached = _cache[fn] = _rewrite(fn) or fn
    return cached


def _is_runtime_loop(node) -> bool:
    if isinstance(node, ast.While):
        return True
    if not isinstance(node, ast.For) or not isinstance(node.iter, ast.Call):
        return False
    func = node.iter.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name == "range"


def _assigned_names(nodes) -> list[str]:
    names: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store) and node.id not in names:
                names.append(node.id)

        def visit_FunctionDef(self, node):   # names inside nested functions are not the loop's
            pass

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    for node in nodes:
        Visitor().visit(node)
    return names


def _carry_statement(name: str, node) -> ast.stmt:
    """`try: name = carry(name)` / `except NameError: pass` (the name may not exist before the loop)."""
    assign = ast.Assign(targets=[ast.Name(name, ast.Store())],
                        value=ast.Call(ast.Name(_CARRY, ast.Load()), [ast.Name(name, ast.Load())], []))
    stmt = ast.Try(body=[assign], handlers=[ast.ExceptHandler(ast.Name("NameError", ast.Load()), None,
                                                              [ast.Pass()])], orelse=[], finalbody=[])
    return ast.copy_location(stmt, node)


def _is_constexpr_annotation(node) -> bool:
    return (isinstance(node, ast.Name) and node.id == "constexpr") or \
        (isinstance(node, ast.Attribute) and node.attr == "constexpr")


def _carry_call(value, each=False):
    call = ast.Call(ast.Name(_CARRY, ast.Load()), [value] + ([ast.Constant(True)] if each else []), [])
    return ast.copy_location(call, value)


def _built_loop_exits(statements) -> list:
    """The `break` / `continue` statements among `statements` and in the bodies of their loops, which the compiler
    builds whenever it builds `statements` (those under an inner `if` are that `if`'s to check)."""
    found = []
    for stmt in statements:
        if isinstance(stmt, (ast.Break, ast.Continue)):
            found.append(stmt)
        elif isinstance(stmt, (ast.For, ast.While)):
            found += _built_loop_exits(stmt.body) + _built_loop_exits(stmt.orelse)
    return found


class _Rewriter(ast.NodeTransformer):
    def __init__(self, line_offset=0, indent=0):
        self.changed = False
        self.line_offset, self.indent = line_offset, indent      # where the parsed text sits in its file

    def _typed_assignment(self, stmt):
        """The statements that stand for `stmt` with assigned numbers typed as Triton types them (`c = 100` is
        an int32 scalar: `x_int8 * c` is int32), or None when `stmt` assigns nothing."""
        if isinstance(stmt, ast.Assign):
            each = any(isinstance(t, (ast.Tuple, ast.List)) for t in stmt.targets)
            stmt.value = _carry_call(stmt.value, each)
            return [stmt]
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and \
                not _is_constexpr_annotation(stmt.annotation):
            stmt.value = _carry_call(stmt.value)
            return [stmt]
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            # A helper's returned number is a typed scalar in Triton too (its code generator's visit_Return
            # decays constexprs and numbers, tuple items one by one): `x_int8 * three()` is int32.
            stmt.value = _carry_call(stmt.value, each=True)
            return [stmt]
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
            again = ast.Assign(targets=[ast.Name(name, ast.Store())], value=_carry_call(ast.Name(name, ast.Load())))
            return [stmt, ast.copy_location(again, stmt)]
        return None

    def _visit_body(self, body):
        out = []
        for stmt in body:
            stmt = self.visit(stmt)
            typed = self._typed_assignment(stmt)
            if typed is not None:
                out += typed
                self.changed = True
                continue
            if _is_runtime_loop(stmt):
                carried = _assigned_names(stmt.body)
                if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                    var = stmt.target.id
                    carried = [n for n in carried if n != var]
                    stmt.body.insert(0, _carry_statement(var, stmt.body[0]))
                out += [_carry_statement(n, stmt) for n in carried]
                self.changed = True
            out.append(stmt)
        return out

    def visit_If(self, node):
        exits = [(type(n).__name__, n.lineno + self.line_offset, n.col_offset + self.indent)
                 for n in _built_loop_exits(node.body) + _built_loop_exits(node.orelse)]
        self.generic_visit(node)
        if exits:
            node.test = ast.copy_location(ast.Call(ast.Name(_CHECKED, ast.Load()), [node.test, ast.Constant(
                tuple(exits))], []), node.test)
        return node

    def _loop_exit(self, node):
        self.changed = True
        call = ast.Call(ast.Name(_REFUSE, ast.Load()), [ast.Constant(type(node).__name__)], [])
        return ast.copy_location(ast.Expr(ast.copy_location(call, node)), node)

    visit_Break = visit_Continue = _loop_exit

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        self.changed = True
        result = node.values[0]
        for value in node.values[1:]:
            thunk = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                  defaults=[]), body=value)
            result = ast.Call(ast.Name(_BOOL_OP, ast.Load()),
                              [ast.Constant(isinstance(node.op, ast.And)), result, thunk], [])
        return ast.copy_location(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.changed = True
        return ast.copy_location(ast.Call(ast.Name(_NOT, ast.Load()), [node.operand], []), node)

    def generic_visit(self, node):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self._visit_body(value))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node


def _rewrite(fn):
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        return None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != source else 0
    tree = ast.parse(dedented)
    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef):
        return None
    func.decorator_list = []
    rewriter = _Rewriter(first_line - 1, indent)
    rewriter.visit(func)
    if not rewriter.changed:
        return None
    # Keep the file's own positions, and close over the carry helper and over fn's own free variables.
    freevars = fn.__code__.co_freevars
    extra = {"type_params": []} if sys.version_info >= (3, 12) else {}
    helpers = (_CARRY, _BOOL_OP, _NOT, _REFUSE, _CHECKED)
    factory = ast.FunctionDef(name="__transpiler_factory__",
                              args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in helpers + freevars],
                                                 kwonlyargs=[], kw_defaults=[], defaults=[]),
                              body=[func, ast.Return(ast.Name(func.name, ast.Load()))], decorator_list=[], **extra)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, first_line - 1)
    if indent:
        for node in ast.walk(func):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    try:
        cells = [c.cell_contents for c in fn.__closure__ or ()]
    except ValueError:             # a free variable not yet bound: run the function as written
        return None
    namespace: dict = {}
    flags = fn.__code__.co_flags & __future__.annotations.compiler_flag
    exec(compile(module, filename, "exec", flags=flags, dont_inherit=True), fn.__globals__, namespace)
    new = namespace["__transpiler_factory__"](carry, bool_op, not_op, refuse_loop_exit, checked_condition, *cells)
    new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    new.__wrapped__ = fn
    return new
