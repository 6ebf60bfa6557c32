"""Every user mistake the issue lists raises one class of the `TranspilerError` family, pointing at the line.

Compile errors come from `kernel.cuda_source(...)` with NumPy arrays standing in for device arrays (no GPU
needed); launch errors from `kernel[grid](...)`, whose checks all run before the first CUDA call. Each test
asserts the class, the line (found by the `# <-` marker on it), the key phrase, the caret and a hint.
"""
import dataclasses
import inspect
import os

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import (CompileTimeError, DTypeError, InternalCompilerError, LaunchError, NameResolutionError,
                        ShapeError, TranspilerError, UnsupportedSyntaxError)
from transpiler.runtime.compiler import compile_offline, nvrtc_available

X = np.zeros(64, np.float32)


def marked_line(fn, marker="# <-"):
    """The file line number of the line holding `marker` in `fn` (a kernel or a plain function)."""
    fn = getattr(fn, "fn", fn)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, hits
    return hits[0]


def def_line(kernel):
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))


def compile_error(cls, kernel, *args, **constexprs):
    with pytest.raises(cls) as info:
        kernel.cuda_source(*args, **constexprs)
    return info.value


def assert_points_at(err, kernel, phrase, line=None):
    """The message names the kernel, the file, the line (with a caret under the column), the phrase, a hint."""
    text = str(err)
    line = marked_line(kernel) if line is None else line
    assert isinstance(err, TranspilerError)
    assert err.line == line, text
    assert f"in kernel '{kernel.__name__}'" in text
    assert f"{__file__}:{line}:" in text
    assert phrase in text, text
    assert "^" in text.splitlines()[3]                      # the caret under the source line
    assert err.hint, f"no hint saying what to do in:\n{text}"


# ---- syntax and names --------------------------------------------------------------------------------------

@transpiler.jit
def with_statement_kernel(X, BLOCK: tl.constexpr):
    with open("log.txt") as f:  # <-
        pass


def test_unsupported_syntax_names_the_construct():
    err = compile_error(UnsupportedSyntaxError, with_statement_kernel, X, BLOCK=16)
    assert_points_at(err, with_statement_kernel, "not supported yet: a with statement in kernels")


@transpiler.jit
def lambda_kernel(X, BLOCK: tl.constexpr):
    f = lambda v: v + 1  # <-
    tl.store(X, f(1.0))


def test_unsupported_expression_names_the_construct():
    err = compile_error(UnsupportedSyntaxError, lambda_kernel, X, BLOCK=16)
    assert_points_at(err, lambda_kernel, "not Triton's language: lambda")


@transpiler.jit
def undefined_name_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, scale * 2.0)  # <-


def test_undefined_name():
    err = compile_error(NameResolutionError, undefined_name_kernel, X, BLOCK=16)
    assert_points_at(err, undefined_name_kernel, "name 'scale' is not defined")


def plain_python_helper(x):
    return x * 2


@transpiler.jit
def plain_call_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, plain_python_helper(offs))  # <-


def test_calling_a_function_that_is_not_a_builtin_nor_a_transpile_function():
    err = compile_error(NameResolutionError, plain_call_kernel, X, BLOCK=16)
    assert_points_at(err, plain_call_kernel, "cannot call 'plain_python_helper': it is neither a tl builtin nor "
                                             "a @transpile function")
    assert "@transpiler.transpile" in err.hint


# ---- compile-time values and block sizes ---------------------------------------------------------------------

@transpiler.jit
def runtime_arange_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, n)  # <-
    tl.store(X + offs, 0.0)


def test_arange_bounds_must_be_constexpr():
    err = compile_error(CompileTimeError, runtime_arange_kernel, X, 16, BLOCK=16)
    assert_points_at(err, runtime_arange_kernel, "tl.arange's end must be a compile-time constant")
    assert "tl.constexpr" in err.hint


@transpiler.jit
def arange_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # <-
    tl.store(X + offs, 0.0, mask=offs < 64)


def test_block_size_not_a_power_of_two():
    err = compile_error(CompileTimeError, arange_kernel, X, BLOCK=48)
    assert_points_at(err, arange_kernel, "tl.arange(0, 48) has 48 elements; the count must be a power of two")
    assert "next_power_of_2" in err.hint


