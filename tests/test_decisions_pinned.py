"""The vector width chosen for every load and store of the examples, the PTX instructions that carry it,
and no register spills; plus the cases that must not vectorize (unaligned pointer, unaligned rows, strided).

Widths come from the vectorize pass (`analysis.vector_width`, the number the decision log reports); the PTX
comes from NVRTC on the CPU (`compile_offline`). Loads keyed by their Python source text, not line numbers.
A test failing here after a codegen change says which access got narrower (or wider): update the expectation
only if that was the intent.
"""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from example_specs import BY_NAME, aligned, analysis_for, analysis_of, source_for, source_of
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")

VEC = r"global[.a-z0-9]*\.v[248]\."  # a vector access to global memory (shared-memory vectors do not count)
# spec -> ({(op, text in its Python line): width}, PTX patterns that must occur, PTX patterns that must not)
EXPECTED = {
    "vector_add_fp32": ({("load", "x = tl.load(X + offsets"): 4, ("load", "y = tl.load(Y + offsets"): 4,
                         ("store", "tl.store(Z + offsets"): 4},
                        [r"ld\.global\.nc\.v4\.", r"st\.global\.v4\."], []),
    # Rows aligned and n_cols a multiple of 16: the mask is uniform over each run, so no element fallback.
    "softmax_fp32_4000": ({("load", "tl.load(IN + row * in_stride + cols"): 4,
                           ("store", "tl.store(OUT + row * out_stride + cols"): 4},
                          [r"ld\.global\.nc\.v4\.f32", r"st\.global\.v4\.f32"],
                          [r"ld\.global\.nc\.f32", r"st\.global\.f32"]),
    # Row stride 781: rows not known to be aligned, element accesses only (the fallback).
    "softmax_fp32_781": ({("load", "tl.load(IN + row * in_stride + cols"): 1,
                          ("store", "tl.store(OUT + row * out_stride + cols"): 1},
                         [r"ld\.global\.nc\.f32", r"st\.global\.f32"], [VEC]),
    # fp16, 8 halves = 16 bytes per access; n_cols 4093 leaves a ragged run handled by element accesses.
    "softmax_fp16_4096": ({("load", "tl.load(IN + row * in_stride + cols"): 8,
                           ("store", "tl.store(OUT + row * out_stride + cols"): 8},
                          [r"ld\.global\.nc\.v4\.", r"st\.global\.v4\.", r"ld\.global\.nc\.u16"], []),
    "layernorm_fp16_4000": ({("load", "x = tl.load(X + row * x_stride + cols"): 8,
                             ("load", "w = tl.load(W + cols"): 8, ("load", "b = tl.load(B + cols"): 8,
                             ("store", "tl.store(Y + row * y_stride + cols"): 8,
                             ("store", "tl.store(Mean + row"): None, ("store", "tl.store(Rstd + row"): None},
                            [r"ld\.global\.nc\.v4\.", r"st\.global\.v4\."], [r"ld\.global\.nc\.u16"]),
    "layernorm_bf16_4000": ({("load", "x = tl.load(X + row * x_stride + cols"): 8,
                             ("load", "w = tl.load(W + cols"): 8, ("load", "b = tl.load(B + cols"): 8,
                             ("store", "tl.store(Y + row * y_stride + cols"): 8,
                             ("store", "tl.store(Mean + row"): None, ("store", "tl.store(Rstd + row"): None},
                            [r"ld\.global\.nc\.v4\.", r"st\.global\.v4\."], [r"ld\.global\.nc\.u16"]),
    # The eight box loads are stride-4 element loads one by one (width 1 each), but load combining reads the
    # four fields of a box with one access (16 bytes in fp32, 8 in fp16). The stores are vectorized after a
    # conversion.
    "giou_loss_fp32": ({**{("load", f"{w} = tl.load("): 1 for w in ("p_left", "p_top", "p_right", "p_bottom",
                                                                     "t_left", "t_top", "t_right", "t_bottom")},
                        ("store", "tl.store(LOSS + box"): 4, ("store", "tl.store(VALID + box"): 4},
                       [r"ld\.global\.nc\.v4\.", r"st\.global\.v4\."], []),
    "giou_loss_fp16": ({**{("load", f"{w} = tl.load("): 1 for w in ("p_left", "p_top", "p_right", "p_bottom",
                                                                     "t_left", "t_top", "t_right", "t_bottom")},
                        ("store", "tl.store(LOSS + box"): 4, ("store", "tl.store(VALID + box"): 4},
                       [r"ld\.global\.nc\.v2\.", r"st\.global\.v4\."], [r"ld\.global\.nc\.u16"]),
}


