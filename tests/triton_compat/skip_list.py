"""Test functions of Triton's language tests (test_core.py) that check Triton's own compiler rather than the
language: they compile hand-written Triton IR, or their only assertion reads Triton's IR, PTX or launch
metadata. They are skipped with the reason below; every other test runs, and a test that reads Triton's
internals after its kernels ran is reported by the plugin as "the kernels ran, then the test read <what>".
"""

_HANDWRITTEN_IR = "compiles hand-written Triton GPU IR (TTGIR) with triton.compile(); no Python kernel to run"

SKIPS = {
    # Kernels written as TTGIR text with explicit Triton layouts.
    "test_scan_layouts": _HANDWRITTEN_IR,
    "test_reduce_layouts": _HANDWRITTEN_IR,
    "test_store_op": _HANDWRITTEN_IR,
    "test_convert1d": _HANDWRITTEN_IR,
    "test_convert1d_bool": _HANDWRITTEN_IR,
    "test_chain_reduce": _HANDWRITTEN_IR,
    "test_convert2d": _HANDWRITTEN_IR,
    "test_local_load_store": _HANDWRITTEN_IR,
    "test_local_load_store_dot": _HANDWRITTEN_IR,
    "test_local_load_store_mma": _HANDWRITTEN_IR,
    "test_convert_mma2mma": _HANDWRITTEN_IR,
    "test_convert_warp_local": _HANDWRITTEN_IR,
    "test_gather_warp_shuffle": "rewrites the TTGIR of a warmed-up Triton kernel and checks its LLVM IR",
    # The assertion is about Triton's IR or PTX only.
    "test_constexpr": "only asserts the type of an arith.constant in Triton's TTIR",
    "test_unroll_attr": "only counts tt.atomic_rmw ops in Triton's TTIR after loop unrolling",
    "test_tl_range_fuse": "only inspects tt.flatten / scf.for in Triton's TTIR and TTGIR",
    "test_tl_range_option_none": "only inspects loop attributes in Triton's TTIR",
    "test_poison_return": "only looks for ub.poison in Triton's TTIR and LLVM IR",
    "test_trans_reshape": "asserts the number of ttg.convert_layout ops in Triton's TTGIR before its results",
    "test_value_specialization": "reads Triton's specialization object through jit(repr=...) and the handle name",
    "test_override_arch": "asserts the arch named in Triton's TTGIR (TRITON_OVERRIDE_ARCH / arch=)",
    "test_enable_fp_fusion": "asserts fma / mad instructions in Triton's PTX",
    "test_maxnreg": "asserts .maxnreg in Triton's PTX (CUDA only)",
}
