"""Every refusal says which kind it is: "not supported yet" (Triton accepts it, we do not yet) or "not Triton's
language" (Triton's compiler rejects it too). The kind is an argument of the error, which composes the words,
so the words cannot be left out; these tests hold the package to that.

1. A walk over the package's source (ast): every construction of an error class that is always a refusal
   (`UnsupportedSyntaxError`, directly or through a builder's `error(cls, ...)`) passes `refusal=`, and no
   string in the package spells a kind's words itself (only `errors.Refusal` holds them), nor the vague
   "is not supported" that names no kind.
2. Kernels written as Triton users write them: each refusal carries the kind Triton's own compiler implies
   (checked on this machine with Triton 3.6's front end, `triton.compile` to TTIR, where the test says so),
   its message starts with the kind's words, and it points at the kernel line that holds the construct, on
   the compiled path and under the interpreter.
"""
import ast
import inspect
import os
import re
import sys

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import errors
from transpiler.errors import (NOT_TRITON, NOT_YET, CompileTimeError, DTypeError, NameResolutionError, Refusal,
                               ShapeError, TranspilerError, TypeRefusal, UnsupportedSyntaxError)

import transpiler.runtime.kernel  # noqa: F401  (the runtime package, for its folder)

# The package's folders: `transpiler/` and `runtime/` (mapped to transpiler.runtime in a source checkout).
PACKAGES = sorted({os.path.dirname(transpiler.__file__), os.path.dirname(sys.modules["transpiler.runtime"].__file__)})
ALWAYS_REFUSALS = {name for name, cls in vars(errors).items()
                   if isinstance(cls, type) and issubclass(cls, TranspilerError) and cls.REFUSAL_REQUIRED}
ERROR_CLASSES = {name for name, cls in vars(errors).items()
                 if isinstance(cls, type) and issubclass(cls, TranspilerError)}
# The kinds' words (each Refusal's value), and the old wording that named no kind.
KIND_WORDS = re.compile("|".join([re.escape(r.value) for r in Refusal] + [r"\bis not supported\b",
                                                                         r"\bare not supported\b"]), re.I)


def package_files():
    for package in PACKAGES:
        for folder, _dirs, files in os.walk(package):
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def shown(path):
    """`path` relative to the checkout (transpiler/..., runtime/...)."""
    return os.path.relpath(path, os.path.dirname(PACKAGES[0]))


def parsed(path):
    with open(path) as f:
        return ast.parse(f.read(), path)


def error_constructions(tree):
    """(class name, call node) for every call that builds an error of the family: `Cls(...)`, or a builder's
    `error(Cls, ...)` / `self.error(Cls, ...)` / `b.error(Cls, ...)`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in ERROR_CLASSES:
            yield name, node
        elif name == "error" and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in ERROR_CLASSES:
            yield node.args[0].id, node


def not_messages(tree):
    """The constant nodes that are no error's message: docstrings (prose), and the text of warnings (an
    ignored option is warned about as "not supported yet", but the kernel runs: no refusal)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "warn":
            found.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Constant))
    return found


def test_the_walk_sees_the_refusal_sites():
    """The walk is not vacuous: it finds the builder's refusals and the classes that need a kind."""
    assert ALWAYS_REFUSALS == {"UnsupportedSyntaxError"}
    found = [(shown(path), cls) for path in package_files() for cls, _ in error_constructions(parsed(path))]
    assert sum(cls == "UnsupportedSyntaxError" for _, cls in found) >= 30
    assert {p for p, _ in found} >= {os.path.join("transpiler", "parse", "builder_statements.py"),
                                     os.path.join("transpiler", "interpreter", "evaluate.py"),
                                     os.path.join("runtime", "triton_options.py")}


def test_every_refusal_is_raised_with_its_kind():
    missing = []
    for path in package_files():
        for cls, call in error_constructions(parsed(path)):
            if cls in ALWAYS_REFUSALS and not any(k.arg == "refusal" for k in call.keywords):
                missing.append(f"{shown(path)}:{call.lineno}: {cls} without refusal=")
    assert not missing, "\n".join(missing)


