"""Block pointers on the CPU: the interpreter against NumPy, NVRTC compiles without spills, what the front end
makes of them (ordinary masked pointer blocks, only the advancing offsets carried through loops and ifs, unit
strides folded so loads vectorize, the matmul pipelined on tensor cores), and the errors for their misuse on
both paths."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler import CompileTimeError, DTypeError, NameResolutionError, ShapeError, TranspilerError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

from block_ptr_kernels import (all_cases, bp_copy_kernel, bp_matmul_kernel, bp_row_sums_kernel, bp_shift_kernel,
                               bp_transpose_kernel)
from feature_kernels import check

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
CASES = all_cases(np.random.default_rng(3))
F32, F16 = transpiler.StandIn(tl.float32), transpiler.StandIn(tl.float16)


def ops_of(ir, name, fn=None):
    return [op for op in ir.walk() if op.name == name and (fn is None or op.attrs.get("fn") == fn)]


# ---- results ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_block_pointer_kernel_interpreted_matches_numpy(name, case):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    case["kernel"].interpret[case["grid"]](*args, num_warps=case.get("num_warps", 4), **case["constexprs"])
    check(case, args)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_block_pointer_kernel_compiles_without_spills(name, case, arch):
    src = case["kernel"].cuda_source(*case["args"], num_warps=case.get("num_warps", 4), **case["constexprs"])
    result = compile_offline(src, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


# ---- what a block pointer becomes ---------------------------------------------------------------------------

def test_a_load_becomes_a_masked_pointer_block_and_the_unit_stride_is_not_multiplied():
    ir = bp_copy_kernel.ir(F32, F32, 70, 208, 208, 1, 208, 1, BM=32, BN=64)
    (load,) = ops_of(ir, "load")
    assert len(load.operands) == 3 and load.operands[1].dtype is tl.int1    # pointers, mask, other
    assert load.result.shape == (32, 64)
    # stride_xn and stride_yn are specialized to 1: one product per access, for dimension 0's stride only
    assert len(ops_of(ir, "elementwise", "mul")) == 2 + 4                   # + the four pid * BLOCK offsets
    # offsets come from program ids, so both bounds are compared, per checked dimension
    assert len(ops_of(ir, "elementwise", "ge")) == 4 and len(ops_of(ir, "elementwise", "lt")) == 4


def test_constant_offsets_inside_a_constant_shape_need_no_mask():
    @transpiler.jit
    def tile_kernel(X, Y, BM: tl.constexpr, BN: tl.constexpr):
        src = tl.make_block_ptr(X, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
        dst = tl.make_block_ptr(Y, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
        tl.store(dst, tl.load(src, boundary_check=(0, 1), padding_option="zero") * 2, boundary_check=(0, 1))

    ir = tile_kernel.ir(F32, F32, BM=16, BN=32)
    (load,) = ops_of(ir, "load")
    (store,) = ops_of(ir, "store")
    assert len(load.operands) == 1 and len(store.operands) == 2
    assert not ops_of(ir, "elementwise", "lt") and not ops_of(ir, "elementwise", "ge")
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    y = np.full_like(x, np.nan)
    tile_kernel.interpret[(1,)](x, y, BM=16, BN=32)
    np.testing.assert_array_equal(y, 2 * x)


def test_the_loop_carries_only_the_offsets_that_advance():
    ir = bp_matmul_kernel.ir(F16, F16, F16, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1,
                             BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, B_ORDER=(1, 0))
    (loop,) = ops_of(ir, "for")
    assert [r.name for r in loop.results] == ["acc", "a_block_offset1", "b_block_offset0"]
    assert [r.type for r in loop.results[1:]] == [transpiler.parse.ir.Type(tl.int32)] * 2


def test_the_row_sums_loop_carries_one_offset_and_vectorizes():
    variant = bp_row_sums_kernel.compiled_variant(F32, F32, 1000, 4096, 4096, BM=16, BN=128)
    ir = bp_row_sums_kernel.ir(F32, F32, 1000, 4096, 4096, BM=16, BN=128)
    (loop,) = ops_of(ir, "for")
    assert [r.name for r in loop.results] == ["acc", "block_offset1"]
    assert "tp::wrap_add<int>(block_offset1, 128)" in variant.source        # the advance, in int32 (wrapping)
    assert "16 bytes" in bp_row_sums_kernel.analysis(F32, F32, 1000, 4096, 4096, BM=16, BN=128)[1].decisions.report()


def test_a_runtime_if_merges_only_the_offset_it_changes():
    ir = bp_shift_kernel.ir(F32, F32, 1000, -5, BLOCK=128)
    (branch,) = ops_of(ir, "if")
    assert [r.name for r in branch.results] == ["src_offset0"]
    # the merged offset may be negative: its lower bound is compared; the destination's (pid * BLOCK) too
    assert len(ops_of(ir, "elementwise", "ge")) == 2


@transpiler.jit
def bp_while_kernel(X, OUT, N, BLOCK: tl.constexpr):
    """OUT[0] = the sum of X, walking it with a block pointer in a while loop."""
    p = tl.make_block_ptr(X, (N,), (1,), (0,), (BLOCK,), (0,))
    total = tl.zeros((BLOCK,), tl.float32)
    start = 0
    while start < N:
        total += tl.load(p, boundary_check=(0,), padding_option="zero")
        p = tl.advance(p, (BLOCK,))
        start += BLOCK
    tl.store(OUT, tl.sum(total))


def test_a_while_loop_carries_a_block_pointer():
    ir = bp_while_kernel.ir(F32, F32, 1000, BLOCK=128)
    (loop,) = ops_of(ir, "while")
    assert [r.name for r in loop.results] == ["total", "p_offset0", "start"]
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    out = np.full(1, np.nan, np.float32)
    bp_while_kernel.interpret[(1,)](x, out, 1000, BLOCK=128)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)


@needs_nvrtc
def test_unit_stride_loads_and_stores_are_vector_accesses():
    """N a multiple of 16 (rows 16-byte aligned, the column mask uniform over 4 floats), M not a multiple of
    the block: both checked dimensions, 16-byte accesses."""
    variant = bp_copy_kernel.compiled_variant(F32, F32, 70, 208, 208, 1, 208, 1, BM=32, BN=64)
    result = compile_offline(variant.source, "sm_90a")
    assert "ld.global.nc.v4" in result.ptx and "st.global.v4" in result.ptx
    assert not re.search(r"ld\.global\.nc\.f32", result.ptx)
    assert result.spill_bytes == 0


def test_a_transposed_view_vectorizes_along_its_unit_stride_dimension():
    """X viewed as X.T (strides (1, stride_xm), order (0, 1)): dimension 0 is the contiguous one."""
    report = bp_transpose_kernel.analysis(F32, F32, 64, 100, 128, 64, BM=32, BN=32)[1].decisions.report()
    load_line = next(line for line in report.splitlines() if "[vectorize]" in line and ": load:" in line)
    store_line = next(line for line in report.splitlines() if "[vectorize]" in line and ": store:" in line)
    assert "4 x 4 bytes" in load_line and "along dim 0" in load_line
    assert "4 x 4 bytes" in store_line and "along dim 1" in store_line


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("b_stored", ["KxN", "NxK"])
def test_block_pointer_matmul_is_pipelined_on_tensor_cores(arch, b_stored):
    """B stored N x K is seen as K x N through the strides (1, K): its tile is contiguous along K (dim 0)."""
    b_strides, b_order = ((4096, 1), (1, 0)) if b_stored == "KxN" else ((1, 4096), (0, 1))
    args = (F16, F16, F16, 4096, 4096, 4096, 4096, 1, *b_strides, 4096, 1)
    config = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, B_ORDER=b_order, num_warps=4, num_stages=4)
    _, analysis = bp_matmul_kernel.analysis(*args, **config)
    (pipe,) = analysis.pipelines.values()
    assert pipe.stages == 4 and sorted(s.vec for s in pipe.loads) == [8, 8]   # 16-byte cp.async for A and B
    assert [s.col_dim for s in pipe.loads] == [1, 1 if b_stored == "KxN" else 0]
    assert pipe.main_dead_carried == {1, 2}          # the offsets are advanced by the prefetch only
    result = compile_offline(bp_matmul_kernel.compiled_variant(*args, **config).source, arch)
    assert re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", result.ptx)
    assert ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in result.ptx) == (b_stored == "KxN")
    assert "cp.async.cg.shared.global" in result.ptx
    assert result.spill_bytes == 0 and not result.warnings


# ---- misuse ---------------------------------------------------------------------------------------------------

@transpiler.jit
def misuse_kernel(X, I, N, WHICH: tl.constexpr):
    p = tl.make_block_ptr(X, (N, N), (N, 1), (0, 0), (16, 16), (1, 0))
    if WHICH == "mask":
        tl.load(p, mask=True)  # <- mask
    elif WHICH == "other":
        tl.load(p, boundary_check=(0,), other=1.0)  # <- other
    elif WHICH == "store_mask":
        tl.store(p, tl.zeros((16, 16), tl.float32), mask=True)  # <- store_mask
    elif WHICH == "check_range":
        tl.load(p, boundary_check=(0, 2))  # <- check_range
    elif WHICH == "check_twice":
        tl.load(p, boundary_check=(1, 1))  # <- check_twice
    elif WHICH == "advance_rank":
        p = tl.advance(p, (16,))  # <- advance_rank
    elif WHICH == "advance_dropped":
        tl.advance(p, (16, 0))  # <- advance_dropped
    elif WHICH == "advance_pointer":
        tl.advance(X, (16,))  # <- advance_pointer
    elif WHICH == "padding_alone":
        tl.load(p, padding_option="zero")  # <- padding_alone
    elif WHICH == "padding_unknown":
        tl.load(p, boundary_check=(0, 1), padding_option="one")  # <- padding_unknown
    elif WHICH == "padding_nan_int":
        q = tl.make_block_ptr(I, (N,), (1,), (0,), (16,), (0,))
        tl.load(q, boundary_check=(0,), padding_option="nan")  # <- padding_nan_int
    elif WHICH == "store_dtype":
        tl.store(p, tl.zeros((16, 16), tl.float16))  # <- store_dtype
    elif WHICH == "store_shape":
        tl.store(p, tl.zeros((1, 16), tl.float32))  # <- store_shape
    elif WHICH == "offset_int64":
        tl.make_block_ptr(X, (N, N), (N, 1), (0, N.to(tl.int64)), (16, 16), (1, 0))  # <- offset_int64
    elif WHICH == "base_block":
        tl.make_block_ptr(X + tl.arange(0, 16), (N,), (1,), (0,), (16,), (0,))  # <- base_block
    elif WHICH == "lengths":
        tl.make_block_ptr(X, (N, N), (N, 1), (0,), (16, 16), (1, 0))  # <- lengths
    elif WHICH == "order":
        tl.make_block_ptr(X, (N, N), (N, 1), (0, 0), (16, 16), (1, 1))  # <- order
    elif WHICH == "block_shape":
        tl.make_block_ptr(X, (N, N), (N, 1), (0, 0), (16, 12), (1, 0))  # <- block_shape
    elif WHICH == "plain_load_check":
        tl.load(X + tl.arange(0, 16), boundary_check=(0,))  # <- plain_load_check
    elif WHICH == "plain_store_check":
        tl.store(X + tl.arange(0, 16), 1.0, boundary_check=(0,))  # <- plain_store_check
    elif WHICH == "reduce":
        tl.sum(p)  # <- reduce
    elif WHICH == "arithmetic":
        p = p + 16  # <- arithmetic
    elif WHICH == "attribute":
        p.block_shape  # <- attribute


MISUSE = [
    ("mask", CompileTimeError, "takes no mask= or other="),
    ("other", CompileTimeError, "takes no mask= or other="),
    ("store_mask", CompileTimeError, "takes no mask= or other="),
    ("check_range", ShapeError, "dimensions of the 2-D block pointer (0 to 1), got 2"),
    ("check_twice", CompileTimeError, "boundary_check repeats a dimension"),
    ("advance_rank", ShapeError, "tl.advance of a 2-D block pointer needs 2 offsets, got 1"),
    ("advance_pointer", DTypeError, "tl.advance moves a block pointer"),
    ("padding_alone", CompileTimeError, "boundary_check is empty"),
    ("padding_unknown", CompileTimeError, "padding_option must be 'zero' or 'nan'"),
    ("padding_nan_int", DTypeError, "padding_option='nan' needs a floating-point block pointer"),
    ("store_dtype", DTypeError, "needs a tl.float32 value, not tl.float16"),
    ("store_shape", ShapeError, "needs a block of its shape [16, 16] (or a scalar), got [1, 16]"),
    ("offset_int64", DTypeError, "must be 32-bit integers"),
    ("base_block", DTypeError, "needs a scalar pointer as its base"),
    ("lengths", ShapeError, "one entry per dimension"),
    ("order", CompileTimeError, "order must be a permutation"),
    ("block_shape", CompileTimeError, "power"),
    ("plain_load_check", CompileTimeError, "apply to block pointers (tl.make_block_ptr) only"),
    ("plain_store_check", CompileTimeError, "apply to block pointers (tl.make_block_ptr) only"),
    ("reduce", DTypeError, ""),
    ("arithmetic", DTypeError, "operators do not apply to a block pointer"),
    ("attribute", NameResolutionError, "a block pointer has no attribute 'block_shape'"),
]
MISUSE_ARGS = (np.zeros(256, np.float32), np.zeros(16, np.int32), 16)


def marked_line(fn, marker):
    lines, start = inspect.getsourcelines(fn.fn)
    (line,) = [start + i for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    return line


@pytest.mark.parametrize("which,cls,phrase", MISUSE, ids=[m[0] for m in MISUSE])
def test_misuse_is_a_clear_error_at_its_line_on_both_paths(which, cls, phrase):
    with pytest.raises(TranspilerError) as compiled:
        misuse_kernel.cuda_source(*MISUSE_ARGS, WHICH=which)
    with pytest.raises(TranspilerError) as interpreted:
        misuse_kernel.interpret[(1,)](*(a.copy() if isinstance(a, np.ndarray) else a for a in MISUSE_ARGS),
                                      WHICH=which)
    line = marked_line(misuse_kernel, f"# <- {which}")
    for err in (compiled.value, interpreted.value):
        assert type(err) is cls and err.line == line, str(err)
        assert "in kernel 'misuse_kernel'" in str(err)
    assert phrase in str(compiled.value)
    if which != "reduce":                 # the interpreter's tl.sum says what it expected instead
        assert phrase in str(interpreted.value)


def test_a_reduction_of_a_block_pointer_says_to_load_it_first():
    with pytest.raises(DTypeError) as info:
        misuse_kernel.cuda_source(*MISUSE_ARGS, WHICH="reduce")
    assert "tl.sum does not take a block pointer" in str(info.value) and "tl.load" in info.value.hint


@transpiler.jit
def loop_kind_change_kernel(X, N, WHICH: tl.constexpr):
    p = tl.make_block_ptr(X, (N,), (1,), (0,), (16,), (0,))
    q = 0
    for _ in range(N):  # <- loop
        if WHICH == "to_number":
            p = 0
        elif WHICH == "to_block_pointer":
            q = p
        else:
            p = tl.make_block_ptr(X, (N,), (1,), (0,), (32,), (0,))


def test_a_dropped_advance_is_an_error_when_compiled():
    """As in Triton: tl.advance has no side effects, so a bare `tl.advance(p, ...)` statement is a mistake."""
    with pytest.raises(CompileTimeError) as info:
        misuse_kernel.cuda_source(*MISUSE_ARGS, WHICH="advance_dropped")
    assert "made and then dropped" in str(info.value) and "p = tl.advance(p" in info.value.hint
    assert info.value.line == marked_line(misuse_kernel, "# <- advance_dropped")


@pytest.mark.parametrize("which,phrase", [
    ("to_number", "'p' is a block pointer to tl.float32[16] blocks (order (0,)) on one path and an int32 value"),
    ("to_block_pointer", "'q' is an int32 value on one path and a block pointer"),
    ("to_other_block_shape", "tl.float32[16] blocks (order (0,)) on one path and a block pointer to "
                             "tl.float32[32] blocks"),
])
def test_a_loop_cannot_change_what_kind_of_value_a_variable_holds(which, phrase):
    with pytest.raises(CompileTimeError) as info:
        loop_kind_change_kernel.cuda_source(np.zeros(64, np.float32), 64, WHICH=which)
    assert phrase in str(info.value)
    assert info.value.line == marked_line(loop_kind_change_kernel, "# <- loop")
