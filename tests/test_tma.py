"""CPU tests of TMA staging (analysis/tma.py, affine_tiles.py, emit_cuda/rules/tma.py, runtime/tensor_maps.py): the
matmul example's 128x128x64 fp16 specialization on sm_90a loads its tiles with `cp.async.bulk.tensor` into an
mbarrier ring and multiplies them with wgmma, with no spills or warnings; the decisions (boxes, swizzles, extents,
strides, run-time guard, stages) are pinned; TRANSPILER_TMA=0, sm_80 and loads that are no affine tile keep
cp.async and say why; the host side evaluates the maps' extents from the launch values and encodes each once."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import transpiler
import transpiler.language as tl
from transpiler.analysis import analyze
from transpiler.options import CompileOptions
from transpiler.runtime import tensor_maps
from transpiler.runtime.compiler import compile_offline, nvrtc_available

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matmul as matmul_example  # noqa: E402
from block_ptr_kernels import bp_matmul_kernel  # noqa: E402
from tma_kernels import gathered_rows_matmul_kernel, persistent_matmul_kernel  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed (pip install '.[nvrtc]')")
CONFIG = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)
H = transpiler.StandIn(tl.float16)


def _args(dtype=tl.float16):
    a = transpiler.StandIn(dtype)
    return (a, a, a, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1)


def _analysis(kernel=matmul_example.matmul_kernel, args=None, target="sm_90a", **meta):
    meta = meta or dict(ACTIVATION="", **CONFIG)
    launch = {k: meta.pop(k) for k in ("num_warps", "num_stages") if k in meta}
    return analyze(kernel.ir(*(args or _args()), **meta), CompileOptions(arch=target, **launch))


@needs_nvrtc
@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16])
def test_example_on_sm90a_loads_by_tma_into_an_mbarrier_ring(dtype):
    variant = matmul_example.matmul_kernel.compiled_variant(*_args(dtype), ACTIVATION="", arch="sm_90a", **CONFIG)
    result = compile_offline(variant.source, "sm_90a")
    # A: one 128x64 box per stage; B: two 64x64 boxes (its 256-byte rows are two 128-byte slabs); 2 prologue + 1
    # loop issue sites -> 9 instructions.
    bulk = r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx"
    assert len(re.findall(bulk, result.ptx)) == 9
    for needed in ("mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
                   "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.inval", "wgmma.mma_async.sync.aligned"):
        assert needed in result.ptx, needed
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.warnings
    assert re.search(r"const __grid_constant__ tp::TensorMap tma_a,\s*const __grid_constant__ tp::TensorMap tma_b,"
                     r"\s*int tma_ready\)", variant.source)
    assert [m["box"] for m in variant.tensor_maps] == [[64, 128], [64, 64]]
    assert [m["swizzle"] for m in variant.tensor_maps] == [128, 128]


def test_decisions_are_pinned():
    analysis = _analysis()
    (pipe,) = analysis.pipelines.values()
    (plan,) = analysis.tma.values()
    assert pipe.stages == 3 and pipe.distance == 2 and plan.loop is pipe.loop
    a, b = plan.loads
    assert (a.box, a.slabs, a.span, b.box, b.slabs, b.span) == ((64, 128), 1, 128, (64, 64), 2, 128)
    assert [repr(e) for e in a.extents] == ["K", "M"] and [repr(e) for e in b.extents] == ["N", "K"]
    assert repr(a.stride) == "stride_am" and repr(b.stride) == "stride_bk"
    assert repr(a.origin[0]) == "64 * ITER" and repr(b.origin[1]) == "64 * ITER"
    assert plan.stage_bytes == 2 * 128 * 64 * 2
    # the rows of A and the columns of B wrap (% M, % N): exact only where the tile does not wrap
    guards = [repr(g) for g in plan.guards]
    assert len(guards) == 4 and any("M" in g for g in guards) and any("N" in g for g in guards)
    report = analysis.decisions.report()
    assert "TMA + mbarrier ring, 3 stages" in report and "else the cp.async ring" in report


def test_wgmma_stays_in_flight_from_four_stages_on(monkeypatch):
    four = dict(CONFIG, BLOCK_K=32, num_stages=4)
    (pipe,) = _analysis(ACTIVATION="", **four).pipelines.values()
    assert pipe.async_dot is not None and pipe.distance == 2     # the group of iteration i-1 still reads its stage
    (pipe,) = _analysis().pipelines.values()
    assert pipe.async_dot is None and pipe.distance == 2         # 3 stages: measured slower in flight
    monkeypatch.setenv("TRANSPILER_TMA_IN_FLIGHT", "0")
    (pipe,) = _analysis(ACTIVATION="", **four).pipelines.values()
    assert pipe.async_dot is None and pipe.distance == 3


def _ring_iteration(source):
    """The body of the TMA ring's main loop (from its first mbarrier wait to the stage advance)."""
    ring = source[source.index("// TMA ring"):source.index("} else {", source.index("// TMA ring"))]
    loop = ring[ring.index("tp::mbarrier_wait_parity"):]
    return loop[:loop.index("if (++stage")]