@transpiler.jit
def zeros_kernel(X, BM: tl.constexpr, BN: tl.constexpr):
    acc = tl.zeros((BM, BN), tl.float32)  # <-
    tl.store(X + tl.arange(0, BN), tl.sum(acc, axis=0))


def test_block_shape_not_a_power_of_two():
    err = compile_error(CompileTimeError, zeros_kernel, X, BM=16, BN=24)
    assert_points_at(err, zeros_kernel, "block dimensions must be powers of two, but the shape is [16, 24]")


def test_block_with_too_many_elements():
    err = compile_error(CompileTimeError, zeros_kernel, X, BM=2048, BN=1024)
    assert_points_at(err, zeros_kernel, "a block may hold at most 1048576 elements, but [2048, 1024] holds "
                                        "2097152")


# ---- shapes --------------------------------------------------------------------------------------------------

@transpiler.jit
def binary_shape_kernel(X, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, 2 * BLOCK)
    tl.store(X + a, a + b)  # <-


def test_shape_mismatch_in_a_binary_op():
    err = compile_error(ShapeError, binary_shape_kernel, X, BLOCK=16)
    assert_points_at(err, binary_shape_kernel, "cannot broadcast shapes [16] and [32]")


@transpiler.jit
def broadcast_2d_kernel(X, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, 2 * BLOCK)[:, None]
    tl.store(X + rows, rows + cols)  # <-


def test_shape_mismatch_in_broadcasting_names_both_shapes():
    err = compile_error(ShapeError, broadcast_2d_kernel, X, BLOCK=16)
    assert_points_at(err, broadcast_2d_kernel, "cannot broadcast shapes [16, 1] and [32, 1]")


@transpiler.jit
def where_shape_kernel(X, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, 2 * BLOCK)
    c = tl.where(a < 3, a, b)  # <-
    tl.store(X + a, c)


def test_shape_mismatch_in_where():
    err = compile_error(ShapeError, where_shape_kernel, X, BLOCK=16)
    assert_points_at(err, where_shape_kernel, "cannot broadcast shapes [16] and [32]")


@transpiler.jit
def store_shape_kernel(X, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, 2 * BLOCK).to(tl.float32)
    tl.store(X + a, b)  # <-


def test_shape_mismatch_in_a_store():
    err = compile_error(ShapeError, store_shape_kernel, X, BLOCK=16)
    assert_points_at(err, store_shape_kernel, "value shape [32] does not fit pointer shape [16]")


@transpiler.jit
def store_block_scalar_pointer_kernel(X, BLOCK: tl.constexpr):
    tl.store(X, tl.arange(0, BLOCK).to(tl.float32))  # <-


def test_storing_a_block_through_a_scalar_pointer():
    err = compile_error(ShapeError, store_block_scalar_pointer_kernel, X, BLOCK=16)
    assert_points_at(err, store_block_scalar_pointer_kernel, "storing a block of shape [16] through a scalar "
                                                             "pointer")


# ---- dtypes --------------------------------------------------------------------------------------------------

@transpiler.jit
def float_bitwise_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(X + offs, x & 1)  # <-


def test_bitwise_op_on_floats():
    err = compile_error(DTypeError, float_bitwise_kernel, X, BLOCK=16)
    assert_points_at(err, float_bitwise_kernel, "bitwise operator needs integer operands, not tl.float32")


@transpiler.jit
def pointer_plus_float_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) * 0.5
    tl.store(X + offs, 1.0)  # <-


def test_pointer_plus_float():
    err = compile_error(DTypeError, pointer_plus_float_kernel, X, BLOCK=16)
    assert_points_at(err, pointer_plus_float_kernel, "pointer arithmetic needs an integer offset, not tl.float32")


@transpiler.jit
def store_pointer_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, Y + offs)  # <-


def test_storing_to_an_incompatible_pointer():
    err = compile_error(DTypeError, store_pointer_kernel, X, X, BLOCK=16)
    assert_points_at(err, store_pointer_kernel, "cannot store pointers through a pointer to tl.float32")


@transpiler.jit
def store_to_number_kernel(X, n, BLOCK: tl.constexpr):
    tl.store(n, 1.0)  # <-


def test_storing_through_something_that_is_not_a_pointer():
    err = compile_error(DTypeError, store_to_number_kernel, X, 3, BLOCK=16)
    assert_points_at(err, store_to_number_kernel, "tl.store needs a pointer (or a block of pointers), not int32")