def test_no_message_spells_a_kind_itself():
    """Only `errors.Refusal` holds the words; a message that spelled them would not be a refusal the code can
    tell (and would say them twice once it is one)."""
    spelled = []
    for path in package_files():
        if os.path.samefile(path, errors.__file__):
            continue
        tree = parsed(path)
        skip = not_messages(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                    and KIND_WORDS.search(node.value):
                spelled.append(f"{shown(path)}:{node.lineno}: {node.value!r}")
    assert not spelled, "\n".join(spelled)


def test_an_always_refusal_class_cannot_be_built_without_a_kind():
    with pytest.raises(TypeError, match="NOT_YET or NOT_TRITON"):
        UnsupportedSyntaxError("a construct")
    with pytest.raises(TypeError, match="NOT_YET or NOT_TRITON"):
        DTypeError("x", refusal="not supported yet")        # the enum, not words
    err = UnsupportedSyntaxError("a construct", refusal=NOT_YET)
    assert err.refusal is NOT_YET and str(err).startswith("not supported yet: a construct")
    plain = ShapeError("cannot broadcast shapes [2] and [3]")
    assert plain.refusal is None and str(plain) == "cannot broadcast shapes [2] and [3]"


def test_a_type_refusal_keeps_its_kind_through_the_located_error():
    exc = TypeRefusal("fp8 meets an integer block", NOT_TRITON)
    assert str(exc) == "not Triton's language: fp8 meets an integer block"
    located = DTypeError(**errors.type_error_parts(exc))
    assert located.refusal is NOT_TRITON and str(located) == str(exc)
    plain = DTypeError(**errors.type_error_parts(TypeError("invalid operands")))
    assert plain.refusal is None and str(plain) == "invalid operands"


# ---- refusals of kernels written as Triton users write them ------------------------------------------------

def marked_line(kernel):
    lines, start = inspect.getsourcelines(kernel.fn)
    hits = [start + i for i, text in enumerate(lines) if "# <-" in text]
    assert len(hits) == 1, hits
    return hits[0]


@transpiler.jit
def early_exit_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(n):
        acc += tl.load(X + i * BLOCK + offs)
        if i > 3:
            break  # <-
    tl.store(X + offs, acc)


@transpiler.jit
def return_in_loop_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(n):
        if tl.load(X + i) < 0:
            return  # <-
        tl.store(X + i * BLOCK + offs, 1.0)


@transpiler.jit
def lambda_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    scale = lambda v: v * 2  # <-
    tl.store(X + offs, scale(tl.load(X + offs)))


@transpiler.jit
def sliced_block_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK // 2), x[0:BLOCK // 2])  # <-


@transpiler.jit
def runtime_fstring_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X)
    tl.static_print(f"first element {x}")  # <-


@transpiler.jit
def with_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    with open("trace.txt"):  # <-
        tl.store(X + offs, 1.0)


@transpiler.jit
def fp8_sum_kernel(X, OUT, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK)).to(tl.float8e4nv)
    tl.store(OUT, tl.sum(x, axis=0).to(tl.float32))  # <-


@transpiler.jit
def target_info_kernel(X, BLOCK: tl.constexpr):
    if tl.target_info.is_cuda():  # <-
        tl.store(X, 1.0)


@transpiler.jit
def pointer_select_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    src = tl.where(offs % 2 == 0, X + offs, Y + offs)  # <-
    tl.store(X + offs, tl.load(src))


@transpiler.jit
def misspelled_name_kernel(X, BLOCK: tl.constexpr):
    tl.store(X, tl.zorblax(1.0))  # <-


F32 = np.linspace(-1.0, 2.0, 4096, dtype=np.float32)
I32 = np.arange(1, 65, dtype=np.int32)

