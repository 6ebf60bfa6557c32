"""Whole kernels under the interpreter: vector add, 2-D tiles, softmax, layernorm, matmul, control flow,
helpers, printing, errors pointing at the kernel line, and the launch machinery."""
import inspect

import numpy as np
import pytest

import transpiler.language as tl
from transpiler.errors import CompileTimeError, InterpreterError, LaunchError, ShapeError
from transpiler.interpreter import interpret
from transpiler.language import core


def _line_of(fn, marker):
    """The file line number of the line of `fn` containing `marker`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


# ---- vector add -------------------------------------------------------------------------------------------


def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@pytest.mark.parametrize("n", [1, 1000, 1024, 1531])
def test_vector_add_with_mask(rng, n):
    block = 256
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    # One extra element after the end: it must stay untouched, proving the mask works.
    out_storage = np.full(n + 1, np.nan, dtype=np.float32)
    out = out_storage[:n]
    interpret(add_kernel, (triton_cdiv(n, block),), (x, y, out, n), {"BLOCK": block})
    np.testing.assert_array_equal(out, x + y)
    assert np.isnan(out_storage[n])


def triton_cdiv(a, b):
    return (a + b - 1) // b


def test_vector_add_int_and_fp16(rng):
    n = 300
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.full(n, -7, dtype=np.int32)
    interpret(add_kernel, (3,), (x, y, out, n), {"BLOCK": 128})
    np.testing.assert_array_equal(out, x + y)

    xh = rng.standard_normal(n).astype(np.float16)
    yh = rng.standard_normal(n).astype(np.float16)
    outh = np.full(n, np.nan, dtype=np.float16)
    interpret(add_kernel, (3,), (xh, yh, outh, n), {"BLOCK": 128})
    np.testing.assert_array_equal(outh, (xh.astype(np.float64) + yh.astype(np.float64)).astype(np.float16))


# ---- 2-D tiles --------------------------------------------------------------------------------------------


def tile_kernel(in_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs = rm[:, None] * stride_m + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(in_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + rm[:, None].to(tl.float32), mask=mask)


def test_2d_tile(rng):
    M, N = 37, 50
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.full((M, N), np.nan, dtype=np.float32)
    interpret(tile_kernel, (triton_cdiv(M, 16), triton_cdiv(N, 32)), (x, out, M, N, N), {"BLOCK_M": 16, "BLOCK_N": 32})
    expected = x * np.float32(2.0) + np.arange(M, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(out, expected)


def transpose_kernel(in_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tile = tl.load(in_ptr + r[:, None] * N + r[None, :], mask=(r[:, None] < M) & (r[None, :] < N), other=-1.0)
    tl.store(out_ptr + r[:, None] * M + r[None, :], tl.trans(tile), mask=(r[:, None] < N) & (r[None, :] < M))


def test_transpose_through_trans(rng):
    M, N = 5, 7
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.full((N, M), np.nan, dtype=np.float32)
    interpret(transpose_kernel, (1,), (x, out, M, N), {"BLOCK": 8})
    np.testing.assert_array_equal(out, x.T)


def test_strided_view_argument(rng):
    """A transposed NumPy view is seen through its memory, as the GPU sees a tensor's data pointer."""
    base = rng.standard_normal((6, 4)).astype(np.float32)
    view = base.T  # shape (4, 6), strides (1, 4) in elements
    out = np.full((4, 6), np.nan, dtype=np.float32)

    def kernel(src, dst, s0, s1, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        row, col = i // 6, i % 6
        mask = i < 24
        tl.store(dst + i, tl.load(src + row * s0 + col * s1, mask=mask), mask=mask)

    interpret(kernel, (1,), (view, out, 1, 4), {"BLOCK": 32})
    np.testing.assert_array_equal(out, view)


# ---- softmax and layernorm --------------------------------------------------------------------------------


def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, num / den, mask=mask)


def test_fused_softmax(rng):
    rows, cols = 9, 81
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = np.full((rows, cols), np.nan, dtype=np.float32)
    interpret(softmax_kernel, (rows,), (out, x, cols, cols, cols), {"BLOCK": 128})
    ref = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)


def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride + offs, y, mask=mask)


def test_layernorm_fp16(rng):
    rows, cols, eps = 6, 100, 1e-5
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float16)
    w = rng.standard_normal(cols).astype(np.float16)
    b = rng.standard_normal(cols).astype(np.float16)
    y = np.full((rows, cols), np.nan, dtype=np.float16)
    interpret(layernorm_kernel, (rows,), (x, y, w, b, cols, cols, eps), {"BLOCK": 128})
    xf = x.astype(np.float64)
    ref = (xf - xf.mean(1, keepdims=True)) / np.sqrt(xf.var(1, keepdims=True) + eps) * w.astype(np.float64) + b
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=2e-3)


