"""Pointers and memory access, block construction, shape operations and tl.dot."""
import inspect

import numpy as np
import pytest

import transpiler.language as tl
from interp_harness import poisoned, run_block, run_unary
from transpiler.errors import CompileTimeError, DTypeError, ShapeError, UnsupportedSyntaxError
from transpiler.interpreter import interpret
from transpiler.interpreter.registry import all_rules
from transpiler.language import core

F64 = np.float64


# ---- loads and stores -------------------------------------------------------------------------------------


def test_masked_load_other_is_cast_and_broadcast(rng):
    x = rng.integers(-100, 100, 16).astype(np.int16)
    out = poisoned(16, np.int16)

    def kernel(x_ptr, out_ptr):
        r = tl.arange(0, 4)
        offs = r[:, None] * 4 + r[None, :]
        other = tl.full((1, 4), 7.9, tl.float32)  # broadcast over rows, cast (truncated) to int16
        tile = tl.load(x_ptr + offs, mask=r[:, None] < 2, other=other)
        tl.store(out_ptr + offs, tile)

    interpret(kernel, (1,), (x, out), {})
    np.testing.assert_array_equal(out, np.concatenate([x[:8], np.full(8, 7, np.int16)]))


def test_load_broadcasts_the_pointer_with_mask_and_other(rng):
    """tl.load broadcasts pointer and mask both ways (Triton's broadcast_impl_value); store does not."""
    x = rng.standard_normal(8).astype(np.float32)
    out = poisoned(32, np.float32)
    sink = []

    def kernel(x_ptr, out_ptr):
        cols = tl.arange(0, 8)
        rows = tl.arange(0, 4)
        row_ptrs = x_ptr + cols[None, :]  # shape (1, 8)
        tile = tl.load(row_ptrs, mask=rows[:, None] < 3, other=rows[:, None].to(tl.float32) * 100)
        sink.append(tile.shape)
        tl.store(out_ptr + rows[:, None] * 8 + cols[None, :], tile)

    interpret(kernel, (1,), (x, out), {})
    assert sink == [(4, 8)]
    np.testing.assert_array_equal(out.reshape(4, 8), np.vstack([x, x, x, np.full(8, 300, np.float32)]))

    def store_kernel(out_ptr):
        cols = tl.arange(0, 8)
        tl.store(out_ptr + cols[None, :], tl.zeros((4, 8), tl.float32))

    with pytest.raises(ShapeError, match=r"\[4, 8\].*\[1, 8\]"):
        interpret(store_kernel, (1,), (out,), {})


def test_masked_load_without_other_gives_zero(rng):
    x = rng.standard_normal(8).astype(np.float32) + 10
    out, _ = run_unary(lambda a: a, x[:5], np.float32)  # harness loads 8 lanes, 3 masked off
    np.testing.assert_array_equal(out, x[:5])

    def kernel(x_ptr, out_ptr):
        offs = tl.arange(0, 8)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < 3))

    out = poisoned(8, np.float32)
    interpret(kernel, (1,), (x, out), {})
    np.testing.assert_array_equal(out, np.concatenate([x[:3], np.zeros(5, np.float32)]))


def test_scalar_pointer_load_store_and_pointer_minus_int(rng):
    x = rng.standard_normal(4).astype(np.float32)
    out = poisoned(4, np.float32)

    def kernel(x_ptr, out_ptr):
        last = out_ptr + 3
        value = tl.load(x_ptr + 1)
        tl.store(last - 3, value * 2)
        tl.store(last, tl.load(x_ptr))

    interpret(kernel, (1,), (x, out), {})
    assert out[0] == x[1] * 2 and out[3] == x[0] and np.isnan(out[1:3]).all()


def test_store_casts_values_and_broadcasts_scalars(rng):
    out_i = poisoned(8, np.int32)
    out_f = poisoned(8, np.float16)

    def kernel(i_ptr, f_ptr):
        offs = tl.arange(0, 8)
        tl.store(i_ptr + offs, offs.to(tl.float32) * -1.5)  # float -> int truncates toward zero
        tl.store(f_ptr + offs, 0.1)

    interpret(kernel, (1,), (out_i, out_f), {})
    np.testing.assert_array_equal(out_i, np.trunc(np.arange(8) * -1.5).astype(np.int32))
    np.testing.assert_array_equal(out_f, np.full(8, np.float16(0.1)))


def test_duplicate_store_offsets_last_lane_wins():
    out = poisoned(2, np.int32)

    def kernel(out_ptr):
        offs = tl.arange(0, 8)
        tl.store(out_ptr + offs % 2, offs)

    interpret(kernel, (1,), (out,), {})
    np.testing.assert_array_equal(out, [6, 7])