@transpiler.jit
def int_mask_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, 1.0, mask=offs % 2)  # <-


def test_mask_that_is_not_boolean():
    err = compile_error(DTypeError, int_mask_kernel, X, BLOCK=16)
    assert_points_at(err, int_mask_kernel, "the mask of tl.store must be a boolean block (int1)")


@transpiler.jit
def literal_range_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, (offs + 2**40).to(tl.float32))  # <-


def test_integer_literal_out_of_range():
    err = compile_error(DTypeError, literal_range_kernel, X, BLOCK=16)
    assert_points_at(err, literal_range_kernel, "the number 1099511627776 is out of range for tl.int32")


# ---- reductions ----------------------------------------------------------------------------------------------

@transpiler.jit
def axis_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X, tl.sum(tl.load(X + offs), axis=1))  # <-


def test_reduction_axis_out_of_range():
    err = compile_error(ShapeError, axis_kernel, X, BLOCK=16)
    assert_points_at(err, axis_kernel, "reduction axis 1 is out of range for a block of rank 1")


# ---- helpers: the call chain ---------------------------------------------------------------------------------

@transpiler.jit
def inner_helper(x):
    return x & 1  # <- inner


@transpiler.jit
def outer_helper(x):
    return inner_helper(x) + 1  # <- outer


@transpiler.jit
def calls_helpers_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, outer_helper(tl.load(X + offs)))  # <-


def test_error_inside_a_helper_shows_the_call_chain():
    err = compile_error(DTypeError, calls_helpers_kernel, X, BLOCK=16)
    inner, outer, top = (marked_line(inner_helper, "# <- inner"), marked_line(outer_helper, "# <- outer"),
                         marked_line(calls_helpers_kernel))
    assert_points_at(err, calls_helpers_kernel, "bitwise operator needs integer operands", line=inner)
    assert [site.line for site in err.call_chain] == [outer, top]
    text = str(err)
    assert text.count("called from") == 2
    assert text.index(f":{inner}:") < text.index(f":{outer}:") < text.index(f":{top}:")
    assert "(in inner_helper)" in text and "(in outer_helper)" in text and "(in calls_helpers_kernel)" in text


# ---- launches ------------------------------------------------------------------------------------------------

@transpiler.jit
def launch_kernel(X, Y, n, BLOCK: tl.constexpr):  # <-
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


def launch_error(call):
    with pytest.raises(LaunchError) as info:
        call()
    err = info.value
    assert_points_at(err, launch_kernel, "", line=def_line(launch_kernel))
    return err


class FakeCudaArray:
    """Stands for a torch CUDA tensor on device `index` (the launch checks read only these attributes)."""
    __module__ = "torch.fake"

    def __init__(self, index, ptr=0x7F0000000000):
        self.device = type("device", (), {"type": "cuda", "index": index})()
        self.dtype = "torch.float32"
        self._ptr = ptr

    def data_ptr(self):
        return self._ptr


@pytest.mark.parametrize("call,phrase", [
    (lambda: launch_kernel[(1,)](X, X, 64, 16, 3), "launch_kernel takes 4 arguments but 5 were given"),
    (lambda: launch_kernel[(1,)](X, X, 64, BLOCK=16, stride=3), "unknown keyword argument 'stride'"),
    (lambda: launch_kernel[(1,)](X, X, BLOCK=16), "missing argument 'n'"),
    (lambda: launch_kernel[(1,)](X, X, 64), "missing constexpr 'BLOCK'"),
    (lambda: launch_kernel[(1,)](X, X, 64, X, BLOCK=16), "argument 'BLOCK' given twice"),
    (lambda: launch_kernel[(1,)](X, X, 64, BLOCK=16, num_warps=3),
     "num_warps must be a power of 2 from 1 to 32, not 3"),
    (lambda: launch_kernel[(1,)](X, X, 64, BLOCK=16),
     "arguments 'X' (numpy), 'Y' (numpy) are in host memory; a GPU launch needs device arrays"),
    (lambda: launch_kernel[(1,)](FakeCudaArray(0), X, 64, BLOCK=16),
     "argument 'Y' (numpy) is in host memory"),
    (lambda: launch_kernel[(1,)](FakeCudaArray(0), FakeCudaArray(1), 64, BLOCK=16),
     "the array arguments live on different devices: 'X' on device 0, 'Y' on device 1"),
    (lambda: launch_kernel[(1, 70000)](FakeCudaArray(0), FakeCudaArray(0), 64, BLOCK=16),
     "grid dimension 1 is 70000, outside the hardware limit 0..65535"),
    (lambda: launch_kernel[(2**31,)](FakeCudaArray(0), FakeCudaArray(0), 64, BLOCK=16),
     "grid dimension 0 is 2147483648, outside the hardware limit 0..2147483647"),
    (lambda: launch_kernel[(1, 1, 1, 1)](FakeCudaArray(0), FakeCudaArray(0), 64, BLOCK=16),
     "grid must have 1 to 3 dimensions, not 4"),
    (lambda: launch_kernel[(1,)](X.astype(np.complex64), X, 64, BLOCK=16),
     "argument 'X': arrays of element type complex64 have no Triton dtype"),
    (lambda: launch_kernel(X, X, 64, BLOCK=16), "a kernel is launched with launch_kernel[grid](...)"),
], ids=["too_many_args", "unknown_keyword", "missing_arg", "missing_constexpr", "given_twice", "num_warps",
        "host_memory", "one_in_host_memory", "different_devices", "grid_axis_1", "grid_axis_0", "grid_rank", "array_dtype",
        "called_directly"])
