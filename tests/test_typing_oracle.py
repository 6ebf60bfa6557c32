"""The typing oracle (tests/fuzz/triton_oracle.py): our IR builder's type for every assigned name against Triton's
front end's, on the CPU. Runs where `triton` is importable (PYTHONPATH=/work/tritoncpu/site here; CI has no
Triton and skips); the comparison of recorded types is checked without Triton too."""
import numpy as np
import pytest

from fuzz import triton_oracle
from fuzz.generator import generate

ASSIGNED = """import transpiler
import transpiler.language as tl


@transpiler.jit
def assigned_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    c = 100
    eps = 1e-3
    scaled = x * c
    low = tl.minimum(x, c)
    shifted = x.to(tl.float16) + eps
    total = tl.sum(scaled, axis=0)
    tl.store(Y + offs, scaled + low + total + shifted.to(tl.int32), mask=mask)
"""


def test_differences_pair_names_by_function_line_and_name_and_skip_names_only_one_side_binds():
    ours = {("k", 3, "x"): "int8[16]", ("k", 4, "y"): "int8[16]", ("k", 5, "z"): "fp32", ("h", 2, "a"): "int32"}
    theirs = {("k", 3, "x"): "int8[16]", ("k", 4, "y"): "int32[16]", ("k", 6, "w"): "fp32", ("h", 2, "a"): "int64"}
    found = triton_oracle.differences(ours, theirs)
    assert [(d.function, d.line, d.name, d.ours, d.triton) for d in found] == [
        ("h", 2, "a", "int32", "int64"), ("k", 4, "y", "int8[16]", "int32[16]")]
    assert found[1].pattern() == "int8[1-d] vs int32[1-d]"


def test_triton_signature_follows_the_launchers_specialization():
    args = [np.zeros(4, np.int8), np.zeros(4, np.float16), 7, 1, 2**40, 0.5, None]
    names = ["X", "Y", "N", "ONE", "BIG", "f", "NONE"]
    signature, fixed = triton_oracle.triton_signature(names, args, {"BLOCK": 16})
    assert signature == {"X": "*i8", "Y": "*fp16", "N": "i32", "ONE": "constexpr", "BIG": "i64", "f": "fp32",
                         "NONE": "constexpr", "BLOCK": "constexpr"}
    assert fixed == {"BLOCK": 16, "ONE": 1, "NONE": None}


def test_our_recorder_types_assigned_numbers_as_triton_does():
    """Our side alone: `c = 100` is int32, so `x_int8 * c` is int32 (no Triton needed to check ours)."""
    import libcst  # noqa: F401  (our builder's parser)
    path = triton_oracle.write_source(ASSIGNED, "assigned_kernel")
    from bench.twins import load
    kernel = load(path, "ours").assigned_kernel
    types, error = triton_oracle.build_ours(kernel, [np.zeros(64, np.int8), np.zeros(64, np.int32), 50],
                                            {"BLOCK": 64})
    assert not error
    by_name = {name: t for (_, _, name), t in types.items()}
    assert by_name["c"] == "int32" and by_name["eps"] == "fp32"
    assert by_name["scaled"] == "int32[64]" and by_name["low"] == "int32[64]"
    assert by_name["shifted"] == "fp32[64]" and by_name["total"] == "int32"


def _needs_real_triton():
    triton = pytest.importorskip("triton")
    if getattr(triton, "__transpiler_shim__", False):     # a test left the shim in sys.modules
        pytest.skip("`triton` is tests/triton_compat's shim in this process, not Triton")


def test_oracle_finds_no_difference_on_an_assigned_number_kernel():
    _needs_real_triton()
    r = triton_oracle.compare_source(ASSIGNED, "assigned_kernel",
                                     [np.zeros(64, np.int8), np.zeros(64, np.int32), 50], {"BLOCK": 64})
    assert r.compared, (r.ours_error, r.triton_error)
    assert len(set(r.ours) & set(r.triton)) >= 8           # every name above was recorded on both sides
    assert r.differences == [], [str(d) for d in r.differences]


@pytest.mark.parametrize("seed", [0, 2, 4, 7, 10, 12])
def test_oracle_finds_no_difference_on_fuzzer_kernels(seed, tmp_path):
    _needs_real_triton()
    r = triton_oracle.isolated(triton_oracle.compare_case, generate(seed), tmp_path, label=f"seed {seed}")
    assert r.compared, (r.ours_error, r.triton_error)
    assert r.ours and r.differences == [], [str(d) for d in r.differences]
