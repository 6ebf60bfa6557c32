"""emit_cuda/single_trip.py: loops of one trip are written out, their index arithmetic folded exactly; no example
specialization's CUDA keeps one."""
from __future__ import annotations

import re

import pytest

from example_specs import SPECS, source_of
from transpiler.emit_cuda.single_trip import fold_single_trip_loops

SINGLE_TRIP = re.compile(r"for \(int (\w+) = 0; \1 < 1; ")


def _fold(text):
    return "\n".join(fold_single_trip_loops(text.split("\n")))


def test_a_one_line_body_becomes_the_statement_with_its_index_folded():
    text = ("  #pragma unroll\n"
            "  for (int r = 0; r < 1; ++r) idx[r] = base + (r << 3) + lane;\n"
            "  #pragma unroll\n"
            "  for (int o = 0; o < 1; ++o) acc[o] = x[(((o & 1) << 1) | ((o >> 1) << 5))];")
    assert _fold(text) == "  idx[0] = base + 0 + lane;\n  acc[0] = x[0];"


def test_a_braced_body_becomes_a_block_and_inner_loops_are_folded_too():
    text = ("  #pragma unroll\n"
            "  for (int v = 0; v < 1; ++v) {\n"
            "    const int r = v * 8;\n"
            "    #pragma unroll\n"
            "    for (int o = 0; o < 1; ++o) out[o + 4 * v] = in[r];\n"
            "  }")
    assert _fold(text) == "  {\n    const int r = 0;\n    out[0] = in[r];\n  }"


@pytest.mark.parametrize("statement, folded", [
    ("x[r] = a - 3 * r + 2;", "x[0] = a - 0 + 2;"),          # the product is a whole term: 0
    ("x[r] = a / r * 2;", "x[0] = a / 0 * 2;"),              # not a whole term: left
    ("x[r] = (r | m) + (k & r);", "x[0] = m;"),
    ("x[r] = (r << 1 | m);", "x[0] = (0 << 1 | m);"),        # `|` binds less tightly than `<<`: left
    ('printf("r = %d", r);', 'printf("r = %d", 0);'),        # string literals are not code
])
def test_only_exact_folds_are_made(statement, folded):
    assert _fold(f"for (int r = 0; r < 1; ++r) {statement}") == folded


def test_loops_of_other_shapes_are_left():
    kept = ["#pragma unroll", "for (int r = 0; r < 4; ++r) x[r] = 0;",
            "for (int r = 0; r < 1; ++r)", "  tp::store(x[r],", "      y[r]);",
            "for (int r = 0; r < 1; ++r) {", "  for (int r = 0; r < 2; ++r) z[r] = 1;", "}"]
    assert fold_single_trip_loops(kept) == kept


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_no_example_keeps_a_single_trip_loop(spec):
    assert not SINGLE_TRIP.search(source_of(spec))