def test_launch_error(call, phrase):
    err = launch_error(call)
    assert phrase in str(err)


@pytest.mark.parametrize("call, python_class", [
    (lambda: launch_kernel[(1,)](FakeCudaArray(0), FakeCudaArray(0), 2**64, BLOCK=16), OverflowError),
    (lambda: launch_kernel.interpret[(1,)](X, X.copy(), -2**63 - 1, BLOCK=16), OverflowError),
    (lambda: launch_kernel[(1,)](FakeCudaArray(0), FakeCudaArray(0), 64, BLOCK=16, num_warps=3), AssertionError),
    (lambda: launch_kernel.interpret[(1,)](X, X.copy(), 64, BLOCK=16, num_warps=6), AssertionError),
    (lambda: launch_kernel[(1,)](X, X, 64, BLOCK=16), ValueError),
], ids=["int_past_64_bits", "int_past_64_bits_interpreted", "num_warps", "num_warps_interpreted", "host_memory"])
def test_launch_errors_are_also_the_python_exception_triton_raises(call, python_class):
    """Code catching Triton's exception (its tests: `pytest.raises(OverflowError)`) catches ours, which stays a
    located LaunchError."""
    with pytest.raises(python_class) as info:
        call()
    assert isinstance(info.value, LaunchError)
    assert_points_at(info.value, launch_kernel, "", line=def_line(launch_kernel))
    assert info.value.__cause__ is None       # nothing chained: the message prints once


def test_launch_errors_are_the_same_through_the_interpreter():
    err = launch_error(lambda: launch_kernel.interpret[(1,)](X, X, BLOCK=16))
    assert "missing argument 'n'" in str(err)


# ---- our own bad C++ -----------------------------------------------------------------------------------------

BROKEN = "\nthis is not C++;\n"


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
def test_generated_cuda_that_does_not_compile_is_an_internal_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_DUMP_DIR", str(tmp_path))
    source = launch_kernel.cuda_source(X, X, 64, BLOCK=16) + BROKEN
    with pytest.raises(InternalCompilerError) as info:
        compile_offline(source, "sm_90a", name="launch_kernel.cu")
    text = str(info.value)
    dumped = os.path.join(str(tmp_path), "launch_kernel.cu")
    assert f"source: {dumped}" in text
    assert "first message:" in text and "error" in text.split("first message:")[1]
    assert "a bug in transpiler, not in your kernel" in text and "report" in info.value.hint
    with open(dumped) as f:
        assert f.read() == source


@pytest.mark.gpu
def test_launch_of_generated_cuda_that_does_not_compile_is_an_internal_error(tmp_path, monkeypatch):
    import cupy
    from transpiler.runtime.kernel import Kernel
    monkeypatch.setenv("TRANSPILER_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))   # keep the broken source out of it
    generate = Kernel._generate

    def generate_broken(self, *args):
        emitted = generate(self, *args)
        return dataclasses.replace(emitted, source=emitted.source + BROKEN)
    monkeypatch.setattr(Kernel, "_generate", generate_broken)

    @transpiler.jit
    def broken_kernel(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), 1.0)

    with pytest.raises(InternalCompilerError) as info:
        broken_kernel[(1,)](cupy.zeros(16, cupy.float32), BLOCK=16)
    assert "broken_kernel.cu" in str(info.value) and "first message:" in str(info.value)


