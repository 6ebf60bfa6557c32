"""`tl.const` pointer parameters, as Triton 3.6 types them (checked with its front end on the CPU): the
parameter's type is a const pointer, kept through pointer arithmetic, loops and helpers; a store or an atomic
through it is refused at its line on both paths; an `if`, a conditional expression, a helper's returns or a loop
mixing it with a plain pointer is refused by the compiler as Triton's is (types differ), in Triton's words; block
pointers, tensor descriptors and casts to a plain pointer type drop the const; on a helper's or an integer
parameter the annotation changes nothing."""
import inspect
import pickle

import numpy as np
import pytest

import const_pointer_kernels as kernels
import transpiler
import transpiler.language as tl
from transpiler import dtypes
from transpiler.runtime.compiler import compile_offline, nvrtc_available

BLOCK = 16


def _line_of(fn, text):
    """The file line of the first source line of `fn` holding `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _launch(kernel, path, *args, grid=(1,), **consts):
    if path == "compiled":
        return kernel.cuda_source(*args, **consts)
    return kernel.interpret[grid](*args, **consts)


def _inputs(rng, n=37):
    return rng.standard_normal(n).astype(np.float32), np.full(n, np.nan, np.float32), n


# ---- the type ---------------------------------------------------------------------------------------------


def test_a_const_pointer_type_is_its_own_type_and_survives_pickling():
    const = tl.pointer_type(tl.float32, const=True)
    assert const is tl.pointer_type(tl.float32, const=True)
    assert const is not tl.pointer_type(tl.float32) and const.element_ty is tl.float32
    assert const.is_const() and not tl.pointer_type(tl.float32).is_const() and not tl.float32.is_const()
    assert repr(const) == "const_pointer<tl.float32>"
    assert dtypes.by_name(const.name) is const and pickle.loads(pickle.dumps(const)) is const
    assert const.c_name == tl.pointer_type(tl.float32).c_name


# ---- refusals: a write through a const pointer -------------------------------------------------------------


WRITES = [
    (kernels.store_through_const_kernel, kernels.store_through_const_kernel, "tl.store("),
    (kernels.store_in_helper_kernel, kernels._write, "tl.store("),
    (kernels.atomic_through_const_kernel, kernels.atomic_through_const_kernel, "tl.atomic_add("),
    (kernels.store_through_cast_to_const_kernel, kernels.store_through_cast_to_const_kernel, "tl.store("),
]


@pytest.mark.parametrize("path", ["compiled", "interpreted"])
@pytest.mark.parametrize("kernel, where, text", WRITES, ids=[w[0].__name__ for w in WRITES])
def test_a_write_through_a_const_pointer_is_refused_at_its_line(kernel, where, text, path):
    x, y, n = _inputs(np.random.default_rng(0))
    before = x.copy()
    with pytest.raises(transpiler.DTypeError, match="Cannot store to a constant pointer") as err:
        _launch(kernel, path, x, y, n, BLOCK=BLOCK)
    assert err.value.loc.line == _line_of(where.fn, text)
    assert "const_pointer<tl.float32>" in err.value.error_message
    np.testing.assert_array_equal(x, before)           # nothing was written before the refusal


MIXES = [
    (kernels.if_mixes_const_kernel, "Mismatched type for p between the if branch (const_ptr<fp32>) and the else "
                                    "branch (ptr<fp32>)"),
    (kernels.ternary_mixes_const_kernel, "Ternary expression with dynamic condition has inconsistent types "
                                         "const_ptr<fp32> and ptr<fp32>"),
    (kernels.return_mixes_const_kernel, "Inconsistent return types: const_ptr<fp32> (if branch) and ptr<fp32>"),
    (kernels.loop_mixes_const_kernel, "Loop-carried variable p has initial type const_ptr<fp32> but is "
                                      "re-assigned to ptr<fp32>"),
]


@pytest.mark.parametrize("kernel, words", MIXES, ids=[m[0].__name__ for m in MIXES])
def test_mixing_const_and_plain_pointers_is_refused_in_tritons_words(kernel, words):
    x, y, n = _inputs(np.random.default_rng(1))
    with pytest.raises(transpiler.CompileTimeError) as err:
        kernel.cuda_source(x, y, n, BLOCK=BLOCK)
    assert words in err.value.error_message


def test_the_interpreter_runs_the_taken_branch_of_a_mix_as_tritons_does():
    """Only the compiler sees both branches' types; the interpreter (Triton's too) runs the branch taken."""
    x, y, n = _inputs(np.random.default_rng(2))
    kernels.if_mixes_const_kernel.interpret[(1,)](x, y, n, BLOCK=BLOCK)
    assert y[0] == x[0]


# ---- kernels that run ---------------------------------------------------------------------------------------


def test_loads_through_a_const_pointer_run_and_compile_to_a_const_parameter():
    rng = np.random.default_rng(3)
    x, y, n = _inputs(rng, 300)
    kernels.scaled_copy_kernel.interpret[(3,)](x, y, n, 1.5, BLOCK=128)
    np.testing.assert_allclose(y, x.astype(np.float64) * 1.5, rtol=1e-6)
    src = kernels.scaled_copy_kernel.cuda_source(x, y, n, 1.5, BLOCK=128)
    assert "const float* __restrict__ X" in src


def test_a_const_pointer_carried_through_a_loop_stays_readable():
    rng = np.random.default_rng(4)
    n, steps = 45, 3
    x = rng.standard_normal(n * steps).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    kernels.walk_const_pointer_kernel.interpret[(3,)](x, y, n, steps, BLOCK=BLOCK)
    np.testing.assert_allclose(y, x.astype(np.float64).reshape(steps, n).sum(0), rtol=1e-5)


def test_block_pointers_and_casts_drop_the_const_as_in_triton():
    rng = np.random.default_rng(5)
    x, _, n = _inputs(rng, 40)
    want = x.astype(np.float64) + 1
    kernels.block_pointer_from_const_kernel.interpret[(3,)](x, n, BLOCK=BLOCK)
    np.testing.assert_allclose(x, want, rtol=1e-6)
    x, _, n = _inputs(rng, 40)
    want = x.astype(np.float64) * 3
    kernels.cast_away_const_kernel.interpret[(3,)](x, n, BLOCK=BLOCK)
    np.testing.assert_allclose(x, want, rtol=1e-6)


def test_const_on_a_helper_or_integer_parameter_changes_nothing():
    rng = np.random.default_rng(6)
    x, y, n = _inputs(rng)
    kernels.const_on_helper_parameter_kernel.interpret[(3,)](x, y, n, BLOCK=BLOCK)
    np.testing.assert_allclose(y, x.astype(np.float64) * 2, rtol=1e-6)
    x, y, n = _inputs(rng)
    kernels.const_on_integer_parameter_kernel.interpret[(3,)](x, y, n, BLOCK=BLOCK)
    np.testing.assert_allclose(y, x.astype(np.float64) + n, rtol=1e-6)


ACCEPTED = [
    (kernels.scaled_copy_kernel, lambda x, y, n: (x, y, n, 1.5)),
    (kernels.walk_const_pointer_kernel, lambda x, y, n: (x, y, n, 3)),
    (kernels.block_pointer_from_const_kernel, lambda x, y, n: (x, n)),
    (kernels.cast_away_const_kernel, lambda x, y, n: (x, n)),
    (kernels.const_on_helper_parameter_kernel, lambda x, y, n: (x, y, n)),
    (kernels.const_on_integer_parameter_kernel, lambda x, y, n: (x, y, n)),
]


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")
@pytest.mark.parametrize("kernel, args", ACCEPTED, ids=[a[0].__name__ for a in ACCEPTED])
def test_kernels_with_const_pointers_compile_without_warnings(kernel, args):
    x, y, n = _inputs(np.random.default_rng(7))
    src = kernel.cuda_source(*args(x, y, n), BLOCK=BLOCK)
    for arch in ("sm_80", "sm_90a"):
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


def test_tl_const_on_the_inputs_of_the_example_matmul_changes_no_generated_code(tmp_path, monkeypatch):
    """A kernel that only reads through its inputs: the read-only analysis already declares them `const`, so
    annotating them `tl.const` must leave every decision (pipelining, TMA, wgmma) and the C text as it was."""
    import importlib.util
    from pathlib import Path
    examples = Path(__file__).resolve().parent.parent / "examples"
    monkeypatch.syspath_prepend(str(examples))          # the example imports its `_harness`
    source = (examples / "matmul.py").read_text()
    annotated = source.replace("def matmul_kernel(a_ptr, b_ptr,", "def matmul_kernel(a_ptr: tl.const, b_ptr: tl.const,")
    assert annotated != source
    (tmp_path / "matmul_const.py").write_text(annotated)
    spec = importlib.util.spec_from_file_location("matmul_const", tmp_path / "matmul_const.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import examples.matmul as plain
    m, n, k = 300, 200, 128
    a, b = np.zeros((m, k), np.float16), np.zeros((k, n), np.float16)
    c = np.zeros((m, n), np.float16)
    args = (a, b, c, m, n, k, k, 1, n, 1, n, 1)
    config = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, ACTIVATION="", num_warps=4, num_stages=4)
    for arch in ("sm_80", "sm_90a"):
        annotated_lines = module.matmul_kernel.cuda_source(*args, arch=arch, **config).splitlines()
        plain_lines = plain.matmul_kernel.cuda_source(*args, arch=arch, **config).splitlines()
        # the header names the file and the parameters' types; everything after it is the same
        assert "a_ptr const_ptr<fp16>" in annotated_lines[2] and "a_ptr ptr<fp16>" in plain_lines[2]
        assert annotated_lines[3:] == plain_lines[3:]