# (kernel, arguments, constexprs, error class, kind, the interpreter runs it too)
CASES = {
    # Triton: "unsupported AST node type: Break" (its front end, on this machine)
    "break": (early_exit_kernel, (F32, 8), {"BLOCK": 16}, UnsupportedSyntaxError, NOT_TRITON, True),
    # Triton: "Cannot have `return` statements inside `while` or `for` statements"
    "return in a loop": (return_in_loop_kernel, (F32, 8), {"BLOCK": 16}, UnsupportedSyntaxError, NOT_TRITON,
                         False),
    # Triton: "unsupported AST node type: Lambda"
    "lambda": (lambda_kernel, (F32,), {"BLOCK": 16}, UnsupportedSyntaxError, NOT_TRITON, False),
    # Triton: "unsupported tensor index"
    "bounded slice": (sliced_block_kernel, (F32,), {"BLOCK": 16}, UnsupportedSyntaxError, NOT_TRITON, True),
    # Triton: "Cannot evaluate f-string containing non-constexpr conversion values"
    "runtime f-string": (runtime_fstring_kernel, (F32,), {"BLOCK": 16}, UnsupportedSyntaxError, NOT_TRITON,
                         False),
    # Triton compiles some with statements (its own context managers); we refuse them all
    "with": (with_kernel, (F32,), {"BLOCK": 16}, UnsupportedSyntaxError, NOT_YET, False),
    "fp8 reduction": (fp8_sum_kernel, (F32, F32.copy()), {"BLOCK": 16}, DTypeError, NOT_YET, True),
    # a name of Triton's language we lack
    "tl.target_info": (target_info_kernel, (F32,), {"BLOCK": 16}, NameResolutionError, NOT_YET, False),
    # Triton selects between pointer blocks (test_core's test_where on the H200)
    "tl.where of pointers": (pointer_select_kernel, (F32, F32.copy()), {"BLOCK": 16}, DTypeError, NOT_YET, True),
    # a name neither has, with no near miss to suggest
    "unknown tl name": (misspelled_name_kernel, (F32,), {"BLOCK": 16}, NameResolutionError, NOT_TRITON, False),
}


def check_refusal(err, kernel, kind):
    text = str(err)
    assert err.refusal is kind, text
    assert text.startswith(f"in kernel '{kernel.__name__}': {kind.value}: "), text
    assert err.line == marked_line(kernel), text
    assert f"{__file__}:{err.line}:" in text, text


@pytest.mark.parametrize("case", sorted(CASES))
def test_refusal_carries_its_kind_and_points_at_the_line(case):
    kernel, args, constexprs, cls, kind, interpreted = CASES[case]
    with pytest.raises(cls) as info:
        kernel.cuda_source(*args, **constexprs)
    check_refusal(info.value, kernel, kind)
    if interpreted:
        with pytest.raises(cls) as info:
            kernel.interpret[(1,)](*args, **constexprs)
        check_refusal(info.value.with_context(kernel=kernel.__name__), kernel, kind)


@transpiler.jit
def int_sqrt_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.sqrt(tl.load(X + offs)))  # <-


def test_user_errors_that_are_not_refusals_have_no_kind():
    """A wrong shape is the user's mistake, worded as Triton words it, and says no kind."""

    @transpiler.jit
    def mismatched_kernel(X, BLOCK: tl.constexpr):
        a = tl.arange(0, BLOCK)
        b = tl.arange(0, BLOCK * 2)
        tl.store(X + a, (a + b).to(tl.float32))

    with pytest.raises(ShapeError) as info:
        mismatched_kernel.cuda_source(F32, BLOCK=16)
    assert info.value.refusal is None
    assert not KIND_WORDS.search(str(info.value))
    with pytest.raises(CompileTimeError) as info:
        early_exit_kernel.cuda_source(F32, 8, BLOCK=12)        # not a power of two: Triton's rule
    assert info.value.refusal is None
    # A dtype Triton rejects too ("Expected dtype ['fp32', 'fp64'] but got int32"): the user's mistake.
    for run in (lambda: int_sqrt_kernel.cuda_source(I32, I32.copy(), BLOCK=16),
                lambda: int_sqrt_kernel.interpret[(1,)](I32, I32.copy(), BLOCK=16)):
        with pytest.raises(DTypeError, match="floating-point") as info:
            run()
        assert info.value.refusal is None and info.value.line == marked_line(int_sqrt_kernel)