def test_in_flight_tma_ring_refills_the_previous_stage_after_the_wait(monkeypatch):
    """With the wgmma group in flight the TMA ring still runs S-1 = 3 iterations ahead (the cp.async version of
    the same loop S-2): its barrier and boxes follow `wgmma.wait_group 1`, which retires iteration i-1's group,
    and the boxes go into i-1's stage. Measured on the H200 (bench/NOTES.md): 2048^3 0.79 -> 1.01 of Triton."""
    four = dict(CONFIG, BLOCK_K=32, num_stages=4)
    analysis = _analysis(ACTIVATION="", **four)
    (pipe,), (plan,) = analysis.pipelines.values(), analysis.tma.values()
    assert pipe.async_dot is not None and pipe.distance == 2 and plan.distance == 3 and plan.refill_after_wait
    assert "boxes issued 3 iteration(s) ahead, after the wgmma wait" in analysis.decisions.report()
    source = matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **four)
    body = _ring_iteration(source)
    order = [body.index(s) for s in ("tp::mbarrier_wait_parity", "wgmma_m64n128k16", "tp::wgmma_wait<1>()",
                                     "__syncthreads()", "tp::tma_load_2d(")]
    assert order == sorted(order) and body.count("__syncthreads()") == 1
    assert "tma_bars[(stage + 3) % 4]" in body and "(iteration + 3)" in body
    assert "for (int stage = 0; stage < 3; ++stage)" in source           # the prologue fills 3 stages
    monkeypatch.setenv("TRANSPILER_TMA_REFILL_AFTER_WAIT", "0")
    (plan,) = _analysis(ACTIVATION="", **four).tma.values()
    assert plan.distance == 2 and not plan.refill_after_wait
    body = _ring_iteration(matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **four))
    assert body.index("__syncthreads()") < body.index("wgmma_m64n128k16") < body.index("tp::tma_load_2d(") \
        < body.index("tp::wgmma_wait<1>()")


def test_tensor_maps_are_prefetched_at_entry_unless_switched_off(monkeypatch):
    """Measured on the H200 (bench/NOTES.md): 1024^3 12.2 -> 11.8 us with the prefetch, 2048^3 unchanged."""
    text = "if (tma_ready && threadIdx.x == 0) { tp::prefetch_tensormap(&tma_a); tp::prefetch_tensormap(&tma_b); }"
    source = matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **CONFIG)
    assert text in source and source.index(text) < source.index("tl.program_id(")   # before any index arithmetic
    assert "tensor maps prefetched by thread 0 at kernel entry" in _analysis().decisions.report()
    monkeypatch.setenv("TRANSPILER_TMA_PREFETCH", "0")
    assert "prefetch_tensormap" not in matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="",
                                                                                 arch="sm_90a", **CONFIG)


def test_full_grid_guard_is_off_by_default(monkeypatch):
    """Grids under one program per SM kept on the cp.async ring: measured no gain (bench/NOTES.md)."""
    text = "&& tp::grid_fills_sms()"
    assert text not in matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **CONFIG)
    monkeypatch.setenv("TRANSPILER_TMA_FULL_GRID", "1")
    analysis = _analysis()
    assert "a program per SM" in analysis.decisions.report()
    assert text in matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **CONFIG)


@needs_nvrtc
def test_in_flight_tma_ring_compiles_without_spills():
    four = dict(CONFIG, BLOCK_K=32, num_stages=4)
    variant = matmul_example.matmul_kernel.compiled_variant(*_args(), ACTIVATION="", arch="sm_90a", **four)
    result = compile_offline(variant.source, "sm_90a")
    assert result.spill_bytes == 0 and not result.warnings, result.log
    assert "wgmma.wait_group.sync.aligned 1" in result.ptx and "cp.async.bulk.tensor.2d" in result.ptx
    # the epilogue's layout conversion reads 16 bytes at a time: its 16-byte row padding keeps them aligned
    # (analysis/bank_padding.py), 128x128 fp16 / 128 threads = 16 such reads a thread
    assert len(re.findall(r"ld\.shared\.v4", result.ptx)) >= 16 and "ld.shared.v2" not in result.ptx


