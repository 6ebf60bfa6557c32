"""Generated C names are unique by construction: kernels whose names used to meet compile with NVRTC.

The emitter derives C names from Python names and from its own families (`red_acc` + an operand index, layout
thread bases `L0_dim0`, template locals `r`, `chunk`, ...). Each kernel below is written as a user would write
it but picks names that met one of those: NVRTC rejected the `.cu` (a name declared twice) or, worse, a
template's loop counter hid a parameter of the same name. The values are checked on the interpreter against
NumPy, and the generated source with NVRTC.
"""
import re

import numpy as np
import pytest

import transpiler
import transpiler.language as tl
from transpiler.emit_cuda.names import CNames
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


@transpiler.jit
def many_argmax_kernel(X, VALS, IDXS, BLOCK: tl.constexpr):
    """Twelve two-operand reductions and twelve one-operand ones, all named `v`: each pair of accumulator
    families `v_acc_<n>0`, `v_acc_<n>1` meets a later one-operand `v_acc_<n>1` unless names are allocated."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    for i in tl.static_range(12):
        v, j = tl.max(x * (i + 1) - offs * i, axis=0, return_indices=True)
        tl.store(VALS + i, v)
        tl.store(IDXS + i, j)
        v = tl.sum(x + i, axis=0)
        tl.store(VALS + 12 + i, v)


def test_twelve_argmax_reductions_have_distinct_accumulators():
    rng = np.random.default_rng(7)
    x = rng.permutation(64).astype(np.float32)
    vals, idxs = np.full(24, np.nan, np.float32), np.full(12, -1, np.int32)
    many_argmax_kernel.interpret[(1,)](x, vals, idxs, BLOCK=64)
    offs = np.arange(64, dtype=np.float32)
    for i in range(12):
        y = x * (i + 1) - offs * i
        assert vals[i] == y.max() and idxs[i] == np.argmax(y)
        np.testing.assert_allclose(vals[12 + i], (x + i).sum(), rtol=1e-6)
    if nvrtc_available():
        src = many_argmax_kernel.cuda_source(x, vals, idxs, BLOCK=64)
        # one result register per thread: each accumulator is a scalar named after its result (`v`, `j`)
        declared = re.findall(r"^\s*(?:float|int) ([vj]\w*) = ", src, re.M)
        assert len(declared) == 36 and len(set(declared)) == 36, "an accumulator of its own per operand"
        result = compile_offline(src, "sm_90a")
        assert not result.warnings, result.log


@transpiler.jit
def template_names_kernel(X, OUT, r, lane, chunk, N, BLOCK: tl.constexpr):
    """Parameters named like the template's register counter and lane index, and locals named like the
    emitter's layout bases and shared-memory buffer."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    L0_dim0 = tl.load(X + offs, mask=m, other=0.0)
    tp_smem = L0_dim0 * r + lane
    fminf = tl.cumsum(tp_smem, axis=0) + chunk
    tl.store(OUT + offs, fminf + tl.sum(tp_smem, axis=0), mask=m)


@needs_nvrtc
def test_parameters_and_locals_named_like_emitter_names_compile_and_keep_their_values():
    rng = np.random.default_rng(3)
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    template_names_kernel.interpret[(2,)](x, out, 3.0, 2.0, 5.0, n, BLOCK=128)
    src = template_names_kernel.cuda_source(x, out, 3.0, 2.0, 5.0, n, BLOCK=128)
    assert not re.search(r"float r[,)]", src), "the parameter `r` would be hidden by the register loop's `r`"
    result = compile_offline(src, "sm_90a")
    assert not result.warnings, result.log
    for p in range(2):
        sl = slice(p * 128, min(n, p * 128 + 128))
        t = np.zeros(128, np.float64)
        t[: sl.stop - sl.start] = x[sl].astype(np.float64) * 3.0 + 2.0
        t[sl.stop - sl.start:] = 2.0       # the masked lanes load 0.0 and still take part in the scan and sum
        expected = np.cumsum(t) + 5.0 + t.sum()
        np.testing.assert_allclose(out[sl], expected[: sl.stop - sl.start], rtol=1e-5, atol=1e-4)


def test_a_derived_name_never_meets_a_handed_out_one():
    names = CNames()
    first = names.fresh("red_acc")
    family_base = names.fresh("red_acc")                  # red_acc_1
    family = [names.fresh(f"{family_base}{i}") for i in range(2)]   # red_acc_10, red_acc_11
    later = [names.fresh("red_acc") for _ in range(12)]
    handed = [first, family_base, *family, *later]
    assert len(set(handed)) == len(handed)
    assert "red_acc_10" in family
    assert names.fresh("r") != "r" and names.fresh("chunk") != "chunk" and names.fresh("fminf") != "fminf"
