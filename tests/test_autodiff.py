"""Derived backward kernels (transpiler/autodiff) on the CPU: interpreter gradients against central finite
differences in float64 for every differentiable builtin and the kernel shapes of autodiff_kernels.py; the
gradient-write decision; refusals at the Python line; NVRTC compiles every derived kernel without spills."""
import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from autodiff_kernels import cases
from transpiler.autodiff.checking import gradient_check
from transpiler.errors import NOT_YET, DTypeError, UnsupportedSyntaxError
from transpiler.runtime.compiler import compile_offline, nvrtc_available

CASES = cases(np.random.default_rng(7))
needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_central_differences(name, case):
    report = gradient_check(case["kernel"], case["grid"], case["args"], case["outputs"], case["inputs"],
                            step=case.get("step", 1e-6), **case["constexprs"])
    for input_name, (analytic, numeric, error) in report.items():
        assert np.abs(numeric).max() > 0 or name in ("unary_floor",), f"{input_name}: a zero gradient tests nothing"
        assert error < 1e-6, (input_name, error)


def _grads(case):
    names = case["kernel"].arg_names
    return {n: np.zeros_like(case["args"][names.index(n)]) for n in case["outputs"] + case["inputs"]}


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_derived_kernel_compiles_without_spills(name, case, arch):
    source = case["kernel"].backward.cuda_source(*case["args"], grads=_grads(case), arch=arch,
                                                 **case["constexprs"])
    result = compile_offline(source, arch)
    assert result.spill_bytes == 0, result.log
    assert not result.warnings, result.log


# ---- the gradient-write decision --------------------------------------------------------------------------

def _case(name):
    return dict(CASES)[name]


def _decisions(case):
    text = case["kernel"].backward.explain(*case["args"], grads=_grads(case), **case["constexprs"])
    return text.split("\n\n")[0]


def test_four_field_box_loads_get_plain_writes():
    text = _decisions(_case("boxes_giou"))
    assert "gradient of PRED -> grad_PRED: plain read-add-write" in text
    assert "4*lane[0] + 64*program_id(0)" in text


def test_replicated_and_strided_reads_get_partials_and_runtime_tests_with_the_reason():
    text = _decisions(_case("layernorm_affine"))
    assert ("gradient of W -> grad_W: partial sums: every program reads the same elements (a block replicated "
            "across programs): per-program partial sums: each program stores its row of 32") in text
    source = _case("layernorm_affine")["kernel"].backward.python_source(
        *_case("layernorm_affine")["args"], grads=_grads(_case("layernorm_affine")),
        **_case("layernorm_affine")["constexprs"])
    assert "if partial_W_rows >= programs_" in source and "tl.atomic_add(partial_W_row_" in source
    assert ("gradient of W -> grad_W: partial sums: every program reads the same elements (a block replicated across "
            "programs): per-program partial sums: each program adds atomically into row program % 64"
            ) in _decisions(_case("loop_sum"))
    assert ("gradient of X -> grad_X: plain or atomic by a runtime test: a row per program at a runtime stride "
            "(offsets lane[0] + program_id(0)*stride): plain when stride >= n_cols holds") in text
    text = _decisions(_case("broadcast_2d"))
    assert "gradient of S -> grad_S: atomic add" in text       # S[rows] and S[0]: two index patterns


def test_loads_indexed_by_a_loop_get_plain_writes_when_iterations_are_disjoint():
    """The induction variable is lo + step * k: disjoint iterations (blocks i * BLOCK of a program's ITERS)
    are one more digit of the mixed-radix proof; iterations sharing half a block are not; a row loop at a
    runtime stride (`row * stride + start + arange`, masked `start + arange < n_cols`) is plain under the
    runtime test."""
    text = _decisions(_case("loop_blocks"))
    assert ("gradient of X -> grad_X: plain read-add-write: each element is read by exactly one lane of one "
            "program in one iteration of its loop (offsets 16*iteration(i) + lane[0] + 48*program_id(0))") in text
    text = _decisions(_case("loop_blocks_overlapping"))
    assert "gradient of X -> grad_X: atomic add: two lanes of a program, or two iterations of its loop" in text
    text = _decisions(_case("loop_sum"))
    assert ("gradient of X -> grad_X: plain or atomic by a runtime test: a row per program at a runtime stride "
            "(offsets 16*iteration(start) + lane[0] + program_id(0)*stride): plain when stride >= n_cols") in text


