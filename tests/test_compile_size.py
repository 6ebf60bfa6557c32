"""What keeps the generated CUDA small (NVRTC's time is most of a cold compile): an add into a product becomes
the product's accumulator (parse/dot_accumulate.py), an if's results nobody reads are not computed
(parse/dead_code.py), a branch's block value takes the layout its first user reads it in
(analysis/layout_assignment.py), and the attention forward of the compile-time bench has no conversion of a
product and no spills beyond the ones ptxas made before these passes."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.runtime.compiler import compile_offline, nvrtc_available

BENCH = Path(__file__).resolve().parent.parent / "bench"
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")


@transpiler.jit
def add_into_product_kernel(A, B, C, X, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                            READ_TWICE: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.load(X + rm[:, None] * BN + rn[None, :])
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        product = tl.dot(a, b)
        acc += product
        if READ_TWICE:
            acc += product * 2.0
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


def _ir(read_twice):
    a = np.zeros((32, 64), np.float16)
    b = np.zeros((64, 32), np.float16)
    x = np.zeros((32, 32), np.float32)
    return add_into_product_kernel.ir(a, b, x, x, 64, BM=32, BN=32, BK=32, READ_TWICE=read_twice)


def _dots_and_adds(ir):
    dots = [op for op in ir.walk() if op.name == "dot"]
    adds_of_dots = [op for op in ir.walk() if op.name == "elementwise" and op.attrs.get("fn") == "add"
                    and any(getattr(v.owner, "name", None) == "dot" for v in op.operands)]
    return dots, adds_of_dots


def test_an_add_into_a_product_becomes_its_accumulator():
    ir = _ir(read_twice=False)
    dots, adds = _dots_and_adds(ir)
    assert len(dots) == 1 and not adds
    (loop,) = [op for op in ir.walk() if op.name == "for"]
    assert dots[0].operands[2] in loop.regions[0].args           # the loop's acc, not a zeroed tile
    assert dots[0].results[0] is loop.regions[0].ops[-1].operands[0]


def test_a_product_read_twice_keeps_its_own_accumulator():
    dots, adds = _dots_and_adds(_ir(read_twice=True))
    assert len(dots) == 1 and len(adds) == 1
    assert getattr(dots[0].operands[2].owner, "name", None) == "splat"


@transpiler.jit
def bias_after_product_kernel(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    qk = tl.dot(tl.load(A + rm[:, None] * BK + rk[None, :]), tl.load(B + rk[:, None] * BN + rn[None, :]))
    bias = (rn[None, :] - rm[:, None]).to(tl.float32) * 0.5     # computed after the product
    qk += bias
    tl.store(C + rm[:, None] * BN + rn[None, :], qk)


def test_a_value_computed_after_the_product_is_added_to_it():
    a = np.zeros((32, 32), np.float16)
    ir = bias_after_product_kernel.ir(a, a, np.zeros((32, 32), np.float32), BM=32, BN=32, BK=32)
    dots, adds = _dots_and_adds(ir)
    assert len(dots) == 1 and len(adds) == 1 and getattr(dots[0].operands[2].owner, "name", None) == "splat"


@transpiler.jit
def unread_branch_value_kernel(X, OUT, N, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = X + offs
    if flag > 0:
        ptrs += N * 3                  # moved, never read after the if
        shifted = offs * 7             # read after the if
    else:
        shifted = offs
    tl.store(OUT + offs, tl.load(X + shifted, mask=shifted < N))


def test_if_results_nobody_reads_are_not_computed():
    args = (np.zeros(64, np.float32), np.zeros(64, np.float32), 64, 3)
    ir = unread_branch_value_kernel.ir(*args, BLOCK=64)
    (branch,) = [op for op in ir.walk() if op.name == "if"]
    assert len(branch.results) == 1 and [len(r.ops[-1].operands) for r in branch.regions] == [1, 1]
    assert "* 3" not in unread_branch_value_kernel.cuda_source(*args, BLOCK=64).split("__global__", 1)[1]


@transpiler.jit
def masked_scores_kernel(Q, K, OUT, n_valid, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    k = tl.load(K + rd[:, None] * BN + rn[None, :])
    qk = tl.zeros([BM, BN], dtype=tl.float32)
    if n_valid < BN:                   # a value no branch gives a layout of its own
        qk = tl.where(rn[None, :] < n_valid, qk, float("-inf"))
    qk += tl.dot(q, k)
    tl.store(OUT + rm, tl.max(qk, 1))


def _masked_scores_source(arch):
    q = np.zeros((64, 64), np.float16)
    return masked_scores_kernel.cuda_source(q, q, np.zeros(64, np.float32), 40, BM=64, BN=64, D=64, arch=arch)


@pytest.mark.parametrize("arch", [None, "sm_90a"])
def test_a_branch_value_added_to_a_product_takes_the_product_layout(arch):
    source = _masked_scores_source(arch)
    assert "through shared memory" not in source     # neither the product nor the masked scores are converted


@needs_nvrtc
def test_bench_attention_forward_compiles_small():
    """The compile-time bench's kernel: both masked and full loops multiply in the products' layout (no
    conversion but the epilogue's store), P @ V accumulates into the output tile, no NVRTC warnings."""
    sys.path.insert(0, str(BENCH))
    try:
        import compile_offline as bench_compile
    finally:
        sys.path.remove(str(BENCH))
    kernel, args, kwargs = bench_compile.capture_launch("attention", "ours", lambda s, d: np.zeros(s, d))
    kwargs = dict(kwargs)
    source = kernel.cuda_source(*args, arch="sm_90a", **kwargs)
    assert source.count("through shared memory") == 1        # the output tile to the store's layout
    result = compile_offline(source, "sm_90a")
    assert "warning" not in result.log
    assert result.ptx.count("shfl.sync") <= 64                 # 4 rows' max and sum per loop, not 64 columns'


@transpiler.jit
def two_branch_loops_kernel(Q, K, OUT, n_full, n_masked, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """Two key loops, each under an `if` (attention's full and masked blocks), multiplying the same query block."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    if n_full > 0:
        for j in range(0, n_full):
            acc += tl.dot(q, tl.load(K + j * D * BN + rd[:, None] * BN + rn[None, :]))
    if n_masked > 0:
        for j in range(n_full, n_full + n_masked):
            k = tl.load(K + j * D * BN + rd[:, None] * BN + rn[None, :])
            acc += tl.where(rn[None, :] < 7, tl.dot(q, k), 0.0)
    tl.store(OUT + rm[:, None] * BN + rn[None, :], acc)


def _two_branch_loops_source(arch):
    q = np.zeros((64, 64), np.float16)
    return two_branch_loops_kernel.cuda_source(q, np.zeros((4, 64, 64), np.float16), np.zeros((64, 64), np.float32),
                                               2, 2, BM=64, BN=64, D=64, arch=arch)


@pytest.mark.parametrize("arch", [None, "sm_90a"])
def test_an_operand_shared_by_loops_under_two_ifs_is_written_once_before_them(arch):
    source = _two_branch_loops_source(arch).split("__global__", 1)[1]
    body = source[source.index("{"):]
    writes = [i for i in range(len(body)) if body.startswith("tp::store<", i) and "q_tile[" in body[i:i + 60]]
    assert len(writes) == 1                                     # one write of Q's tile ...
    first_if = body.index("if (", body.index("// if n_full > 0:"))
    assert writes[0] < first_if                                 # ... before the first if, read by both loops
    # (mma.sync reads the tile from its shared address, made in each product; wgmma through descriptors)
    reads = body[first_if:].count("q_tile[") + body[first_if:].count("tp::smem_addr(q_tile)")
    assert reads >= 2


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_an_operand_shared_by_loops_under_two_ifs_compiles_without_a_stack_frame(arch):
    result = compile_offline(_two_branch_loops_source(arch), arch)
    assert "warning" not in result.log and result.spill_bytes == 0
    assert "0 bytes stack frame" in result.log
