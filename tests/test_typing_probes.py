"""Typing probes: Triton 3.x's answer on the points where the compiler and the interpreter once differed.

There is one typing rule per builtin now (the interpreter runs the compiler's, `interpreter/eager.py`), so the
two printouts no longer test agreement of two implementations: they check that both entry points (building the
IR, and the eager builder with its conversions of interpreter values) reach Triton's answer. Each probe kernel
prints the dtype and shape of one result with `tl.static_print` (the compiler while building the IR, the
interpreter in program 0). Values the interpreter computes are checked against NumPy; on a GPU the compiled
kernels against the interpreter's values (the evaluations are still two: the CUDA lowering and NumPy).
"""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import DTypeError, ShapeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

SCALE = tl.constexpr(4)          # a module-level constexpr used in arithmetic inside kernels


def both_print(capsys, kernel, *args, **constexprs):
    """(what the compiler printed, what the interpreter printed) for one launch of `kernel` on one program."""
    kernel.ir(*args, **constexprs)
    compiled = capsys.readouterr().out
    kernel.interpret[(1,)](*args, **constexprs)
    interpreted = capsys.readouterr().out
    return compiled.strip(), interpreted.strip()


def both_raise(cls, kernel, *args, **constexprs):
    with pytest.raises(cls) as compiled:
        kernel.ir(*args, **constexprs)
    with pytest.raises(cls) as interpreted:
        kernel.interpret[(1,)](*args, **constexprs)
    return str(compiled.value), str(interpreted.value)


@transpiler.jit
def rank_broadcast_kernel(X, OUT, BLOCK: tl.constexpr):
    row = tl.arange(0, BLOCK)
    tile = row[:, None] * BLOCK + row[None, :]
    y = tl.load(X + row) + tile                     # [B] + [B, B]: the row gains a leading axis
    tl.static_print(y.dtype, y.shape)
    tl.store(OUT + tile, y)


def test_blocks_of_different_rank_broadcast_with_leading_axes(capsys):
    x = np.arange(8, dtype=np.float32) * 0.5
    out = np.full(64, np.nan, np.float32)
    compiled, interpreted = both_print(capsys, rank_broadcast_kernel, x, out, BLOCK=8)
    assert compiled == interpreted == "fp32 (8, 8)"
    expected = x[None, :] + np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(out.reshape(8, 8), expected)
    if nvrtc_available():
        compile_offline(rank_broadcast_kernel.cuda_source(x, out, BLOCK=8))


@transpiler.jit
def bool_sum_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    count = tl.sum(tl.load(X + offs) > 0, axis=0)
    tl.static_print(count.dtype)
    tl.store(OUT, count)


def test_sum_of_booleans_is_uint32_on_both_paths(capsys):
    x = np.array([1, -1, 2, 3, -5, 0, 7, 8], np.float32)
    out = np.zeros(1, np.int64)
    compiled, interpreted = both_print(capsys, bool_sum_kernel, x, out, BLOCK=8)
    assert compiled == interpreted == "uint32"
    assert out[0] == 5
    if nvrtc_available():
        compile_offline(bool_sum_kernel.cuda_source(x, out, BLOCK=8))


@transpiler.jit
def bool_parity_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    parity = tl.sum(tl.load(X + offs) > 0, axis=0, dtype=tl.int1)
    tl.static_print(parity.dtype)
    tl.store(OUT, parity.to(tl.int32))


@pytest.mark.parametrize("positives", [6, 7])
def test_sum_of_booleans_kept_in_int1_is_their_parity(capsys, positives):
    # tl.sum(..., dtype=tl.int1) adds in int1, which wraps modulo 2 (Triton's i1 addition), not saturating.
    x = -np.abs(np.random.default_rng(positives).standard_normal(64)).astype(np.float32) - 0.5
    x[np.random.default_rng(1).choice(64, positives, replace=False)] *= -1
    out = np.full(1, -3, np.int32)
    compiled, interpreted = both_print(capsys, bool_parity_kernel, x, out, BLOCK=64)
    assert compiled == interpreted == "int1"
    assert out[0] == positives % 2
    if nvrtc_available():
        compile_offline(bool_parity_kernel.cuda_source(x, out, BLOCK=64))