def widths_by_source(ir, analysis):
    """{(op name, stripped Python line): vector width} of every load and store (None: a scalar access)."""
    out = {}
    for op in ir.walk():
        if op.name in ("load", "store"):
            text = ir.source_lines.get(op.loc.line, "").strip()
            out[(op.name, text)] = analysis.vector_width.get(op)
    return out


def _lookup(widths, op, fragment):
    hits = [w for (name, text), w in widths.items() if name == op and fragment in text]
    assert len(hits) == 1, f"{op} '{fragment}' matches {len(hits)} accesses: {sorted(widths)}"
    return hits[0]


def _ptx(result):
    return result.ptx.decode() if isinstance(result.ptx, bytes) else result.ptx


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vector_width_of_each_example_access(name):
    ir, analysis = analysis_of(BY_NAME[name])
    widths = widths_by_source(ir, analysis)
    expected, _, _ = EXPECTED[name]
    assert len(widths) == len(expected), f"accesses changed: {sorted(widths)}"
    got = {key: _lookup(widths, *key) for key in expected}
    assert got == expected
    # The decision log says the same, per access.
    logged = [d for d in analysis.decisions.for_pass("vectorize")]
    # (a row loop loads its first row before the loop and the next ones inside it: one decision per copy)
    logged_accesses = {(d.what.split(":")[0], ir.source_lines[d.line].strip()) for d in logged}
    assert len(logged_accesses) == sum(1 for w in expected.values() if w is not None)
    for d in logged:
        width = int(d.what.split(": ")[1].split(" x ")[0])
        text = ir.source_lines[d.line].strip()
        assert widths[(d.what.split(":")[0], text)] == width, d


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ptx_carries_the_chosen_width_without_spills(name, arch):
    result = compile_offline(source_of(BY_NAME[name]), arch)
    ptx = _ptx(result)
    _, present, absent = EXPECTED[name]
    for pattern in present:
        assert re.search(pattern, ptx), f"{pattern} not in the PTX of {name}"
    for pattern in absent:
        hit = re.search(r"\S*" + pattern + r"\S*", ptx)
        assert not hit, f"{hit.group(0) if hit else ''} in the PTX of {name}"
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


# ---- cases that must fall back to element accesses -----------------------------------------------------------

@transpiler.jit
def strided_copy_kernel(X, Y, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs * STRIDE, mask=m), mask=m)


def _fallback_cases():
    va = BY_NAME["vector_add_fp32"].kernel_obj
    # One element past a 16-byte boundary: the key says "not aligned", so no access may be wider than 4 bytes.
    misaligned = [aligned(64, np.float32, 1), aligned(64, np.float32, 1), aligned(64, np.float32, 1), 4096]
    return {
        "vector_add_misaligned_pointers": (va, misaligned, dict(BLOCK=1024),
                                           {("load", "x = tl.load"): 1, ("load", "y = tl.load"): 1,
                                            ("store", "tl.store(Z"): 1}),
        # Stride-2 loads (contiguity 1) stay element loads; the contiguous store still gets 16 bytes.
        "strided_load": (strided_copy_kernel, [aligned(64, np.float32), aligned(64, np.float32), 4096],
                         dict(STRIDE=2, BLOCK=1024), {("load", "tl.load(X + offs * STRIDE"): 1}),
    }


@pytest.mark.parametrize("name", sorted(_fallback_cases()))
def test_unaligned_or_strided_access_does_not_vectorize(name):
    kernel, args, constexprs, expected = _fallback_cases()[name]
    ir, analysis = analysis_for(kernel, args, constexprs)
    widths = widths_by_source(ir, analysis)
    for (op, fragment), width in expected.items():
        assert _lookup(widths, op, fragment) == width
    if not nvrtc_available():
        return
    ptx = _ptx(compile_offline(source_for(kernel, args, constexprs), "sm_90a"))
    loads = re.findall(r"ld\.global\S*", ptx)
    assert loads and not [x for x in loads if re.search(VEC, x)], loads
    if name == "vector_add_misaligned_pointers":
        stores = re.findall(r"st\.global\S*", ptx)
        assert stores and not [x for x in stores if re.search(VEC, x)], stores
    else:
        assert re.search(r"st\.global\.v4\.", ptx), "the contiguous, aligned store should still be 16 bytes"