# ---- matmul: tl.dot in a K loop ---------------------------------------------------------------------------


def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_matmul_fp16(rng):
    M, N, K = 40, 33, 70
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, dtype=np.float16)
    interpret(matmul_kernel, (3, 3), (a, b, c, M, N, K), {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32})
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=2e-3)


# ---- control flow -----------------------------------------------------------------------------------------


def row_sum_loop_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, USE_TL_RANGE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    loop = tl.range(0, n_cols, BLOCK, num_stages=2) if USE_TL_RANGE else range(0, n_cols, BLOCK)
    for start in loop:
        offs = start + tl.arange(0, BLOCK)
        acc = acc + tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@pytest.mark.parametrize("use_tl_range", [False, True])
def test_for_loop_with_loop_carried_block(rng, use_tl_range):
    rows, cols = 4, 100
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.full(rows, np.nan, dtype=np.float32)
    interpret(row_sum_loop_kernel, (rows,), (x, out, cols), {"BLOCK": 16, "USE_TL_RANGE": use_tl_range})
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5)


def test_static_range_requires_constexpr():
    def kernel(n):
        for _ in tl.static_range(n):
            pass

    with pytest.raises(CompileTimeError, match="constexpr"):
        interpret(kernel, (1,), (5,), {})


def collatz_kernel(start_ptr, steps_ptr):
    pid = tl.program_id(0)
    value = tl.load(start_ptr + pid)
    steps = 0
    while value != 1:
        if value % 2 == 0:
            value = value // 2
        else:
            value = 3 * value + 1
        steps += 1
    tl.store(steps_ptr + pid, steps)


def test_while_and_if_else_on_scalars(rng):
    starts = rng.integers(1, 500, 12).astype(np.int32)
    steps = np.full(12, -1, dtype=np.int32)
    interpret(collatz_kernel, (12,), (starts, steps), {})

    def collatz(v):
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        return n

    np.testing.assert_array_equal(steps, [collatz(int(s)) for s in starts])


def test_scalar_conditions_and_boolean_operators():
    def kernel(out_ptr, threshold):
        pid = tl.program_id(0)
        if pid < threshold and not (pid == 0):
            tl.store(out_ptr + pid, 1)
        elif pid == 0 or pid > 100:
            tl.store(out_ptr + pid, 2)
        else:
            tl.store(out_ptr + pid, 3)

    out = np.full(6, -1, dtype=np.int32)
    interpret(kernel, (6,), (out, 3), {})
    np.testing.assert_array_equal(out, [2, 1, 1, 3, 3, 3])


def test_block_as_condition_is_an_error():
    def kernel(out_ptr):
        if tl.arange(0, 4) < 2:
            tl.store(out_ptr, 1)

    with pytest.raises(ShapeError, match=r"shape \(4,\)"):
        interpret(kernel, (1,), (np.zeros(1, np.int32),), {})


# ---- helpers, grids, launches -----------------------------------------------------------------------------


def _scaled_load(ptr, offs, mask, scale):
    return tl.load(ptr + offs, mask=mask, other=0.0) * scale


def _two_results(x):
    return x + 1, x * 2


def helper_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a, b = _two_results(_scaled_load(x_ptr, offs, mask, scale))
    tl.store(out_ptr + offs, a + b, mask=mask)


def test_helper_calls(rng):
    n = 70
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    interpret(helper_kernel, (3,), (x, out, n, 0.5), {"BLOCK": 32})
    scaled = x * np.float32(0.5)
    np.testing.assert_allclose(out, (scaled + 1) + scaled * 2, rtol=1e-6)


def test_grid_3d_and_num_programs():
    def kernel(out_ptr):
        x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        nx, ny = tl.num_programs(0), tl.num_programs(1)
        linear = (z * ny + y) * nx + x
        tl.store(out_ptr + linear, linear * 10 + tl.num_programs(2))

    out = np.full(2 * 3 * 4, -1, dtype=np.int64)
    interpret(kernel, (2, 3, 4), (out,), {})
    np.testing.assert_array_equal(out, np.arange(24) * 10 + 4)


class _DecoratedLike:
    """Stands in for a @transpile KernelObject: interpret uses its `.fn`."""

    def __init__(self, fn):
        self.fn = fn


def test_interpret_accepts_object_with_fn(rng):
    n = 10
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    interpret(_DecoratedLike(add_kernel), (1,), (x, y, out, n), {"BLOCK": 16})
    np.testing.assert_array_equal(out, x + y)


def test_scalar_arguments_are_typed_scalars():
    seen = []

    def kernel(a, b, c, d, e, F: tl.constexpr):
        seen.extend([a.dtype, b.dtype, c.dtype, d.dtype, e.dtype, F])

    interpret(kernel, (1,), (1, 2**31, 1.5, True, np.float16(2)), {"F": 3})
    # as Triton types launch arguments: an int past int32 is int64 (only literals get uint32)
    assert seen[:5] == [tl.int32, tl.int64, tl.float32, tl.int1, tl.float16]
    # A constexpr stays a Python int (with block methods, as `F.to(...)` has in a compiled kernel).
    assert isinstance(seen[5], int) and seen[5] == 3


