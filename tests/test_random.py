"""Random numbers on the CPU: the NumPy Philox against Random123's known answers, the interpreter against that
reference for every entry point, offset type and seed kind, the CUDA and PTX the compiler emits for them, and
the errors a wrong seed, counter or round count gives. The GPU side is tests/test_gpu_random.py.
"""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from random_kernels import (constexpr_seed_kernel, dropout_kernel, expected_columns, normal_kernel,
                            philox_impl_kernel, philox_kernel, philox_reference, randint4x_reference,
                            randint_kernel, random_offsets, scalar_offset_kernel, uniform_kernel,
                            uniform_reference, normal_reference)
from transpiler import CompileTimeError, DTypeError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

# Random123's tests/kat_vectors: (rounds, counter, key, result) for philox4x32 and philox4x64.
KNOWN_ANSWERS = {
    32: [
        (7, [0, 0, 0, 0], [0, 0], [0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48]),
        (7, [0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662]),
        (7, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
         [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a]),
        (10, [0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
        (10, [0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
        (10, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
         [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]),
    ],
    64: [
        (7, [0, 0, 0, 0], [0, 0],
         [0x5dc8ee6268ec62cd, 0x139bc570b6c125a0, 0x84d6deb4fb65f49e, 0xaff7583376d378c2]),
        (10, [0, 0, 0, 0], [0, 0],
         [0x16554d9eca36314c, 0xdb20fe9d672d0fdc, 0xd7e772cee186176b, 0x7e68b68aec7ba23b]),
        (10, [0xFFFFFFFFFFFFFFFF] * 4, [0xFFFFFFFFFFFFFFFF] * 2,
         [0x87b092c3013fe90b, 0x438c3c67be8d0224, 0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0]),
        (10, [0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0, 0x082efa98ec4e6c89],
         [0x452821e638d01377, 0xbe5466cf34e90c6c],
         [0xa528f45403e61d95, 0x38c72dbd566e9788, 0xa5a1610e72fd18b5, 0x57bd43b5e52b7fe6]),
    ],
}
KAT_CASES = [(bits, i) for bits, rows in KNOWN_ANSWERS.items() for i in range(len(rows))]
UNSIGNED = {32: np.uint32, 64: np.uint64}


@pytest.fixture
def rng():
    return np.random.default_rng(20260)


def poisoned(shape, np_dtype):
    return np.full(shape, np.nan if np.dtype(np_dtype).kind == "f" else 0x5A5A5A5A, dtype=np_dtype)


def blocks(n, block):
    return (-(-n // block),)


# ---- the reference itself ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bits,index", KAT_CASES)
def test_reference_philox_gives_random123s_known_answers(bits, index):
    rounds, counter, key, expected = KNOWN_ANSWERS[bits][index]
    got = philox_reference([counter], [key], rounds, bits)
    assert got.tolist() == [expected]


def test_reference_uniform_folds_the_sign_and_stays_below_one():
    words = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x12345678], np.uint32)
    u = uniform_reference(words)
    # 0x80000000 is -2**31 as int32 and folds to 2**31 - 1, the largest value; 0xFFFFFFFF (-1) folds to 0.
    assert u[0] == 0 and u[4] == 0 and u[2] == u[3] == u.max() and u.max() < 1
    assert u[1] == np.float32(4.6566127342e-10) and 0 < u[5] < 1


# ---- philox_impl and philox under the interpreter ------------------------------------------------------------


@pytest.mark.parametrize("bits,index", KAT_CASES)
def test_philox_impl_interpreted_gives_the_known_answers(bits, index):
    rounds, counter, key, expected = KNOWN_ANSWERS[bits][index]
    dt = UNSIGNED[bits]
    out = poisoned((1, 4), dt)
    philox_impl_kernel.interpret[(1,)](np.array([counter], dt), np.array([key], dt), out, 1, N_ROUNDS=rounds,
                                       BLOCK=2)
    assert out.tolist() == [expected]


@pytest.mark.parametrize("np_dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_philox_interpreted_keys_counters_of_any_sign_by_the_seed(rng, np_dtype):
    n, seed = 100, int(rng.integers(-2**62, 2**62))
    counters = random_offsets(rng, 4 * n, np_dtype).reshape(n, 4)
    bits = np.dtype(np_dtype).itemsize * 8
    out = poisoned((n, 4), UNSIGNED[bits])
    philox_kernel.interpret[blocks(n, 64)](counters, out, seed, n, BLOCK=64)
    seed &= 0xFFFFFFFFFFFFFFFF
    # 32-bit counters take the seed's two halves as key; 64-bit counters take the whole seed and 0.
    key = (seed & 0xFFFFFFFF, seed >> 32) if bits == 32 else (seed, 0)
    expected = philox_reference(counters.astype(UNSIGNED[bits]), [key] * n, 10, bits)
    np.testing.assert_array_equal(out, expected)


# ---- randint / rand / randn and their 4x forms under the interpreter ----------------------------------------


KERNELS = {"randint": (randint_kernel, np.uint32), "uniform": (uniform_kernel, np.float32),
           "normal": (normal_kernel, np.float32)}


def run_columns(kind, offsets, seed, n_rounds=10, block=128):
    kernel, out_dtype = KERNELS[kind]
    n = offsets.size
    out = poisoned((n, 5), out_dtype)
    kernel.interpret[blocks(n, block)](offsets, out, seed, n, N_ROUNDS=n_rounds, BLOCK=block)
    return out


def assert_columns(kind, got, expected):
    if kind == "normal":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", ["randint", "uniform", "normal"])
@pytest.mark.parametrize("np_dtype", [np.int8, np.int16, np.int32, np.int64, np.uint32, np.uint64])
def test_interpreted_numbers_match_numpy_for_each_offset_type(rng, kind, np_dtype):
    offsets, seed = random_offsets(rng, 300, np_dtype), int(rng.integers(-2**31, 2**31))
    assert_columns(kind, run_columns(kind, offsets, seed), expected_columns(kind, seed, offsets))


@pytest.mark.parametrize("seed", [0, 1, -1, 2**31 - 1, -2**31, 2**32 + 5, -2**40 - 3, 2**63 - 1, 2**64 - 1],
                         ids=lambda s: f"seed{s}")
def test_interpreted_randint_matches_numpy_for_each_seed_kind(rng, seed):
    offsets = random_offsets(rng, 200, np.int64)
    assert_columns("randint", run_columns("randint", offsets, seed), expected_columns("randint", seed, offsets))


@pytest.mark.parametrize("n_rounds", [1, 7, 12])
def test_interpreted_round_count_is_honoured(rng, n_rounds):
    offsets, seed = random_offsets(rng, 100, np.int32), 42
    got = run_columns("randint", offsets, seed, n_rounds)
    assert_columns("randint", got, expected_columns("randint", seed, offsets, n_rounds))
    assert not np.array_equal(got, expected_columns("randint", seed, offsets, 10))


def test_interpreted_scalar_offsets_match_numpy():
    n, seed = 37, 2**33 + 11
    bits, uniform, normal = poisoned(n, np.uint32), poisoned(n, np.float32), poisoned(n, np.float32)
    scalar_offset_kernel.interpret[(n,)](bits, uniform, normal, seed)
    words = randint4x_reference(seed, np.arange(n, dtype=np.int32))
    np.testing.assert_array_equal(bits, words[:, 0])
    np.testing.assert_array_equal(uniform, uniform_reference(words[:, 0]))
    u = uniform_reference(words)
    np.testing.assert_allclose(normal, normal_reference(u[:, 0], u[:, 1])[0], rtol=1e-5, atol=1e-6)


def test_interpreted_constexpr_seed_matches_numpy():
    n = 300
    out = poisoned(n, np.float32)
    constexpr_seed_kernel.interpret[blocks(n, 128)](out, n, SEED=987654321, BLOCK=128)
    np.testing.assert_array_equal(out, uniform_reference(randint4x_reference(987654321, np.arange(n))[:, 0]))


def test_interpreted_dropout_matches_numpy(rng):
    n, p, seed = 5000, 0.25, 1234
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    dropout_kernel.interpret[blocks(n, 1024)](x, out, n, p, seed, BLOCK=1024)
    keep = uniform_reference(randint4x_reference(seed, np.arange(n, dtype=np.int32))[:, 0]) > np.float32(p)
    assert 0.7 < keep.mean() < 0.8
    np.testing.assert_array_equal(out == 0, ~keep)
    np.testing.assert_allclose(out[keep], x[keep] / np.float32(1 - np.float32(p)), rtol=1e-6)


def test_different_seeds_and_offsets_give_different_streams():
    offsets = np.arange(256, dtype=np.int32)
    a, b = run_columns("randint", offsets, 1), run_columns("randint", offsets, 2)
    assert (a != b).mean() > 0.99
    assert len(np.unique(a[:, 1:])) > 0.99 * a[:, 1:].size


# ---- what the compiler emits ---------------------------------------------------------------------------------


def test_generated_cuda_is_philox_on_unsigned_words():
    offsets = np.arange(100, dtype=np.int64)
    src = randint_kernel.cuda_source(offsets, poisoned((100, 5), np.uint32), -5, 100, N_ROUNDS=10, BLOCK=128)
    body = src[src.index("__global__"):]
    assert "tp::mulhi(3528531795u, " in body and "tp::mulhi(3449720151u, " in body   # the round multipliers
    assert "+ 2654435769u" in body and "+ 3144134277u" in body                         # the key increments
    assert "unsigned long long" in body and ">> 32" in body     # int64 offsets: the high word is a counter
    # Two Philox calls (randint, randint4x) of ten rounds, nine key bumps each: the bump after the last round
    # is never read, so it is not emitted.
    assert body.count("+ 2654435769u") == 18


@transpiler.jit
def scalar_randint_kernel(OUT, seed):
    pid = tl.program_id(0)
    tl.store(OUT + pid, tl.randint(seed, pid))


def test_unused_philox_words_of_a_scalar_offset_are_not_emitted():
    src = scalar_randint_kernel.cuda_source(poisoned(4, np.uint32), 7)
    body = src[src.index("__global__"):]
    # Scalars are emitted in program order, unless nothing reads them. randint reads only word 0 of the last
    # round, so of the 20 high and 20 low products of ten rounds, the ones feeding other words are dropped,
    # and the first round's low product of the constant word 0 is folded.
    assert body.count("tp::mulhi(") == 18
    assert body.count("3528531795u *") + body.count("3449720151u *") == 15


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("bits", [32, 64])
def test_philox_ptx_multiplies_high_and_low_halves(arch, bits):
    dt = UNSIGNED[bits]
    src = philox_impl_kernel.cuda_source(np.zeros((8, 4), dt), np.zeros((8, 2), dt), np.zeros((8, 4), dt), 8,
                                         N_ROUNDS=10, BLOCK=8)
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0 and not result.warnings, result.log
    assert result.ptx.count(f"mul.hi.u{bits}") >= 20    # two high halves per round, ten rounds
    assert re.search(rf"mul\.lo\.[su]{bits}\b", result.ptx)    # and the low halves


@needs_nvrtc
def test_uniform_ptx_converts_signed_words_and_scales():
    src = uniform_kernel.cuda_source(np.zeros(8, np.int32), np.zeros((8, 5), np.float32), 3, 8, N_ROUNDS=10,
                                     BLOCK=8)
    ptx = compile_offline(src, "sm_90a").ptx
    assert "cvt.rn.f32.s32" in ptx and "mul.hi.u32" in ptx
    assert "0f2FFFFFFF" in ptx      # 4.6566127342e-10 as float32: one ulp below 2**-31


# ---- errors --------------------------------------------------------------------------------------------------


@transpiler.jit
def float_seed_kernel(OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.rand(1.5, offs))


@transpiler.jit
def int_counter_kernel(OUT, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    r0, r1, r2, r3 = tl.philox_impl(c, c, c, c, 1, 2)
    tl.store(OUT + c, r0)


@transpiler.jit
def float_uniform_kernel(OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.uint_to_uniform_float(offs.to(tl.float32)))


@transpiler.jit
def mixed_width_counter_kernel(OUT, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    r0, r1, r2, r3 = tl.philox(7, c, c.to(tl.int64), c, c)
    tl.store(OUT + c, r0)


@transpiler.jit
def runtime_rounds_kernel(OUT, R, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.randint(7, offs, R))


@pytest.mark.parametrize("kernel,args,cls,phrase", [
    (float_seed_kernel, (), CompileTimeError, "the seed of a random stream must be an integer"),
    (int_counter_kernel, (), CompileTimeError, "philox_impl needs uint32 or uint64 counters"),
    (float_uniform_kernel, (), CompileTimeError, "uint_to_uniform_float needs 32- or 64-bit integers"),
    (mixed_width_counter_kernel, (), DTypeError, "bitcast needs equal widths"),
    # As in Triton, a runtime n_rounds reaches randint (its annotation constrains nothing) and fails where the
    # rounds are unrolled.
    (runtime_rounds_kernel, (3,), CompileTimeError, "tl.static_range's bounds must be a compile-time constant"),
], ids=["float_seed", "int32_counters", "float_bits", "mixed_widths", "runtime_rounds"])
def test_misuse_is_a_compile_error_at_the_kernel_line(kernel, args, cls, phrase):
    out = np.zeros(16, np.float32)
    with pytest.raises(cls) as info:
        kernel.cuda_source(out, *args, BLOCK=16)
    assert phrase in str(info.value)
    assert f"(in {kernel.fn.__name__})" in str(info.value)    # the call chain ends at the kernel's line


@pytest.mark.parametrize("kernel,phrase", [
    (float_seed_kernel, "the seed of a random stream must be an integer"),
    (int_counter_kernel, "philox_impl needs uint32 or uint64 counters"),
    (float_uniform_kernel, "uint_to_uniform_float needs 32- or 64-bit integers"),
], ids=["float_seed", "int32_counters", "float_bits"])
def test_misuse_is_the_same_error_under_the_interpreter(kernel, phrase):
    with pytest.raises(CompileTimeError, match=phrase):
        kernel.interpret[(1,)](np.zeros(16, np.float32), BLOCK=16)


# ---- front-end pieces the random functions rely on -----------------------------------------------------------


@transpiler.jit
def to_tensor_types_kernel(X, OUT, BLOCK: tl.constexpr):
    tl.static_assert(tl.core.to_tensor(5).dtype == tl.int32)
    tl.static_assert(tl.core.to_tensor(2**31).dtype == tl.uint32)
    tl.static_assert(tl.core.to_tensor(2**40).dtype == tl.int64)
    tl.static_assert(tl.core.to_tensor(1.5).dtype == tl.float32)
    tl.static_assert(X.dtype.element_ty.is_fp16() and not X.dtype.element_ty.is_int())
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.static_assert(x.dtype.is_floating() and x.dtype.primitive_bitwidth == 16)
    tl.store(OUT + offs, x.to(tl.float32) * tl.core.to_tensor(3))


@pytest.mark.parametrize("path", ["compiled", "interpreted"])
def test_to_tensor_and_dtype_predicates_in_kernels(path):
    x = np.arange(8, dtype=np.float16)
    out = poisoned(8, np.float32)
    if path == "compiled":
        # A typed int32 scalar (the static_asserts check its type), converted to fp32 at compile time: exact.
        assert "cvt[0] * 3.0f" in to_tensor_types_kernel.cuda_source(x, out, BLOCK=8)    # one register
    else:
        to_tensor_types_kernel.interpret[(1,)](x, out, BLOCK=8)
        np.testing.assert_array_equal(out, np.arange(8) * 3.0)


# ---- the same kernel file under Triton ---------------------------------------------------------------------

TRITON_SIGNATURES = {
    "dropout_kernel": ({"X": "*fp32", "OUT": "*fp32", "N": "i32", "p": "fp32", "seed": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": 1024}, lambda k: k.cuda_source(np.zeros(8, np.float32), np.zeros(8, np.float32), 8,
                                                               0.5, 3, BLOCK=1024)),
    "scalar_offset_kernel": ({"BITS": "*i32", "UNIFORM": "*fp32", "NORMAL": "*fp32", "seed": "i64"}, {},
                             lambda k: k.cuda_source(np.zeros(8, np.int32), np.zeros(8, np.float32),
                                                     np.zeros(8, np.float32), 2**40)),
}


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(TRITON_SIGNATURES))
def test_triton_compiles_the_same_file_to_as_many_high_multiplies(name):
    """The kernel file is plain Triton (bench/twins.py loads it with `transpiler` standing for Triton), and
    both compilers' PTX computes Philox with the same number of mul.hi.u32 (Triton shares one Philox call
    among randint, rand and randn of one offset; NVRTC merges our three the same way)."""
    triton = pytest.importorskip("triton")
    from pathlib import Path

    from bench.twins import load
    from triton.backends.compiler import GPUTarget
    import random_kernels
    signature, constexprs, ours = TRITON_SIGNATURES[name]
    twin = load(Path(random_kernels.__file__), "triton")
    theirs = triton.compile(triton.compiler.ASTSource(getattr(twin, name), signature, constexprs),
                            target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    mine = compile_offline(ours(getattr(random_kernels, name)), "sm_90a").ptx
    assert mine.count("mul.hi.u32") == theirs.count("mul.hi.u32") > 0


@transpiler.jit
def block_seed_kernel(SEEDS, OUT, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(OUT + i, tl.randint(tl.load(SEEDS + i), i))


def test_a_block_of_seeds_gives_one_stream_per_element():
    seeds = np.array([1, -5, 2**40, 7, 0, -2**63, 2**62, 3], np.int64)
    out = poisoned(8, np.uint32)
    block_seed_kernel.interpret[(1,)](seeds, out, BLOCK=8)
    expected = [randint4x_reference(int(s), np.array([i], np.int32))[0, 0] for i, s in enumerate(seeds)]
    np.testing.assert_array_equal(out, expected)


def test_star_import_leaves_the_standard_random_module_alone():
    namespace = {}
    exec("import random\nfrom transpiler.language import *", namespace)
    assert namespace["random"].__name__ == "random" and namespace["rand"] is tl.rand