@transpiler.jit
def expand_dims_kernel(X, OUT, AXES: tl.constexpr, BLOCK: tl.constexpr):
    y = tl.expand_dims(tl.load(X + tl.arange(0, BLOCK)), AXES)
    tl.static_print(y.shape)
    tl.store(OUT + tl.arange(0, BLOCK), tl.reshape(y, (BLOCK,)))


@pytest.mark.parametrize("axes", [-3, 2, (0, 0), (0, -3), (1, -5, 0)])
def test_expand_dims_axes_out_of_range_or_repeated_raise_on_both_paths(axes):
    # Checked against the result's rank before normalizing: -3 on a 1-D block is not axis 1 (Triton refuses it).
    x = np.arange(16, dtype=np.float32)
    both_raise(ShapeError, expand_dims_kernel, x, np.zeros(16, np.float32), AXES=axes, BLOCK=16)


def test_expand_dims_with_negative_axes_in_range_agrees(capsys):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    compiled, interpreted = both_print(capsys, expand_dims_kernel, x, out, AXES=(-4, 2, -1), BLOCK=16)
    assert compiled == interpreted == "(1, 16, 1, 1)"
    np.testing.assert_array_equal(out, x)


@transpiler.jit
def keep_all_dims_kernel(X, OUT, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    total = tl.sum(tl.load(X + offs), axis=None, keep_dims=True)
    tl.static_print(total.shape)
    tl.store(OUT[None, None, :], total)          # a ':' past a scalar's rank changes nothing (as in Triton)


def test_reduction_over_all_axes_keeps_every_axis_and_extra_colons_are_ignored(capsys):
    x = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float32)
    out = np.full(1, np.nan, np.float32)
    compiled, interpreted = both_print(capsys, keep_all_dims_kernel, x, out, BM=4, BN=8)
    assert compiled == interpreted == "(1, 1)"
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)


@transpiler.jit
def bf16_argmax_kernel(X, VAL, IDX, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    value, index = tl.max(tl.load(X + offs).to(tl.bfloat16), axis=0, return_indices=True)
    tl.static_print(value.dtype, index.dtype)
    tl.store(VAL, value)
    tl.store(IDX, index)


def test_bf16_max_with_indices_reduces_as_fp32(capsys):
    x = np.array([0.5, 3.0, -2.0, 3.0, 1.0, 0.0, -7.0, 2.0], np.float32)
    val, idx = np.zeros(1, np.float32), np.zeros(1, np.int32)
    compiled, interpreted = both_print(capsys, bf16_argmax_kernel, x, val, idx, BLOCK=8)
    assert compiled == interpreted == "fp32 int32"
    assert (val[0], idx[0]) == (3.0, 1)
    if nvrtc_available():
        compile_offline(bf16_argmax_kernel.cuda_source(x, val, idx, BLOCK=8))


@transpiler.jit
def literal_kernel(X, OUT, BLOCK: tl.constexpr, LITERAL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.load(X + offs) + LITERAL)


@pytest.mark.parametrize("x_dtype,literal,phrase", [
    (np.int32, 2**40, "out of range for"),
    (np.int8, 1000, "out of range for"),
    (np.uint32, -1, "negative number -1"),
])
def test_integer_literal_that_does_not_fit_the_block_type_raises(x_dtype, literal, phrase):
    x, out = np.zeros(8, x_dtype), np.zeros(8, x_dtype)
    compiled, interpreted = both_raise(DTypeError, literal_kernel, x, out, BLOCK=8, LITERAL=literal)
    assert phrase in compiled and phrase in interpreted


def test_integer_literal_beyond_64_bits_is_a_dtype_error():
    x, out = np.zeros(8, np.int64), np.zeros(8, np.int64)
    compiled, interpreted = both_raise(DTypeError, literal_kernel, x, out, BLOCK=8, LITERAL=2**70)
    assert "does not fit in 64 bits" in compiled and "does not fit in 64 bits" in interpreted


@transpiler.jit
def int_mask_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.load(X + offs, mask=offs))