def test_pointer_argument_exposes_element_type():
    seen = []

    def kernel(x_ptr):
        seen.append(x_ptr.dtype.element_ty)

    interpret(kernel, (1,), (np.zeros(4, np.uint16),), {})
    assert seen == [tl.uint16]


def test_bad_launch_arguments():
    with pytest.raises(LaunchError, match="bind"):
        interpret(add_kernel, (1,), (np.zeros(1),), {})
    with pytest.raises(LaunchError, match="grid"):
        interpret(add_kernel, (1, 1, 1, 1), (), {})
    with pytest.raises(LaunchError, match="complex"):
        interpret(add_kernel, (1,), (np.zeros(4, np.complex64),) * 3 + (4,), {"BLOCK": 4})


def test_zero_sized_grid_runs_nothing():
    out = np.full(4, 3.0, dtype=np.float32)
    interpret(add_kernel, (0,), (out, out, out, 4), {"BLOCK": 4})
    np.testing.assert_array_equal(out, 3.0)


def test_interpreter_is_uninstalled_after_errors():
    assert core.current_interpreter() is None
    with pytest.raises(InterpreterError):
        interpret(oob_kernel, (1,), (np.zeros(4), np.zeros(8)), {"BLOCK": 8})
    assert core.current_interpreter() is None


# ---- errors point at the kernel line ----------------------------------------------------------------------


def oob_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # OOB-LINE
    tl.store(out_ptr + offs, x)


def test_out_of_bounds_load_names_the_line():
    x = np.arange(100, dtype=np.float32)
    out = np.full(128, np.nan, dtype=np.float32)
    with pytest.raises(InterpreterError) as info:
        interpret(oob_kernel, (1,), (x, out), {"BLOCK": 128})
    err = info.value
    line = _line_of(oob_kernel, "OOB-LINE")
    assert err.loc is not None and err.loc.line == line
    assert err.loc.file == __file__ and err.loc.function == "oob_kernel"
    text = str(err)
    assert f":{line}:" in text and "oob_kernel" in text
    assert "100 elements" in text and "100 (lane (100,))" in text and "x_ptr" in text
    assert np.isnan(out).all()  # the faulting program stored nothing


def _helper_storing_out_of_bounds(ptr):
    tl.store(ptr - 1, 1.0)  # HELPER-OOB


def test_out_of_bounds_store_in_helper_names_the_helper_line():
    def kernel(ptr):
        _helper_storing_out_of_bounds(ptr)

    with pytest.raises(InterpreterError, match=r"offsets -1") as info:
        interpret(kernel, (1,), (np.zeros(4, np.float32),), {})
    assert info.value.loc.line == _line_of(_helper_storing_out_of_bounds, "HELPER-OOB")
    assert info.value.loc.function == "_helper_storing_out_of_bounds"


def test_masked_off_lanes_are_not_bounds_checked(rng):
    x = rng.standard_normal(10).astype(np.float32)
    out = np.full(10, np.nan, dtype=np.float32)

    def kernel(x_ptr, out_ptr):
        offs = tl.arange(0, 16) - 3  # lanes 0..2 negative, 13..15 past the end
        mask = (offs >= 0) & (offs < 10)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=5.0) + 1.0, mask=mask)

    interpret(kernel, (1,), (x, out), {})
    np.testing.assert_array_equal(out, x + np.float32(1.0))


def test_type_errors_carry_the_kernel_line():
    def kernel(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4))
        y = x // 2.0  # FLOORDIV-LINE

    from transpiler.errors import DTypeError
    with pytest.raises(DTypeError) as info:
        interpret(kernel, (1,), (np.ones(4, np.float32),), {})
    assert info.value.loc.line == _line_of(kernel, "FLOORDIV-LINE")
    assert "in kernel 'kernel'" in str(info.value)


# ---- printing ---------------------------------------------------------------------------------------------