def test_pointer_type_errors():
    def float_offset(x_ptr):
        tl.load(x_ptr + 1.5)

    def store_pointer(x_ptr):
        tl.store(x_ptr, x_ptr + 1)

    def int_mask(x_ptr):
        tl.load(x_ptr + tl.arange(0, 4), mask=tl.arange(0, 4))

    def load_number(x_ptr):
        tl.load(tl.arange(0, 4))

    def multiply_pointer(x_ptr):
        x_ptr * 2

    x = np.zeros(8, np.float32)
    for kernel, message in [(float_offset, "integer offset"), (store_pointer, "cannot store pointers"),
                            (int_mask, "int1"), (load_number, "needs a pointer"), (multiply_pointer, "not defined on pointers")]:
        with pytest.raises(DTypeError, match=message):
            interpret(kernel, (1,), (x,), {})


def test_block_value_through_scalar_pointer_is_a_shape_error():
    def kernel(x_ptr):
        tl.store(x_ptr, tl.arange(0, 4))

    with pytest.raises(ShapeError, match="scalar pointer"):
        interpret(kernel, (1,), (np.zeros(4, np.int32),), {})


def test_bool_and_bf16_buffers(rng):
    flags = rng.random(8) > 0.5
    out = np.zeros(8, dtype=np.bool_)

    def kernel(in_ptr, out_ptr):
        offs = tl.arange(0, 8)
        tl.store(out_ptr + offs, ~tl.load(in_ptr + offs))

    interpret(kernel, (1,), (flags, out), {})
    np.testing.assert_array_equal(out, ~flags)


def test_torch_bf16_round_trip_if_available(rng):
    torch = pytest.importorskip("torch")
    x = torch.tensor(rng.standard_normal(8), dtype=torch.bfloat16)
    out = torch.full((8,), float("nan"), dtype=torch.bfloat16)

    def kernel(x_ptr, out_ptr):
        offs = tl.arange(0, 8)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)

    interpret(kernel, (1,), (x, out), {})
    assert torch.equal(out, x * 2)


# ---- construction -----------------------------------------------------------------------------------------


def test_full_zeros_and_likes():
    values, _, sink = run_block(lambda b: tl.full((4, 8), 3, tl.int16) + tl.zeros_like(b), np.ones((4, 8), np.int16),
                                np.int16)
    assert sink == [(tl.int16, (4, 8))] and (values == 3).all()
    values, _, sink = run_block(lambda b: tl.full_like(b, 2.5) + tl.zeros([8], dtype=tl.float32), np.ones(8, np.int32),
                                np.float32)
    assert sink == [(tl.float32, (8,))] and (values == 2).all()  # full_like keeps int32: 2.5 -> 2
    values, _, sink = run_block(lambda b: tl.full_like(b, 2.5, dtype=tl.float16), np.ones(8, np.int32), np.float16)
    assert sink == [(tl.float16, (8,))] and (values == 2.5).all()


def test_arange_and_block_shapes_must_be_powers_of_two():
    def kernel(N: tl.constexpr):
        tl.arange(0, N)

    with pytest.raises(CompileTimeError, match="power of two"):
        interpret(kernel, (1,), (), {"N": 12})
    with pytest.raises(CompileTimeError, match="powers of two"):
        run_block(lambda b: tl.zeros((4, 6), tl.float32), np.ones(4, np.float32), np.float32)

    def runtime_bound(n):
        tl.arange(0, n)

    with pytest.raises(CompileTimeError, match="constexpr"):
        interpret(runtime_bound, (1,), (16,), {})


def test_arange_with_offset_start():
    values, _, sink = run_block(lambda b: tl.arange(8, 16) + b, np.zeros(8, np.int32), np.int32)
    assert sink == [(tl.int32, (8,))]
    np.testing.assert_array_equal(values, np.arange(8, 16))


# ---- shape operations -------------------------------------------------------------------------------------


def test_indexing_expand_broadcast_reshape_permute(rng):
    x = rng.integers(-50, 50, (4, 8)).astype(np.int32)
    cases = [
        (lambda b: tl.sum(b, axis=0)[None, :] + b, x.sum(0)[None, :] + x),
        (lambda b: tl.expand_dims(tl.sum(b, 1), 1) * b, x.sum(1)[:, None] * x),
        (lambda b: tl.broadcast_to(tl.max(b, 0)[None, :], (4, 8)), np.broadcast_to(x.max(0), (4, 8))),
        (lambda b: b.reshape(8, 4), x.reshape(8, 4)),
        (lambda b: tl.view(b, (2, 16)), x.reshape(2, 16)),
        (lambda b: tl.trans(b), x.T),
        (lambda b: b.permute(1, 0), x.T),
        (lambda b: tl.reshape(b, 32), x.reshape(32)),
        (lambda b: tl.broadcast(b, tl.sum(b, 1)[:, None])[1], np.broadcast_to(x.sum(1)[:, None], (4, 8))),
        (lambda b: tl.expand_dims(b, (0, -1)).reshape(4, 8), x),
    ]
    for op, expected in cases:
        values, _, sink = run_block(op, x, np.int32)
        assert sink[0] == (tl.int32, expected.shape)
        np.testing.assert_array_equal(values, expected)