def test_non_boolean_mask_raises_on_both_paths():
    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    compiled, interpreted = both_raise(DTypeError, int_mask_kernel, x, out, BLOCK=8)
    assert "boolean" in compiled and "boolean" in interpreted


@transpiler.jit
def mask_broadcast_kernel(X, OUT, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    rows = tl.arange(0, 4)
    keep = (rows[:, None] + cols[None, :]) < BLOCK
    y = tl.load(X + cols, mask=keep, other=-1.0)     # [B] pointers under a [4, B] mask load a [4, B] block
    tl.static_print(y.dtype, y.shape)
    tl.store(OUT + rows[:, None] * BLOCK + cols[None, :], y)


def test_load_pointer_broadcasts_with_a_wider_mask(capsys):
    x = np.arange(8, dtype=np.float32)
    out = np.full(32, np.nan, np.float32)
    compiled, interpreted = both_print(capsys, mask_broadcast_kernel, x, out, BLOCK=8)
    assert compiled == interpreted == "fp32 (4, 8)"
    r, c = np.arange(4)[:, None], np.arange(8)[None, :]
    np.testing.assert_array_equal(out.reshape(4, 8), np.where(r + c < 8, x[None, :], -1.0))
    if nvrtc_available():
        compile_offline(mask_broadcast_kernel.cuda_source(x, out, BLOCK=8))


@transpiler.jit
def other_broadcast_kernel(X, OUT, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    rows = tl.arange(0, 4)
    fill = (rows[:, None] * 100 + cols[None, :]).to(tl.float32)
    y = tl.load(X + cols[None, :], mask=(cols < 5)[None, :], other=fill)  # `other` widens [1, B] pointers
    tl.static_print(y.shape)
    tl.store(OUT + rows[:, None] * BLOCK + cols[None, :], y)


def test_load_pointer_broadcasts_with_a_wider_other(capsys):
    x = np.arange(8, dtype=np.float32)
    out = np.full(32, np.nan, np.float32)
    compiled, interpreted = both_print(capsys, other_broadcast_kernel, x, out, BLOCK=8)
    assert compiled == interpreted == "(4, 8)"
    r, c = np.arange(4)[:, None], np.arange(8)[None, :]
    np.testing.assert_array_equal(out.reshape(4, 8), np.where(c < 5, x[None, :], r * 100 + c))


@transpiler.jit
def scalar_pointer_block_mask_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT, tl.load(X, mask=offs < 3))


@transpiler.jit
def mask_of_lower_rank_kernel(X, OUT, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    fill = tl.zeros((4, BLOCK), tl.float32)
    tl.store(OUT + cols, tl.sum(tl.load(X + cols, mask=cols < 5, other=fill), axis=0))


def test_mask_left_behind_by_a_wider_other_raises_on_both_paths():
    # The pointer widens to [4, B] through `other`; a mask of rank 1 no longer fits it (Triton's load op
    # requires one shape), so both paths refuse it instead of guessing.
    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    compiled, interpreted = both_raise(ShapeError, mask_of_lower_rank_kernel, x, out, BLOCK=8)
    assert "[8] to [4, 8]" in compiled and "[8] to [4, 8]" in interpreted     # one rule, one message


def test_block_mask_with_a_scalar_pointer_raises_on_both_paths():
    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    compiled, interpreted = both_raise(ShapeError, scalar_pointer_block_mask_kernel, x, out, BLOCK=8)
    assert "scalar pointer" in compiled and "scalar pointer" in interpreted


@transpiler.jit
def umulhi_kernel(A, B, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    hi = tl.umulhi(tl.load(A + offs), tl.load(B + offs))
    tl.static_print(hi.dtype)
    tl.store(OUT + offs, hi)


@pytest.mark.parametrize("np_dtype,bits", [(np.int32, 32), (np.uint32, 32), (np.int64, 64), (np.uint64, 64)])
def test_umulhi_is_the_high_half_of_the_unsigned_product(capsys, np_dtype, bits):
    rng = np.random.default_rng(bits)
    info = np.iinfo(np_dtype)
    a = rng.integers(info.min, info.max, 8, dtype=np_dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 8, dtype=np_dtype, endpoint=True)
    out = np.zeros(8, np_dtype)
    compiled, interpreted = both_print(capsys, umulhi_kernel, a, b, out, BLOCK=8)
    assert compiled == interpreted
    mod = 1 << bits
    expected = [((int(x) % mod) * (int(y) % mod)) >> bits for x, y in zip(a, b)]
    assert [int(v) % mod for v in out] == expected
    if nvrtc_available():
        compile_offline(umulhi_kernel.cuda_source(a, b, out, BLOCK=8))


@transpiler.jit
def signed_shift_kernel(A, S, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    shifted = tl.load(A + offs) >> tl.load(S + offs)
    tl.static_print(shifted.dtype)
    tl.store(OUT + offs, shifted)


def _signed_and_shift_amounts(np_dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(np_dtype)
    a = rng.integers(info.min, -1, 16, dtype=np_dtype, endpoint=True)       # negative: the sign bit is set
    a[::4] = rng.integers(1, info.max, 4, dtype=np_dtype)
    return a, rng.integers(0, 32, 16, dtype=np.uint32)


@pytest.mark.parametrize("np_dtype", [np.int8, np.int16, np.int32])
def test_right_shift_of_a_signed_block_by_unsigned_amounts_fills_with_the_sign(capsys, np_dtype):
    # int<N> >> uint32 computes in uint32 (the promotion) but shifts arithmetically, as the left block is signed.
    a, amounts = _signed_and_shift_amounts(np_dtype, np.dtype(np_dtype).itemsize)
    out = np.zeros(16, np.uint32)
    compiled, interpreted = both_print(capsys, signed_shift_kernel, a, amounts, out, BLOCK=16)
    assert compiled == interpreted == "uint32"
    assert [int(v) for v in out] == [(int(x) >> int(s)) % (1 << 32) for x, s in zip(a, amounts)]
    if nvrtc_available():
        compile_offline(signed_shift_kernel.cuda_source(a, amounts, out, BLOCK=16))


@transpiler.jit
def constexpr_arith_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK * SCALE // 4)
    tl.store(OUT + offs, tl.load(X + offs) * (SCALE + 1))


def test_module_level_constexpr_supports_arithmetic():
    assert SCALE * 2 == 8 and 2 * SCALE == 8 and -SCALE == -4 and SCALE // 3 == 1
    assert isinstance(SCALE + 1, tl.constexpr)
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    constexpr_arith_kernel.interpret[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, x * 5)
    constexpr_arith_kernel.ir(x, out, BLOCK=8)


def _probe_launches():
    rng = np.random.default_rng()
    i32 = np.iinfo(np.int32)
    ints = lambda dt: rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 8, dtype=dt, endpoint=True)  # noqa: E731
    x8 = rng.standard_normal(8).astype(np.float32)
    return {
        "rank_broadcast": (rank_broadcast_kernel, [x8, np.full(64, np.nan, np.float32)], dict(BLOCK=8)),
        "bool_sum": (bool_sum_kernel, [x8, np.full(1, -1, np.int64)], dict(BLOCK=8)),
        "bf16_argmax": (bf16_argmax_kernel, [x8, np.full(1, np.nan, np.float32), np.full(1, -1, np.int32)],
                        dict(BLOCK=8)),
        "mask_broadcast": (mask_broadcast_kernel, [x8, np.full(32, np.nan, np.float32)], dict(BLOCK=8)),
        "other_broadcast": (other_broadcast_kernel, [x8, np.full(32, np.nan, np.float32)], dict(BLOCK=8)),
        "umulhi_int32": (umulhi_kernel, [ints(np.int32), ints(np.int32), np.full(8, i32.min, np.int32)],
                         dict(BLOCK=8)),
        "umulhi_uint64": (umulhi_kernel, [ints(np.uint64), ints(np.uint64), np.zeros(8, np.uint64)], dict(BLOCK=8)),
        "umulhi_int64": (umulhi_kernel, [ints(np.int64), ints(np.int64), np.zeros(8, np.int64)], dict(BLOCK=8)),
        "bool_parity": (bool_parity_kernel, [rng.standard_normal(64).astype(np.float32), np.full(1, -3, np.int32)],
                        dict(BLOCK=64)),
        # small integers: the sum is exact in any order, so compiled and interpreted must agree bit for bit
        "keep_all_dims": (keep_all_dims_kernel, [rng.integers(-64, 64, 32).astype(np.float32),
                                                 np.full(1, np.nan, np.float32)], dict(BM=4, BN=8)),
        "signed_shift_int8": (signed_shift_kernel, [*_signed_and_shift_amounts(np.int8, rng.integers(99)),
                                                    np.zeros(16, np.uint32)], dict(BLOCK=16)),
        "signed_shift_int32": (signed_shift_kernel, [*_signed_and_shift_amounts(np.int32, rng.integers(99)),
                                                     np.zeros(16, np.uint32)], dict(BLOCK=16)),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(_probe_launches()))
def test_probe_compiled_on_gpu_equals_interpreted(name):
    import cupy
    kernel, args, constexprs = _probe_launches()[name]
    host = [a.copy() for a in args]
    kernel.interpret[(1,)](*host, **constexprs)
    device = [cupy.asarray(a) for a in args]
    kernel[(1,)](*device, **constexprs)
    for i, (d, h) in enumerate(zip(device, host)):
        np.testing.assert_array_equal(cupy.asnumpy(d), h, err_msg=f"{name}: argument {i}")


@transpiler.jit
def shape_list_kernel(XBLOCK: tl.constexpr):
    row = tl.arange(0, XBLOCK)[None, :]
    tl.static_assert(row.shape == [1, XBLOCK])           # Triton's shapes compare equal to lists
    tl.static_assert(row.shape != [XBLOCK, 1])


def test_shapes_compare_equal_to_lists_and_a_launch_without_arrays_interprets(monkeypatch):
    shape_list_kernel.ir(XBLOCK=16)
    monkeypatch.setenv("TRANSPILER_INTERPRET", "1")
    shape_list_kernel[(2,)](XBLOCK=16)                   # no array to tell the device: still the interpreter
    with pytest.raises(transpiler.CompileTimeError):
        shape_list_kernel[(1,)](XBLOCK=1)                # [1, 1] == [1, 1]: the != assertion fails


@transpiler.jit
def ellipsis_index_kernel(X, BLOCK: tl.constexpr):
    row = tl.arange(0, BLOCK)
    tl.store(X + row[..., None], 1.0)


def test_an_ellipsis_index_is_refused_as_triton_refuses_it_on_both_entry_points():
    """Triton's tensor.__getitem__ takes None and ':' only ("unsupported tensor index: Ellipsis"); the compiler
    accepted `...` until both entry points ran one indexing rule (parse/semantic_shapes.index)."""
    compiled, interpreted = both_raise(transpiler.UnsupportedSyntaxError, ellipsis_index_kernel,
                                       np.zeros(8, np.float32), BLOCK=8)
    assert "unsupported tensor index Ellipsis" in compiled and "not Triton's language" in compiled
    assert compiled.splitlines()[0] == interpreted.splitlines()[0]
