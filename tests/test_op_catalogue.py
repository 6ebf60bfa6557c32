"""The math catalogue (`transpiler/language/catalogue.py`) is complete: every row is a `tl` builtin with a typing
rule, a C spelling, an interpreter rule and a tensor method; what it says is true (the interpreter's value matches
NumPy in float64, the emitted CUDA spells the row and compiles, the derivative matches finite differences); and
every `tl` builtin has a typing rule and an interpreter rule, every IR op kind a lowering rule and an evaluation
by the interpreter (which runs the typing rules of every builtin but iteration, prints and device asserts).
"""
import math

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import DTypeError
from transpiler.emit_cuda import cspell
from transpiler.emit_cuda.emitter import LOWERINGS
from transpiler.interpreter.registry import all_rules
from transpiler.language import TENSOR_METHODS, catalogue, core
from transpiler.interpreter import eager
from transpiler.parse.ir import OP_KINDS, Op, OpKind
from transpiler.parse.semantic import RULES
from transpiler.runtime.compiler import compile_offline, nvrtc_available

NAMES = [f.name for f in catalogue.FUNCTIONS]

# An independent float64 reference per function (Python's math module where NumPy has none).
REFERENCE = {
    "exp": np.exp, "exp2": lambda x: 2.0 ** x, "log": np.log, "log2": lambda x: np.log(x) / np.log(2.0),
    "sqrt": lambda x: x ** 0.5, "sqrt_rn": lambda x: x ** 0.5, "rsqrt": lambda x: x ** -0.5, "abs": np.fabs,
    "sin": np.sin, "cos": np.cos, "erf": np.vectorize(math.erf), "floor": np.floor, "ceil": np.ceil,
    "sigmoid": lambda x: np.exp(x) / (1.0 + np.exp(x)),
}

# A domain on which each function is smooth and defined (derivative checks stay away from kinks and poles).
DOMAIN = {"log": (0.2, 5.0), "log2": (0.2, 5.0), "sqrt": (0.2, 5.0), "sqrt_rn": (0.2, 5.0), "rsqrt": (0.2, 5.0)}


def _points(name, n, seed):
    lo, hi = DOMAIN.get(name, (-3.0, 3.0))
    x = np.random.default_rng(seed).uniform(lo, hi, n)
    if name in ("floor", "ceil", "abs"):
        x = x[np.abs(x - np.round(x)) > 1e-3]   # away from the jumps (and from 0 for abs)
    return x


@pytest.mark.parametrize("name", NAMES)
def test_every_catalogue_row_has_typing_lowering_evaluation_and_a_method(name):
    function = catalogue.BY_NAME[name]
    assert name in REFERENCE, "the numeric tests below need an independent reference for every row"
    assert core.builtin_name(getattr(tl, name)) == name
    assert name in RULES, "typing rule"
    assert cspell._FLOAT_MATH[name] == (function.fp32, function.fp64), "C spelling"
    if function.typing == catalogue.FLOAT_OR_INT:
        assert function.integer and cspell._INT_FUNCS[name] == function.integer
    assert name in all_rules(), "interpreter rule"
    assert TENSOR_METHODS[name] == name
    assert function.doc and getattr(tl, name).__doc__ == function.doc


def test_every_builtin_has_a_typing_and_an_interpreter_rule_and_every_op_kind_a_lowering():
    loop_iterators = {"range", "static_range"}     # the IR builder's `for` takes them, not a typing rule
    untyped = {n for n in core.BUILTINS if n not in RULES} - loop_iterators
    assert not untyped, f"builtins with no typing rule: {sorted(untyped)}"
    assert set(core.BUILTINS) <= set(all_rules()), set(core.BUILTINS) - set(all_rules())
    assert set(LOWERINGS) == OP_KINDS


# Op kinds the interpreter never meets as ops: control flow is the kernel's own Python, device asserts are its
# own rule (rules.py: checked in every run), the row loop's kinds are made by a compiler pass after typing.
NOT_EVALUATED = {OpKind.FOR, OpKind.WHILE, OpKind.IF, OpKind.YIELD, OpKind.CONDITION, OpKind.DEVICE_ASSERT,
                 OpKind.LAUNCHED_PROGRAMS, OpKind.ROW_COUNT}


def test_the_interpreter_evaluates_every_op_kind_the_typing_rules_make_and_runs_their_rules():
    evaluated = set(eager._EVALUATE) | set(eager.EVALUATE_MULTI)
    assert evaluated | NOT_EVALUATED == OP_KINDS, OP_KINDS - evaluated - NOT_EVALUATED
    assert not evaluated & NOT_EVALUATED
    own = {name for name, fn in all_rules().items() if getattr(fn, "func", None) is not eager.apply_rule}
    # tl.map_elementwise's function is built into a region by the compiler; the eager builder builds no regions,
    # so the interpreter calls the function per element itself (interpreter/map_elementwise.py)
    assert own == {"range", "static_range", "static_print", "device_assert", "map_elementwise"}, own


def test_an_op_of_an_unknown_kind_cannot_be_made():
    with pytest.raises(AssertionError, match="no IR op kind 'lod'"):
        Op("lod", [], [])