def test_a_crash_after_type_checking_is_an_internal_error(monkeypatch):
    import transpiler.emit_cuda as emit_cuda

    def crash(ir, analysis):
        raise KeyError("no rule")
    monkeypatch.setattr(emit_cuda, "emit_kernel", crash)

    @transpiler.jit
    def fine_kernel(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), 1.0)

    with pytest.raises(InternalCompilerError) as info:
        fine_kernel.cuda_source(X, BLOCK=16)
    text = str(info.value)
    assert "generating CUDA for 'fine_kernel' failed after the kernel type-checked (KeyError" in text
    assert "not in your kernel" in text and "report" in info.value.hint
    assert info.value.line == def_line(fine_kernel)


# ---- the interpreter reports the same class at the same line ------------------------------------------------

SAME_ON_BOTH_PATHS = [
    (runtime_arange_kernel, (X, 16), dict(BLOCK=16)), (arange_kernel, (X,), dict(BLOCK=48)),
    (zeros_kernel, (X,), dict(BM=16, BN=24)), (zeros_kernel, (X,), dict(BM=2048, BN=1024)),
    (binary_shape_kernel, (X,), dict(BLOCK=16)), (broadcast_2d_kernel, (X,), dict(BLOCK=16)),
    (where_shape_kernel, (X,), dict(BLOCK=16)), (store_shape_kernel, (X,), dict(BLOCK=16)),
    (store_block_scalar_pointer_kernel, (X,), dict(BLOCK=16)), (float_bitwise_kernel, (X,), dict(BLOCK=16)),
    (pointer_plus_float_kernel, (X,), dict(BLOCK=16)), (store_pointer_kernel, (X, X), dict(BLOCK=16)),
    (store_to_number_kernel, (X, 3), dict(BLOCK=16)), (int_mask_kernel, (X,), dict(BLOCK=16)),
    (literal_range_kernel, (X,), dict(BLOCK=16)), (axis_kernel, (X,), dict(BLOCK=16)),
    (calls_helpers_kernel, (X,), dict(BLOCK=16)),
]


@pytest.mark.parametrize("kernel,args,constexprs", SAME_ON_BOTH_PATHS,
                         ids=[f"{k.__name__}-{i}" for i, (k, _, _) in enumerate(SAME_ON_BOTH_PATHS)])
def test_interpreter_raises_the_same_class_at_the_same_line(kernel, args, constexprs):
    with pytest.raises(TranspilerError) as compiled:
        kernel.cuda_source(*args, **constexprs)
    with pytest.raises(TranspilerError) as interpreted:
        kernel.interpret[(1,)](*[a.copy() if isinstance(a, np.ndarray) else a for a in args], **constexprs)
    assert type(interpreted.value) is type(compiled.value)
    assert interpreted.value.line == compiled.value.line
    assert f"in kernel '{kernel.__name__}'" in str(interpreted.value)


# Refusals in the words of Triton's own (test_core.py matches them), on both paths.
@transpiler.jit
def _bounded_slice_kernel(dst):
    dst[10:]


@transpiler.jit
def _pid_axis_kernel(dst, AXIS: tl.constexpr):
    tl.store(dst, tl.program_id(AXIS))


@transpiler.jit
def _mixed_signedness_kernel(X, Y):
    tl.store(X, tl.load(X) % tl.load(Y))


@pytest.mark.parametrize("path", ["compiler", "interpreter"])
def test_refusals_use_tritons_words(path):
    dst = np.zeros(16, np.int32)

    def launch(kernel, *args, **kw):
        if path == "compiler":
            kernel.ir(*args, **kw)
        else:
            kernel.interpret[(1,)](*args, **kw)
    with pytest.raises(transpiler.TranspilerError, match="not Triton's language: unsupported tensor index"):
        launch(_bounded_slice_kernel, dst)
    with pytest.raises(transpiler.TranspilerError, match="program_id axis must be 0, 1, or 2 but got 20"):
        launch(_pid_axis_kernel, dst, AXIS=20)
    with pytest.raises(transpiler.TranspilerError, match="Cannot use .* because they have different signedness"):
        launch(_mixed_signedness_kernel, dst, np.ones(16, np.uint32))