def test_a_block_shared_by_programs_along_another_axis_gets_atomic_adds():
    """`BIAS + rn` in a kernel whose rows are along axis 0: programs (0, j) and (1, j) read the same elements,
    which the interpreter's sequential programs would not show: the decision must say atomic."""
    assert ("gradient of BIAS -> grad_BIAS: atomic add: programs along grid axis 0 read the same elements (its "
            "offsets do not depend on program_id(0))") in _decisions(_case("bias_2d"))


def test_a_grid_axis_the_forward_never_reads_is_refused():
    case = _case("loop_blocks")
    with pytest.raises(ValueError, match="2 programs along axis 1, whose program id loop_blocks_kernel never reads"):
        case["kernel"].backward.interpret[(4, 2)](*case["args"], grads=_grads(case), **case["constexprs"])


def test_a_runtime_trip_count_under_a_program_id_is_not_proved_injective():
    from transpiler.autodiff.gradient_writes import Affine, _injective
    k = ("iter", (0, "i"))
    form = Affine.of({("pid", 0): 64, k: 16, ("lane", 0): 1})
    assert _injective(form, (16,), {k: 4}) is None
    assert _injective(form, (16,), {k: 5}) == "the blocks of neighbouring programs overlap"
    assert "trip count is a runtime value" in _injective(form, (16,), {k: None})


@pytest.mark.parametrize("name", ["boxes_giou", "loop_blocks"])
def test_plain_and_atomic_writes_give_the_same_gradients(name, monkeypatch):
    case = _case(name)
    results = []
    for forced in (False, True):
        if forced:
            monkeypatch.setenv("TRANSPILER_AUTODIFF_WRITES", "atomic")
        grads = {n: np.full_like(a, 0.25) for n, a in _grads(case).items()}
        (out,) = case["outputs"]
        grads[out] = np.random.default_rng(0).normal(size=grads[out].shape)
        case["kernel"].backward.interpret[case["grid"]](*case["args"], grads=grads, **case["constexprs"])
        results.append(grads)
    assert "tl.atomic_add(" in case["kernel"].backward.python_source(*case["args"], grads=_grads(case),
                                                                      **case["constexprs"])
    for n in case["inputs"]:
        np.testing.assert_allclose(results[0][n], results[1][n], rtol=1e-13)
        assert np.abs(results[0][n] - 0.25).max() > 1e-3


def test_masked_off_lanes_get_no_gradient():
    case = _case("unary_exp")
    n = case["args"][2]
    x = np.random.default_rng(1).normal(size=n + 11)       # the array is longer than the kernel's n
    grads = {"X": np.zeros(n + 11), "OUT": np.ones(n + 11)}
    case["kernel"].backward.interpret[case["grid"]](x, np.zeros(n + 11), n, grads=grads, **case["constexprs"])
    np.testing.assert_allclose(grads["X"][:n], np.exp(x[:n]), rtol=1e-12)
    assert not grads["X"][n:].any()


def test_grads_name_checks():
    case = _case("unary_exp")
    with pytest.raises(ValueError, match="not a pointer"):
        case["kernel"].backward.python_source(*case["args"], grads={"n": 1}, **case["constexprs"])
    with pytest.raises(TypeError, match="grads="):
        case["kernel"].backward.python_source(*case["args"], **case["constexprs"])


# ---- refusals at the Python line ----------------------------------------------------------------------------