@transpiler.jit
def _apply(X, Y, N, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    tl.store(Y + offs, FN(x), mask=offs < N)


@pytest.mark.parametrize("name", NAMES)
def test_interpreter_evaluates_each_function_as_numpy_does_in_float64(name):
    x = _points(name, 300, 1).astype(np.float32)
    y = np.full_like(x, np.nan)
    _apply.interpret[(3,)](x, y, x.size, FN=getattr(tl, name), BLOCK=128)
    reference = REFERENCE[name](x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(y, reference, rtol=2e-7, atol=1e-7)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(catalogue.BY_NAME[name].evaluate(wide), REFERENCE[name](wide), rtol=1e-13, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("name", NAMES)
def test_emitted_cuda_spells_the_catalogue_row(name, dtype):
    function = catalogue.BY_NAME[name]
    x = np.zeros(16, dtype)
    source = _apply.cuda_source(x, x.copy(), 16, FN=getattr(tl, name), BLOCK=128)
    spelled = function.fp64 if dtype is np.float64 else function.fp32     # fp16 computes in fp32
    head = spelled.split("{a}")[0]
    assert head in source, (head, name, dtype)


def test_integer_spelling_of_float_or_int_rows():
    for function in catalogue.FUNCTIONS:
        if function.typing != catalogue.FLOAT_OR_INT:
            continue
        x = np.zeros(16, np.int32)
        source = _apply.cuda_source(x, x.copy(), 16, FN=getattr(tl, function.name), BLOCK=128)
        assert function.integer.split("{a}")[0] in source


@pytest.mark.parametrize("name", [f.name for f in catalogue.FUNCTIONS if f.typing == catalogue.FLOAT])
def test_float_only_rows_refuse_integers_in_both_semantics(name):
    x = np.zeros(16, np.int32)
    with pytest.raises(DTypeError, match=f"tl.{name}"):
        _apply.ir(x, x.copy(), 16, FN=getattr(tl, name), BLOCK=128)
    with pytest.raises(DTypeError, match=f"tl.{name}"):
        _apply.interpret[(1,)](x, x.copy(), 16, FN=getattr(tl, name), BLOCK=128)


@transpiler.jit
def _apply_all(X, Y, N, FNS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    for i in tl.static_range(len(FNS)):
        fn = FNS[i]
        tl.store(Y + i * BLOCK + offs, fn(x), mask=offs < N)


@pytest.mark.skipif(not nvrtc_available(), reason="needs NVRTC and the CUDA headers")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_every_row_compiles_without_warnings(dtype):
    x = np.zeros(16, dtype)
    functions = tuple(getattr(tl, n) for n in NAMES)
    source = _apply_all.cuda_source(x, np.zeros(128 * len(NAMES), dtype), 16, FNS=functions, BLOCK=128)
    result = compile_offline(source, "sm_80")
    assert not result.warnings and result.spill_bytes == 0, result.log


@pytest.mark.parametrize("name", [f.name for f in catalogue.FUNCTIONS if f.derivative])
def test_derivative_matches_central_differences(name):
    function = catalogue.BY_NAME[name]
    x = _points(name, 200, 2)
    h = 1e-6
    numeric = (function.evaluate(x + h) - function.evaluate(x - h)) / (2 * h)
    analytic = function.derivative(x, function.evaluate(x), np)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


def _op_kind_literals(tree):
    """(line, text) of each place a module names an IR op kind by a string literal: compares an op's `name`
    (`op.name == "load"`, `getattr(op, "name", None) in (...)`) with one, or makes an op of one
    (`emit("load", ...)`, `Op("for", ...)`)."""
    import ast

    def literals(node):
        nodes = node.elts if isinstance(node, (ast.Tuple, ast.Set, ast.List)) else [node]
        return [n.value for n in nodes if isinstance(n, ast.Constant) and n.value in OP_KINDS]

    def is_name(node):
        return ((isinstance(node, ast.Attribute) and node.attr == "name") or
                (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) > 1
                 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "name"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and is_name(node.left):
            for right in node.comparators:
                if literals(right):
                    yield node.lineno, literals(right)
        elif isinstance(node, ast.Call) and node.args:
            callee = getattr(node.func, "attr", getattr(node.func, "id", None))
            if callee in ("emit", "emit_multi", "Op", "_op") and literals(node.args[0]):
                yield node.lineno, literals(node.args[0])


def test_op_kinds_are_named_by_their_constants_not_by_strings():
    import ast
    import pathlib
    root = pathlib.Path(transpiler.__file__).parent
    found = [f"{path.relative_to(root)}:{line}: {kinds}"
             for path in sorted(root.rglob("*.py")) if path.name != "ir.py"
             for line, kinds in _op_kind_literals(ast.parse(path.read_text()))]
    assert not found, "use transpiler.parse.ir.OpKind:\n" + "\n".join(found)


def test_the_op_kind_literal_check_finds_each_form():
    import ast
    source = ('op.name == "load"\ngetattr(o, "name", None) in ("splat", "cast")\nb.emit("for", [], None)\n'
              'u.name != "dot"\nop.name == OpKind.LOAD\ndtype.name == "fp32"\nRULES["load"]\n')
    assert [line for line, _ in _op_kind_literals(ast.parse(source))] == [1, 2, 3, 4]
