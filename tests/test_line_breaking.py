"""CPU: `break_long_lines` (emit_cuda/text.py) keeps the emitted `.cu` within 120 columns the way a person breaks
lines, and never where a break would change the code: inside a string, a template's arguments, a preprocessor
line or a macro's continued line."""
from transpiler.emit_cuda.text import break_long_lines

W = 60


def _fits(lines):
    return all(len(line) <= W for line in lines)


def test_a_trailing_comment_goes_above_its_statement():
    line = "    const int row = (lane & 7) ^ (warp << 3);  // " + "the row this lane addresses, as the notes say"
    out = break_long_lines([line], W)
    assert out == ["    // the row this lane addresses, as the notes say",
                   "    const int row = (lane & 7) ^ (warp << 3);"]


def test_a_long_comment_breaks_at_words_with_its_indentation():
    out = break_long_lines(["  // " + " ".join(["word"] * 30)], W)
    assert len(out) > 1 and _fits(out) and all(line.startswith("  // word") for line in out)
    assert " ".join(line[5:] for line in out) == " ".join(["word"] * 30)


def test_an_argument_list_breaks_after_its_commas_and_keeps_every_character():
    line = "      tp::ldmatrix_x4(a_frag[mt][0], a_frag[mt][1], a_frag[mt][2], a_frag[mt][3], &tile[offset]);"
    out = break_long_lines([line], W)
    assert _fits(out) and len(out) > 1
    assert out[0].startswith("      tp::ldmatrix_x4(") and out[1].startswith("          ")   # continued 4 deeper
    assert " ".join(x.strip() for x in out).replace("( ", "(") == line.strip()


def test_a_condition_breaks_before_its_operators():
    line = "  if (tma_ready && (first_row + 128) <= rows_of_the_tensor && (first_col + 64) <= cols) {"
    out = break_long_lines([line], W)
    assert _fits(out) and len(out) > 1 and all(x.strip().startswith("&& (") for x in out[1:])
    assert " ".join(x.strip() for x in out) == line.strip()


def test_a_one_line_loop_puts_its_statement_under_its_header():
    line = "  for (int r = 0; r < 64; ++r) out_values[r] = converted_values[r + base];"
    assert break_long_lines([line], W) == ["  for (int r = 0; r < 64; ++r)",
                                           "    out_values[r] = converted_values[r + base];"]


def test_strings_templates_preprocessor_and_macro_lines_are_never_cut():
    string = '  printf("pid %d, %d, %d: a message long enough to need a break, were it code", a, b);'
    out = break_long_lines([string], W)
    assert any(x.strip().startswith('"pid %d, %d, %d: a message long enough to need a break, were it code",')
               for x in out)
    template = "  x = tp::swizzle_slabs<256, 2, 64, 128, 1024, 4096, 8192, 16384, 32768, 65536>(row);"
    assert all("<256, 2" in x or "<" not in x for x in break_long_lines([template], W))
    for line in ["#define TP_LONG_MACRO(NAME, INTRINSIC) template <typename T> T NAME(T x) { return INTRINSIC(x); }",
                 "  template <typename T> __device__ T NAME(T x, int lane) { return INTRINSIC(x, lane, 32); }  \\"]:
        assert break_long_lines([line], W) == [line]