@transpiler.jit
def _in_place(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(X + offs, x * x, mask=offs < n)


@transpiler.jit
def _atomic_max(X, OUT, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_max(OUT, tl.max(tl.load(X + offs, mask=offs < n, other=0.0), axis=0))


@transpiler.jit
def _data_while(X, OUT, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    i = 0
    while i < n:
        x = x * 0.5
        i += 1
    tl.store(OUT + offs, x, mask=offs < n)


@transpiler.jit
def _random(X, OUT, n, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(OUT + offs, x * tl.rand(seed, offs), mask=offs < n)


@transpiler.jit
def _int_dot(A, B, C, OUT):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 16 + r[None, :])
    b = tl.load(B + r[:, None] * 16 + r[None, :])
    c = tl.load(C + r[:, None] * 16 + r[None, :])
    tl.store(OUT + r[:, None] * 16 + r[None, :], tl.dot(a, b).to(tl.float32) * c)


@transpiler.jit
def _batched_dot(A, B, OUT):
    r = tl.arange(0, 16)
    i = tl.arange(0, 2)
    tile = i[:, None, None] * 256 + r[None, :, None] * 16 + r[None, None, :]
    tl.store(OUT + tile, tl.dot(tl.load(A + tile), tl.load(B + tile)))


def _refusal(kernel, args, grads, match, line_text, cls=UnsupportedSyntaxError, kind=NOT_YET, **constexprs):
    with pytest.raises(cls, match=match) as info:
        kernel.backward.python_source(*args, grads=grads, **constexprs)
    assert line_text in info.value.loc.source_line()
    assert info.value.refusal is kind


def test_refusals_point_at_the_python_line():
    x, o = np.ones(16), np.zeros(16)
    _refusal(_in_place, [x, 16], {"X": x}, "in-place update", "tl.store(X + offs", BLOCK=16)
    _refusal(_atomic_max, [x, o, 16], {"X": x, "OUT": o}, "atomic_max", "tl.atomic_max(", BLOCK=16)
    _refusal(_data_while, [x, o, 16], {"X": x, "OUT": o}, "while loop", "while i < n", BLOCK=16)
    _refusal(_random, [x, o, 16, 3], {"X": x, "OUT": o}, "random numbers", "", BLOCK=16)
    a = np.ones((16, 16), np.int8)
    _refusal(_int_dot, [a, a, np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)],
             {"C": np.ones((16, 16), np.float32), "OUT": np.zeros((16, 16), np.float32)}, "integer types",
             "tl.dot(a, b)", cls=DTypeError, kind=None)      # integers have no derivative: not a refusal
    x3 = np.ones((2, 16, 16), np.float32)
    _refusal(_batched_dot, [x3, x3, x3.copy()], {"A": x3, "B": x3, "OUT": x3}, "batched .3-D. tl.dot",
             "tl.dot(tl.load(A")


# ---- explain, torch, the example ------------------------------------------------------------------------

def test_a_loop_reverse_recomputes_only_what_it_reads():
    """The reverse of a K loop reads the loop's loads, not its accumulator: no replay up to each iteration,
    and the only dots are the forward's (its result feeds tanh's derivative) and dA, dB."""
    case = _case("dot_loop")
    source = case["kernel"].backward.python_source(*case["args"], grads=_grads(case), **case["constexprs"])
    code = [line for line in source.splitlines() if not line.strip().startswith("#")]
    assert sum(line.count("tl.dot(") for line in code) == 3 and "_replayed" not in source
    assert "reads none of its carried values" in _decisions(case)


def test_gradients_through_loop_carried_pointers_are_refused_at_the_loop():
    from autodiff_kernels import dot_pointer_loop_kernel
    a, b, c = np.ones((20, 40)), np.ones((40, 18)), np.zeros((20, 18))
    with pytest.raises(UnsupportedSyntaxError, match="pointer this loop advances") as info:
        dot_pointer_loop_kernel.backward.python_source(a, b, c, 20, 18, 40, grads={"A": a, "B": b, "C": c},
                                                      BM=16, BN=16, BK=16)
    assert "for k0 in range(0, K, BK)" in info.value.loc.source_line()


def test_explain_says_what_each_loop_recomputes():
    assert "reads none of its carried values" in _decisions(_case("loop_sum"))
    assert ("kept per iteration in a tape (one forward pass stores them, each reverse iteration loads its own): its "
            "trip count is a runtime value") in _decisions(_case("loop_recurrence"))


def test_tape_or_replay_is_chosen_by_cost_and_by_what_can_be_sized():
    """A loop whose reverse reads its carried values (a block and a scalar): 3 constant iterations replay
    (3 body replays cost less than the tape's stores and loads), 12 take the tape (66 replays would cost
    more), a trip count depending on the program id replays (a tape is sized before the launch)."""
    short, long, by_program = (_decisions(_case(f"loop_recurrence_{k}")) for k in ("short", "long", "by_program"))
    assert "replays the forward loop up to it (O(n^2) iterations): 3 iterations: replaying" in short
    assert "kept per iteration in a tape" in long and "costs less than replaying (66 body replays" in long
    assert "its bounds are not host values" in by_program
    case = _case("loop_recurrence_long")
    source = case["kernel"].backward.python_source(*case["args"], grads=_grads(case), **case["constexprs"])
    assert source.count("tl.store(tape_") == 2 and "tl.debug_barrier()" in source
    assert "tape_h, tape_h_trips, tape_s, tape_s_trips" in source.splitlines()[0]


def test_tape_offsets_are_row_major_for_any_block_rank():
    from transpiler.autodiff.tapes import offsets_text
    assert offsets_text(()) == ""
    assert offsets_text((16,)) == "tl.arange(0, 16)"
    assert offsets_text((4, 8)) == "tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]"
    assert offsets_text((2, 3, 4)) == ("tl.arange(0, 2)[:, None, None] * 12 + tl.arange(0, 3)[None, :, None] * 4 + "
                                       "tl.arange(0, 4)[None, None, :]")
    boxes = _case("boxes_giou")
    text = boxes["kernel"].backward.explain(*boxes["args"], grads=_grads(boxes), **boxes["constexprs"])
    assert "autodiff: boxes_kernel_backward" in text and "layout" in text    # the ordinary explain follows


def test_torch_autograd_function_passes_gradcheck():
    torch = pytest.importorskip("torch")
    case = _case("boxes_giou")
    pred, target = (torch.tensor(a, requires_grad=True) for a in case["args"][:2])
    f = transpiler.autograd(case["kernel"], grid=case["grid"], outputs=["LOSS"], **case["constexprs"])
    loss_like = torch.zeros(case["args"][2].shape, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda p, t: f(p, t, loss_like, case["args"][3], case["args"][4]),
                                    (pred, target))


def test_giou_example_backward_matches_the_reference():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import giou_loss
    assert giou_loss.run_case("numpy", "float32", batch=2, n=77).count("backward rel error") == 1


@pytest.mark.parametrize("dtype,shape", [("float16", (40, 50, 70)), ("float32", (70, 65, 33))])
def test_fused_mlp_example_backward_matches_the_float64_formulas(dtype, shape):
    """The example's derived backward of gelu(X @ W + b) (K loop of dots, bias shared by row tiles) against
    the float64 formulas (the example raises Mismatch past its tolerance)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import fused_mlp
    assert "backward rel error" in fused_mlp.run_case("numpy", dtype, shape=shape)


def test_accumulate_false_overwrites_what_the_forward_reads():
    for name in ("boxes_giou", "layernorm_affine", "row_sum_overlapping_rows", "loop_recurrence_long", "bias_2d"):
        case = _case(name)
        added = {n: np.zeros_like(g) for n, g in _grads(case).items()}
        overwritten = {n: np.full_like(g, 7.5) for n, g in _grads(case).items()}
        for grads in (added, overwritten):
            for n in case["outputs"]:
                grads[n] = np.random.default_rng(2).normal(size=grads[n].shape)
        case["kernel"].backward.interpret[case["grid"]](*case["args"], grads=added, **case["constexprs"])
        case["kernel"].backward.interpret[case["grid"]](*case["args"], grads=overwritten, accumulate=False,
                                                        **case["constexprs"])
        for n in case["inputs"]:
            np.testing.assert_allclose(overwritten[n], added[n], rtol=1e-12, atol=1e-14)
    source = _case("boxes_giou")["kernel"].backward.python_source(*_case("boxes_giou")["args"], accumulate=False,
                                                                   grads=_grads(_case("boxes_giou")),
                                                                   **_case("boxes_giou")["constexprs"])
    assert "tl.load(grad_PRED" not in source


def test_partial_rows_shared_by_programs_take_atomic_adds(monkeypatch):
    """Past the buffer cap (set to 0 here) programs share GROUPS rows (2 here, for 3 programs): atomic adds."""
    from transpiler.autodiff import partials
    case = _case("layernorm_affine")
    own = gradient_check(case["kernel"], case["grid"], case["args"], case["outputs"], case["inputs"],
                         **case["constexprs"])
    monkeypatch.setattr(partials, "CAP_BYTES", 0)
    monkeypatch.setattr(partials, "GROUPS", 2)
    shared = gradient_check(case["kernel"], case["grid"], case["args"], case["outputs"], case["inputs"],
                            **case["constexprs"])
    for n in ("W", "B"):
        assert shared[n][2] < 1e-6
        np.testing.assert_allclose(shared[n][0], own[n][0], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("programs,accumulate", [(1, True), (5, False), (65, True), (300, False), (2048, True),
                                                 (4097, False)])
def test_partial_rows_are_summed_in_passes_exactly(programs, accumulate):
    """The partial-row buffer is summed by tiles of PASS_ROWS rows per program per pass (4096 rows in one
    program's loop were serial: 3.2 ms on the H200), then added into (or stored as) the gradient: the same sum
    for every row count, columns past a block's 128 included."""
    from transpiler.autodiff import partials
    rng = np.random.default_rng(programs)
    grad = rng.standard_normal(37 if programs > 300 else 300)
    plan = partials.Plan(grad, 0, programs, 40 if programs > 300 else 301, accumulate)
    assert plan.rows == programs
    plan.buffer[...] = rng.standard_normal(plan.buffer.shape)
    expected = (grad if accumulate else 0) + plan.buffer[:, :grad.size].sum(axis=0)
    plan.reduce(interpret=True)
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rows_a,rows_b,accumulate", [(19, 19, True), (300, 2500, False), (1, 64, True)])
def test_two_gradients_are_summed_in_one_launch(rows_a, rows_b, accumulate):
    """`reduce_all` pairs the plans (layernorm's dW and dB: one launch); rows past FINAL_ROWS fold first;
    gradients of other lengths and row counts in one launch come out as each alone."""
    from transpiler.autodiff import partials
    rng = np.random.default_rng(rows_a + rows_b)
    grads = [rng.standard_normal(37), rng.standard_normal(130)]
    plans = [partials.Plan(grads[0], 0, rows_a, 40, accumulate), partials.Plan(grads[1], 1, rows_b, 256, accumulate)]
    expected = []
    for plan, grad in zip(plans, grads):
        plan.buffer[...] = rng.standard_normal(plan.buffer.shape)
        expected.append((grad if accumulate else 0) + plan.buffer[:, :grad.size].sum(axis=0))
    partials.reduce_all(plans, interpret=True)
    for grad, want in zip(grads, expected):
        np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-12)


@needs_nvrtc
def test_the_paired_sum_kernel_compiles_without_spills():
    from transpiler.autodiff import partials
    buffer, grad = np.zeros((1184, 1024), np.float32), np.zeros(1024, np.float32)
    rows, columns, warps = partials._tile(1184)
    for arch in ("sm_80", "sm_90a"):
        source = partials.sum_two_into.cuda_source(buffer, grad, 1024, 1184, 1024, buffer, grad, 1024, 1184, 1024,
                                                   128, rows, columns, False, num_warps=warps, arch=arch)
        result = compile_offline(source, arch)
        assert result.spill_bytes == 0 and not result.warnings, result.log


@needs_nvrtc
@pytest.mark.parametrize("rows", [1, 19, 1184, 2048, 4097])
def test_partial_sum_kernels_compile_without_spills(rows):
    """The summing kernels at the tiles the plans choose (a pass for 4097 rows; one tile of up to 2048 rows)."""
    from transpiler.autodiff import partials
    grad = np.zeros(1000, np.float32)
    plan = partials.Plan(grad, 0, rows, 1024, accumulate=False)
    launches = []

    class Recorder:
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, grid):
            return lambda *args, num_warps: launches.append((self.kernel, args, num_warps))

    import unittest.mock
    with unittest.mock.patch.object(partials, "sum_row_tiles", Recorder(partials.sum_row_tiles)), \
            unittest.mock.patch.object(partials, "sum_rows_into", Recorder(partials.sum_rows_into)):
        plan.reduce()
    assert len(launches) == (2 if rows > partials.FINAL_ROWS else 1)
    for kernel, args, num_warps in launches:
        for arch in ("sm_80", "sm_90a"):
            result = compile_offline(kernel.cuda_source(*args, num_warps=num_warps, arch=arch), arch)
            assert result.spill_bytes == 0 and not result.warnings, result.log


@pytest.mark.parametrize("wave", [1, 2, 3, 7])
def test_folded_backward_runs_several_forward_programs_per_program(wave, monkeypatch):
    """A weight vector every program reads: the backward folds the forward's programs into `wave` programs
    (the interpreter's stand-in for one wave of resident programs), each summing W's and B's gradients in
    registers over its rows; every fold gives the finite differences' gradients and the same as one program
    per row (wave 7: the grid's own size)."""
    from transpiler.autodiff import kernel as backward_kernel
    rng = np.random.default_rng(11)
    from autodiff_kernels import layernorm_kernel
    rows, cols = 7, 29
    args = [rng.normal(size=(rows, cols)), rng.normal(size=cols), rng.normal(size=cols), np.zeros((rows, cols)),
            cols, cols, 1e-5]
    monkeypatch.setattr(backward_kernel, "INTERPRETER_WAVE", wave)
    report = gradient_check(layernorm_kernel, (rows,), args, ["Y"], ["X", "W", "B"], BLOCK=32)
    for n, (analytic, numeric, error) in report.items():
        assert error < 1e-6, (n, error)
    grads = {"X": np.zeros((rows, cols)), "W": np.zeros(cols), "B": np.zeros(cols), "Y": np.ones((rows, cols))}
    source = layernorm_kernel.backward.python_source(*args, grads=grads, BLOCK=32)
    assert "for forward_program_" in source and "in range(tl.program_id(0), forward_programs, tl.num_programs(0))" \
        in source
    assert "folded: each program runs forward programs p, p + P" in _decisions(_case("layernorm_affine"))
    monkeypatch.setattr(backward_kernel, "INTERPRETER_WAVE", rows)
    unfolded = gradient_check(layernorm_kernel, (rows,), args, ["Y"], ["X", "W", "B"], BLOCK=32)
    for n in report:
        np.testing.assert_allclose(report[n][0], unfolded[n][0], rtol=1e-12, atol=1e-14)


def test_loads_inside_regions_or_partial_rows_are_not_folded():
    """The fold needs whole-row reads at the kernel's top level: a weight read inside a loop is not folded."""
    text = _decisions(_case("loop_sum"))
    assert "folded" not in text