@pytest.mark.parametrize("config", [dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4),
                                    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)])
def test_swizzle_follows_the_tile_rows(config):
    (plan,) = _analysis(ACTIVATION="", **config).tma.values()
    a, b = plan.loads
    row_a = config["BLOCK_K"] * 2
    assert a.span == min(row_a, 128) and a.box == (min(row_a, 128) // 2, 128)
    assert b.span == 128 and b.slabs == config["BLOCK_N"] * 2 // 128


def test_block_pointers_need_no_guard():
    args = (H, H, H, 1000, 1000, 1000, 1024, 1, 1024, 1, 1024, 1)
    (plan,) = _analysis(bp_matmul_kernel, args, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, B_ORDER=(1, 0),
                        num_warps=4, num_stages=3).tma.values()
    assert plan.guards == []       # boundary_check (0, 1) is exactly the in-bounds test of the map


def test_persistent_kernel_stages_its_inner_loop_by_tma():
    args = (H, H, H, 1000, 1024, 1000, 1024, 1, 1024, 1, 1024, 1)
    analysis = _analysis(persistent_matmul_kernel, args, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                         NUM_SMS=132, num_warps=4, num_stages=3)
    (plan,) = analysis.tma.values()
    assert len(plan.loads) == 2


def test_off_switch_and_other_targets_keep_cp_async(monkeypatch):
    assert _analysis(target=None).tma == {}
    monkeypatch.setenv("TRANSPILER_WGMMA", "0")
    assert _analysis().tma == {}            # mma.sync tiles are not laid out for the copy engine's swizzle
    monkeypatch.setenv("TRANSPILER_WGMMA", "1")
    monkeypatch.setenv("TRANSPILER_TMA", "0")
    analysis = _analysis()
    assert analysis.tma == {} and "TRANSPILER_TMA=0" in analysis.decisions.report()
    source = matmul_example.matmul_kernel.cuda_source(*_args(), ACTIVATION="", arch="sm_90a", **CONFIG)
    assert "tma_load_2d(" not in source and "TensorMap" not in source


def test_gathered_rows_are_no_affine_tile():
    i32, f32 = transpiler.StandIn(tl.int32), transpiler.StandIn(tl.float32)
    args = (H, i32, H, f32, 1000, 1024, 1024, 1024, 1024, 1024)
    analysis = _analysis(gathered_rows_matmul_kernel, args, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                         num_warps=4, num_stages=3)
    assert analysis.tma == {} and len(analysis.pipelines) == 1
    assert "not an affine tile" in analysis.decisions.report()


@transpiler.jit
def _other_one_kernel(A, B, C, K, stride_a, stride_b, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn = tl.arange(0, BM), tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * stride_a + rk[None, :], mask=rk[None, :] < K, other=1.0)
        b = tl.load(B + rk[:, None] * stride_b + rn[None, :], mask=rk[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


def test_other_than_zero_is_not_tma_filled():
    args = (H, H, transpiler.StandIn(tl.float32), 1000, 1024, 1024)
    analysis = _analysis(_other_one_kernel, args, BM=128, BN=128, BK=64, num_warps=4, num_stages=3)
    assert analysis.tma == {} and "not +0" in analysis.decisions.report()


def test_host_maps_are_evaluated_and_encoded_once(monkeypatch):
    calls = []

    def fake_encode(address, dtype, rank, base, dims, strides, box, ones, interleave, swizzle, l2, fill):
        calls.append((dtype, base, tuple(dims[:2]), strides[0], tuple(box[:2]), swizzle))
        return 0
    monkeypatch.setattr(tensor_maps, "_encode", fake_encode)
    spec = dict(base=0, dtype="fp16", extents=[[[1, [2]]], [[1, [1]], [-1, [3]]]], stride=[[2, [3]]],
                box=[64, 128], swizzle=128)
    maps = tensor_maps.TensorMaps([spec])
    values = (1 << 20, 500, 300, 64)           # base, then three integers
    first = maps.addresses(values)
    assert maps.addresses(values) == first and len(calls) == 1
    assert calls[0] == (6, 1 << 20, (300, 436), 256, (64, 128), 3)
    flag = ctypes_int(first[-1])
    assert flag == 1
    bad = maps.addresses((1 << 20, 64, 0, 64))   # an extent of 0 cannot be encoded: the kernel takes cp.async
    assert ctypes_int(bad[-1]) == 0 and len(calls) == 1
    unaligned = maps.addresses((1 << 20 | 8, 500, 300, 64))
    assert ctypes_int(unaligned[-1]) == 0


def test_host_maps_are_found_by_one_lookup_of_the_slots_they_read(monkeypatch):
    """A launch reads only the slots the maps depend on: values of other slots do not make new entries, a
    changed extent does, and two maps of one base share nothing but the flag."""
    calls = []

    def fake_encode(address, dtype, rank, base, dims, strides, box, ones, interleave, swizzle, l2, fill):
        calls.append((base, tuple(dims[:2])))
        return 0
    monkeypatch.setattr(tensor_maps, "_encode", fake_encode)
    a = dict(base=0, dtype="fp16", extents=[[[1, [2]]], [[1, [1]]]], stride=[[1, [2]]], box=[64, 128], swizzle=128)
    b = dict(base=3, dtype="bf16", extents=[[[1, [1]]], [[1, [2]]]], stride=[[1, [1]]], box=[64, 64], swizzle=128)
    maps = tensor_maps.TensorMaps([a, b])
    values = [1 << 20, 256, 512, 1 << 22, 7]
    first = maps.addresses(values)
    assert len(first) == 3 and len(calls) == 2 and ctypes_int(first[-1]) == 1
    assert maps.addresses(values[:4] + [8]) is first and len(calls) == 2     # slot 4 feeds no map
    other = maps.addresses([1 << 20, 256, 1024, 1 << 22, 7])
    assert len(calls) == 4 and other[0] != first[0] and calls[-2:] == [(1 << 20, (1024, 256)), (1 << 22, (256, 1024))]


def ctypes_int(address):
    import ctypes
    return ctypes.c_int.from_address(address).value


def test_column_major_a_is_boxed_along_m():
    """A stored column-major (stride_am = 1): its tile's contiguous dimension is M, cut into 128-byte slabs."""
    args = (H, H, H, 4096, 4096, 4096, 1, 4096, 4096, 1, 4096, 1)
    (plan,) = _analysis(args=args).tma.values()
    a = plan.loads[0]
    assert a.staged.col_dim == 0 and (a.box, a.slabs) == ((64, 64), 2)
    assert repr(a.stride) == "stride_ak" and repr(a.origin[1]) == "64 * ITER"


@transpiler.jit
def _offset_loop_kernel(A, B, C, M, K, stride_a, stride_b, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        ROW_MASK: tl.constexpr):
    rm, rn = tl.arange(0, BM), tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(16, K, 2 * BK):             # a first offset and a step that is not the block
        rk = k + tl.arange(0, BK)
        if ROW_MASK:
            a = tl.load(A + rm[:, None] * stride_a + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        else:
            a = tl.load(A + rm[:, None] * stride_a + rk[None, :], mask=rk[None, :] < K, other=0.0)
        b = tl.load(B + rk[:, None] * stride_b + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < BN), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


def test_box_origin_follows_the_induction_variable():
    args = (H, H, transpiler.StandIn(tl.float32), 1000, 1000, 1024, 1024)
    meta = dict(BM=128, BN=128, BK=64, num_warps=4, num_stages=3)
    (plan,) = _analysis(_offset_loop_kernel, args, ROW_MASK=True, **meta).tma.values()
    a, b = plan.loads
    assert repr(a.origin[0]) == "16 + 128 * ITER" and repr(b.origin[1]) == "16 + 128 * ITER"
    assert [repr(e) for e in a.extents] == ["K", "M"] and [repr(e) for e in b.extents] == ["128", "K"]
    # without a row mask nothing says how many rows A has: no tensor map
    analysis = _analysis(_offset_loop_kernel, args, ROW_MASK=False, **meta)
    assert analysis.tma == {} and "has no bound" in analysis.decisions.report()


def test_poly_algebra():
    from transpiler.analysis.affine_tiles import ITER, Poly
    x, y = Poly.atom("x"), Poly.atom("y")
    p = (x + Poly.const(2)) * (y - Poly.const(1))
    assert p == x * y - x + Poly.const(2) * y - Poly.const(2)
    q, r = (Poly.const(6) * x * y + Poly.const(3) * y + x).divide_monomial(("y",), 3)
    assert q == Poly.const(2) * x + Poly.const(1) and r == x
    rest, coef = (Poly.const(5) + Poly.const(64) * Poly.atom(ITER)).split_by(ITER)
    assert rest == Poly.const(5) and coef == Poly.const(64)
    assert (Poly.atom(ITER) * Poly.atom(ITER)).split_by(ITER) is None
    assert (x - x).terms == {} and repr(Poly()) == "0"