def test_shape_errors():
    bad = [
        (lambda b: tl.reshape(b, (4, 4)), ShapeError, r"\[4, 8\].*\[4, 4\]"),
        (lambda b: tl.broadcast_to(b, (8, 8)), ShapeError, r"\[4, 8\].*\[8, 8\]"),
        (lambda b: tl.broadcast_to(b, (2, 4, 8)), ShapeError, r"\[4, 8\] to \[2, 4, 8\]"),
        (lambda b: tl.permute(b, (0, 0)), ShapeError, "permutation"),
        (lambda b: tl.expand_dims(b, 3), ShapeError, "axis 3"),
        (lambda b: b[0], UnsupportedSyntaxError, "index"),
        (lambda b: b[:, :, :, None], ShapeError, "past the rank"),   # a ':' past the rank is ignored, a None is not
    ]
    for op, cls, message in bad:
        with pytest.raises(cls, match=message):
            run_block(op, np.ones((4, 8), np.float32), np.float32)


# ---- tl.dot -----------------------------------------------------------------------------------------------


def _tf32(values):
    """float32 values rounded to tf32 (10 mantissa bits, nearest, ties away from zero)."""
    mantissa, exponent = np.frexp(values.astype(F64))
    scaled = mantissa * 2048.0
    return np.ldexp(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) / 2048.0, exponent)


def _run_dot(a, b, out_dtype, **options):
    m, k = a.shape
    n = b.shape[1]
    out, sink = poisoned(m * n, out_dtype).reshape(m, n), []

    def kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, OPTIONS: tl.constexpr,
               ACC: tl.constexpr):
        rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
        x = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        y = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        acc = tl.full((M, N), 1, ACC) if ACC is not None else None
        c = tl.dot(x, y, acc, **OPTIONS)
        sink.append(c.dtype)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)

    acc = options.pop("acc", None)
    interpret(kernel, (1,), (a, b, out), {"M": m, "N": n, "K": k, "OPTIONS": options, "ACC": acc})
    return out, sink[0]


def test_dot_fp16_and_bf16_give_fp32(rng):
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    out, dtype = _run_dot(a, b, np.float32)
    assert dtype is tl.float32
    np.testing.assert_allclose(out, a.astype(F64) @ b.astype(F64), rtol=1e-6, atol=1e-6)


def test_dot_fp32_tf32_by_default_and_ieee_on_request(rng):
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    exact = a.astype(F64) @ b.astype(F64)
    tf32 = _tf32(a) @ _tf32(b)
    out, _ = _run_dot(a, b, np.float32)
    np.testing.assert_allclose(out, tf32, rtol=1e-6, atol=1e-6)
    assert np.abs(out - exact).max() > 1e-4  # really rounded to tf32
    for options in ({"input_precision": "ieee"}, {"allow_tf32": False}):
        out, _ = _run_dot(a, b, np.float32, **options)
        np.testing.assert_allclose(out, exact, rtol=1e-6, atol=1e-6)


def test_dot_int8_gives_int32_and_acc_is_added(rng):
    a = rng.integers(-128, 127, (16, 64)).astype(np.int8)
    b = rng.integers(-128, 127, (64, 16)).astype(np.int8)
    out, dtype = _run_dot(a, b, np.int32, acc=tl.int32)
    assert dtype is tl.int32
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64) + 1)


def test_dot_errors(rng):
    small = rng.standard_normal((16, 8)).astype(np.float16)       # K = 8: M and N may be small, K may not
    with pytest.raises(ShapeError, match="K of at least 16"):
        _run_dot(small, small.T.copy(), np.float32)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    with pytest.raises(DTypeError, match="acc"):
        _run_dot(a, a, np.float32, acc=tl.float16)
    with pytest.raises(CompileTimeError, match="input_precision"):
        _run_dot(a.astype(np.float32), a.astype(np.float32), np.float32, input_precision="fast")


# ---- every builtin has a rule with its signature ----------------------------------------------------------


def test_every_builtin_has_a_rule_with_the_same_signature():
    rules = all_rules()
    assert set(core.BUILTINS) <= set(rules), set(core.BUILTINS) - set(rules)
    for name, builtin in core.BUILTINS.items():
        declared = inspect.signature(builtin)
        implemented = inspect.signature(rules[name])
        assert [(p.name, p.kind, p.default) for p in declared.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in implemented.parameters.values()], name