def test_print_inside_kernel(capsys):
    def kernel(x_ptr):
        pid = tl.program_id(0)
        x = tl.load(x_ptr + pid * 2 + tl.arange(0, 2))
        print("program", int(pid), "values", x)

    interpret(kernel, (2,), (np.array([1, 2, 3, 4], dtype=np.int32),), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["program 0 values [1 2]", "program 1 values [3 4]"]


def test_device_print_and_static_print(capsys):
    def kernel(x_ptr):
        tl.static_print("compile-time", 7)
        tl.device_print("x =", tl.load(x_ptr + tl.arange(0, 2)))

    interpret(kernel, (2,), (np.array([5, 6], dtype=np.int32),), {})
    out = capsys.readouterr().out.splitlines()
    # static_print runs in every program, as in Triton's interpreter (the compiler prints once, while compiling)
    assert out == ["compile-time 7", "pid (0, 0, 0) x = [5 6]", "compile-time 7", "pid (1, 0, 0) x = [5 6]"]


def test_device_print_of_several_values_in_hex_prints_each_ones_bits(capsys):
    def kernel(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 2))
        tl.device_print("bits", x, -x, hex=True)

    interpret(kernel, (1,), (np.array([255, 16], dtype=np.int32),), {})
    assert capsys.readouterr().out.splitlines() == ["pid (0, 0, 0) bits [0xff 0x10]",
                                                    "pid (0, 0, 0) bits [0xffffff01 0xfffffff0]"]


def test_device_assert_and_static_assert():
    def kernel(x_ptr, LIMIT: tl.constexpr):
        tl.static_assert(LIMIT > 0, "LIMIT must be positive")
        x = tl.load(x_ptr + tl.arange(0, 4))
        tl.device_assert(x < LIMIT, "x too large")

    interpret(kernel, (1,), (np.array([1, 2, 3, 4], np.int32),), {"LIMIT": 10})
    with pytest.raises(InterpreterError, match=r"x too large") as info:
        interpret(kernel, (1,), (np.array([1, 20, 3, 40], np.int32),), {"LIMIT": 10})
    assert "(1,)" in str(info.value) and "(3,)" in str(info.value)
    with pytest.raises(CompileTimeError, match="LIMIT must be positive"):
        interpret(kernel, (1,), (np.array([1, 2, 3, 4], np.int32),), {"LIMIT": -1})


# ---- device arrays ----------------------------------------------------------------------------------------


class _FakeDeviceArray:
    """A minimal device array: `__cuda_array_interface__` plus CuPy-style get()/set() host copies."""

    def __init__(self, host):
        self._host = host.copy()
        self.dtype, self.shape = host.dtype, host.shape
        self.__cuda_array_interface__ = {"shape": host.shape, "typestr": host.dtype.str, "version": 3}
        self.sets = 0

    def get(self):
        return self._host.copy()

    def set(self, values):
        self.sets += 1
        self._host[...] = values


def test_device_arrays_are_copied_in_and_only_stored_ones_back(rng):
    n = 50
    x = _FakeDeviceArray(rng.standard_normal(n).astype(np.float32))
    y = _FakeDeviceArray(rng.standard_normal(n).astype(np.float32))
    out = _FakeDeviceArray(np.full(n, np.nan, dtype=np.float32))
    interpret(add_kernel, (2,), (x, y, out, n), {"BLOCK": 32})
    np.testing.assert_array_equal(out.get(), x.get() + y.get())
    assert (x.sets, y.sets, out.sets) == (0, 0, 1)


def test_same_array_passed_twice_is_one_buffer(rng):
    data = _FakeDeviceArray(rng.standard_normal(16).astype(np.float32))
    before = data.get()

    def kernel(src, dst):
        offs = tl.arange(0, 16)
        tl.store(dst + offs, tl.load(src + offs) * 2)
        tl.store(dst + offs, tl.load(src + offs) + 1)  # reads what the first store wrote

    interpret(kernel, (1,), (data, data), {})
    np.testing.assert_array_equal(data.get(), before * 2 + 1)


def test_read_only_array_cannot_be_stored_to():
    x = np.zeros(8, dtype=np.float32)
    x.flags.writeable = False

    def kernel(x_ptr):
        tl.store(x_ptr + tl.arange(0, 8), 2.0)

    with pytest.raises(LaunchError, match="read-only"):
        interpret(kernel, (1,), (x,), {})


def test_bad_builtin_arguments_are_compile_time_errors():
    def kernel(x_ptr):
        tl.load(x_ptr, mask=None, bogus=1)  # BAD-ARGS

    with pytest.raises(CompileTimeError, match="tl.load") as info:
        interpret(kernel, (1,), (np.zeros(4),), {})
    assert info.value.loc.line == _line_of(kernel, "BAD-ARGS")


def test_constexprs_by_name_between_runtime_arguments(rng):
    """The runtime passes runtime arguments positionally and constexprs by name, in any parameter order."""
    def kernel(x_ptr, BLOCK: tl.constexpr, out_ptr, n, SCALE: tl.constexpr = 3):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)

    x = rng.standard_normal(10).astype(np.float32)
    out = np.full(10, np.nan, dtype=np.float32)
    interpret(kernel, (1,), (x, out, 10), {"BLOCK": 16})
    np.testing.assert_array_equal(out, x * 3)
    with pytest.raises(LaunchError, match="positional"):
        interpret(kernel, (1,), (x, out, 10, 4, 5), {"BLOCK": 16})
