"""The generated `.cu` reads like hand-written CUDA (issue 15): what that means, checked on every example spec,
and the spelling helpers it rests on (emit_cuda/cexpr.py, text.py) checked against evaluation."""
import inspect
import random
import re

import pytest

from example_specs import BY_NAME, SPECS, source_of
from transpiler.analysis.layouts import LinearLayout
from transpiler.emit_cuda import cexpr
from transpiler.emit_cuda.text import indent_pragmas, layout_in_words, wrap

# No loops: every Python line can be shown once, in order.
STRAIGHT_LINE = ["softmax_fp32_4000", "softmax_fp32_781", "vector_add_fp32", "layernorm_fp16_4000",
                 "layernorm_bf16_4000", "cumsum_rows_fp32_1000", "histogram_int32"]
WRITTEN_LATER = set()      # examples whose lines are shown once but not in order (none today)


def _body(source):
    return source[source.index("extern \"C\" __global__"):]


def test_the_softmax_snapshot_is_at_most_180_lines():
    assert len(source_of(BY_NAME["softmax_fp32_4000"]).splitlines()) <= 180


ONE_TRIP = re.compile(r"for \(int (\w+) = 0; \1 < 1; \+\+\1\)")


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_no_single_trip_reduction_loop_and_no_degenerate_index_arithmetic(spec):
    body = _body(source_of(spec))
    assert "for (int o = 0; o < 1; ++o)" not in body, "a reduction's loop over one result register"
    assert not re.search(r"\* 1\]|\* 1 \+|\+ 0\]|\[0 \+ |\(warp\) \* 1", body)


@pytest.mark.parametrize("name", STRAIGHT_LINE)
def test_straight_line_kernels_have_no_loop_of_one_trip(name):
    assert not ONE_TRIP.search(_body(source_of(BY_NAME[name])))


@pytest.mark.parametrize("name", STRAIGHT_LINE)
def test_each_python_line_is_shown_once_and_in_order(name):
    source = source_of(BY_NAME[name])
    shown = [line.strip() for line in _body(source).splitlines() if line.strip().startswith("// ")
             and not line.strip().startswith("// ---")]
    kernel_lines = [ln.strip() for ln in inspect.getsource(BY_NAME[name].kernel_obj.fn).splitlines()]
    positions = [kernel_lines.index(text[3:]) for text in shown if text[3:] in kernel_lines]
    assert len(positions) == len(set(positions)), f"a Python line shown twice: {shown}"
    if name not in WRITTEN_LATER:
        assert positions == sorted(positions), f"Python lines out of order: {shown}"


@pytest.mark.parametrize("name", STRAIGHT_LINE + ["giou_loss_fp32", "giou_loss_fp16"])
def test_lines_fit_in_120_columns(name):
    long = [line for line in source_of(BY_NAME[name]).splitlines() if len(line) > 120]
    assert not long, long


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_pragmas_are_indented_with_their_loops(spec):
    lines = _body(source_of(spec)).splitlines()       # (the device helpers are hand-written)
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#pragma unroll"):
            following = next(ln for ln in lines[i + 1:] if ln.strip())
            assert len(line) - len(line.lstrip()) == len(following) - len(following.lstrip()), (i, line, following)


def test_indent_pragmas_takes_the_next_statements_indentation():
    out = indent_pragmas(["  for (;;) {", "#pragma unroll", "", "      for (int j = 0; j < 4; ++j) x();", "  }"])
    assert out[1] == "      #pragma unroll"


def test_cexpr_folds_and_keeps_the_value():
    rng = random.Random(5)
    atoms = ["a", "b", "0", "1", "3", "(a | b)", "a << 2", "a + b", "a * b", "x[a]", "a & 3"]
    for _ in range(400):
        x, y = rng.choice(atoms), rng.choice(atoms)
        env = {"a": rng.randrange(0, 64), "b": rng.randrange(0, 64), "x": list(range(100, 200))}
        for spelled, expected in ((cexpr.mul(x, y), f"({x}) * ({y})"), (cexpr.add(x, y), f"({x}) + ({y})")):
            # C and Python agree on the precedence of + * << & | used here
            assert eval(spelled, env) == eval(expected, env), (x, y, spelled)
    assert cexpr.mul("w", 1) == "w" and cexpr.add("0", "s") == "s" and cexpr.mul("s", "0") == "0"


def test_wrap_keeps_every_part_and_the_width():
    parts = [f"argument_{i} int32 (multiple of 16)" for i in range(12)]
    lines = wrap(parts, "// specialization: ", "//   ")
    assert all(len(line) <= 120 for line in lines)
    assert " ".join(line.split(": ", 1)[-1].lstrip("/ ") for line in lines).split(", ") == \
        [p for p in parts[:-1]] + [parts[-1]] or "".join(lines).count("argument_") == 12


@pytest.mark.parametrize("seed", range(6))
def test_the_layout_in_words_gives_every_registers_element(seed):
    """The header's formula, evaluated for every register, lane and warp, names the element the layout's
    bases give (a blocked 1-D or 2-D layout with shuffled bases)."""
    rng = random.Random(seed)
    rank = rng.choice([1, 2])
    shape = tuple(rng.choice([64, 128, 256]) for _ in range(rank))
    bits = [(d, b) for d in range(rank) for b in range(shape[d].bit_length() - 1)]
    rng.shuffle(bits)
    bases = [tuple((1 << b) if dd == d else 0 for dd in range(rank)) for d, b in bits]
    n_warp = rng.choice([1, 2])
    lane, warp, reg = bases[:5], bases[5:5 + n_warp], bases[5 + n_warp:]
    layout = LinearLayout(shape, tuple(reg), tuple(lane), tuple(warp))
    text = " ".join(layout_in_words(layout, 0)).replace("  ", " ")
    formula = text.split("holds element", 1)[1].split(";")[0].strip()
    for r in range(layout.num_regs):
        for ln in range(32):
            for w in range(1 << len(warp)):
                want = [0] * rank
                for i, b in enumerate(reg):
                    if r >> i & 1:
                        want = [x | y for x, y in zip(want, b)]
                for i, b in enumerate(lane):
                    if ln >> i & 1:
                        want = [x | y for x, y in zip(want, b)]
                for i, b in enumerate(warp):
                    if w >> i & 1:
                        want = [x | y for x, y in zip(want, b)]
                got = eval(formula, {"r": r, "lane": ln, "warp": w})
                assert (list(got) if rank > 1 else [got]) == want, (formula, r, ln, w)
