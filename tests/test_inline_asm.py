"""`tl.inline_asm_elementwise` (parse/semantic_inline_asm.py, emit_cuda/inline_asm.py): the kernels of
`inline_asm_kernels.py` compile through NVRTC for sm_80 and sm_90a with the asm text translated to CUDA's
syntax and the operands packed as Triton packs them; mistakes are located errors; the interpreter refuses (it
cannot run PTX, as Triton's cannot). The GPU tests (test_gpu_inline_asm.py) check the values."""
import numpy as np
import pytest

import inline_asm_kernels as ak
import transpiler
import transpiler.language as tl
from transpiler.emit_cuda.inline_asm import ptx_text
from transpiler.runtime.compiler import compile_offline, nvrtc_available

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC and CUDA headers not installed")


def cases(rng, n=1000):
    x = rng.standard_normal(n).astype(np.float32) * 4
    xi, yi = rng.integers(-1000, 1000, n).astype(np.int32), rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(0, 256, n).astype(np.uint8)
    x64 = x.astype(np.float64)
    gelu = 0.5 * x64 * (1 + np.tanh(0.7978845608028654 * (x64 + 0.044715 * x64 ** 3)))
    softplus = np.where(x64 > 15, x64, np.log2(1 + np.exp2(x64)))
    out = lambda dt: np.full(n, np.nan if np.dtype(dt).kind == "f" else -7, dt)  # noqa: E731
    return {
        "gelu": (ak.gelu_tanh_asm_kernel, [x, out(np.float32), n], [1], [gelu], dict(rtol=2e-3, atol=2e-3)),
        "softplus": (ak.softplus_asm_kernel, [x, out(np.float32), n], [1], [softplus], dict(rtol=2e-3, atol=2e-3)),
        "unpack": (ak.unpack_bytes_kernel, [b, out(np.int16), n], [1], [b.astype(np.int16)], dict(rtol=0, atol=0)),
        "two-results": (ak.two_results_kernel, [xi, yi, out(np.int32), out(np.int32), n], [2, 3],
                        [np.minimum(xi, yi), np.maximum(xi, yi)], dict(rtol=0, atol=0)),
    }


NAMES = list(cases(np.random.default_rng(0)))
BLOCK = 1024     # 8 elements per thread with 4 warps: pack=4 groups them in pairs of asm runs


@needs_nvrtc
@pytest.mark.parametrize("name", NAMES)
def test_inline_asm_kernels_compile_without_warnings(name):
    kernel, args = cases(np.random.default_rng(1))[name][:2]
    for arch in ("sm_80", "sm_90a"):
        src = kernel.cuda_source(*args, BLOCK=BLOCK, arch=arch)
        assert "asm(" in src
        result = compile_offline(src, arch)
        assert not result.warnings and result.spill_bytes == 0, result.log


def test_asm_text_is_translated_to_cuda_syntax():
    text = ptx_text("mov.u32 $0, %laneid; // $$1\nadd.s32 $10, $1, \"x\";")
    assert "%0" in text and "%%laneid" in text and "$1" in text and "%10" in text and "\\n" in text
    assert '\\"x\\"' in text and text.startswith("{")


def test_four_bytes_share_one_input_register_low_byte_first():
    kernel, args = cases(np.random.default_rng(2))["unpack"][:2]
    src = kernel.cuda_source(*args, BLOCK=BLOCK)
    assert "<< 8)" in src and "<< 24)" in src and "asm_out1 >> 16" in src


def test_the_interpreter_refuses_inline_asm():
    kernel, args = cases(np.random.default_rng(3))["gelu"][:2]
    with pytest.raises(transpiler.UnsupportedSyntaxError, match="interpreter cannot"):
        kernel.interpret[(1,)](*args, BLOCK=BLOCK)


@transpiler.jit
def _bad_asm(X, Y, CONSTRAINTS: tl.constexpr, PACK: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Y + tl.arange(0, BLOCK), tl.inline_asm_elementwise("mov.b32 $0, $1;", CONSTRAINTS, [x],
                                                                dtype=tl.float32, is_pure=True, pack=PACK))


@pytest.mark.parametrize("constraints,pack,message", [("=r", 1, "name 1 registers"), ("r,r", 1, "must start"),
                                                      ("=r,=r", 1, "without '='"), ("=q,r", 1, "not supported yet"),
                                                      ("=r,r", 3, "power of two"), ("=h,r", 1, "cannot hold")])
def test_constraint_mistakes_are_located_errors(constraints, pack, message):
    x, y = np.zeros(64, np.float32), np.zeros(64, np.float32)
    with pytest.raises(transpiler.TranspilerError, match=message) as info:
        _bad_asm.cuda_source(x, y, CONSTRAINTS=constraints, PACK=pack, BLOCK=64)
    assert info.value.loc is not None


def test_pack_larger_than_a_threads_elements_is_refused():
    b, out = np.zeros(32, np.uint8), np.zeros(32, np.int16)
    with pytest.raises(transpiler.UnsupportedSyntaxError, match="not a multiple of 4"):
        ak.unpack_bytes_kernel.cuda_source(b, out, 32, BLOCK=32)
