"""Kernels using `tl.inline_asm_elementwise` the way public Triton kernels do (a fast tanh GELU, a softplus whose
asm text is a module-level constexpr built by Python, a byte unpacking with pack=4, two results from one asm),
shared by the CPU tests (NVRTC) and the GPU tests (NumPy, and Triton on the same source)."""
import transpiler
import transpiler.language as tl


def _softplus_asm(num_pack):
    template = """
        .reg .pred p;
        setp.gt.f32  p, ${in_reg}, 15.;
        @p  mov.f32  ${out_reg}, ${in_reg};
        @!p ex2.approx.ftz.f32 ${out_reg}, ${in_reg};
        @!p add.f32            ${out_reg}, ${out_reg}, 1.0;
        @!p lg2.approx.ftz.f32 ${out_reg}, ${out_reg};
    """
    return " ".join("{" + template.format(out_reg=i, in_reg=i + num_pack) + "}" for i in range(num_pack))


SOFTPLUS_ASM: tl.constexpr = tl.constexpr(_softplus_asm(1))
SOFTPLUS_CONSTRAINTS: tl.constexpr = tl.constexpr("=r,r")


@transpiler.jit
def _tanh_approx(x):
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)


@transpiler.jit
def gelu_tanh_asm_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1 + _tanh_approx(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


@transpiler.jit
def softplus_asm_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    y = tl.inline_asm_elementwise(asm=SOFTPLUS_ASM, constraints=SOFTPLUS_CONSTRAINTS, pack=1, args=[x],
                                  dtype=tl.float32, is_pure=True)
    tl.store(Y + offs, y, mask=mask)


@transpiler.jit
def unpack_bytes_kernel(B, OUT, n, BLOCK: tl.constexpr):
    """Four bytes per asm: each 32-bit output register holds two zero-extended 16-bit values (prmt)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    b = tl.load(B + offs, mask=mask, other=0)
    h = tl.inline_asm_elementwise(
        "{ prmt.b32 $0, $2, 0, 0x4140; prmt.b32 $1, $2, 0, 0x4342; }", "=r,=r,r", [b], dtype=tl.int16,
        is_pure=True, pack=4)
    tl.store(OUT + offs, h, mask=mask)


@transpiler.jit
def two_results_kernel(X, Y, LO, HI, n, BLOCK: tl.constexpr):
    """min and max of two blocks from one asm (dtype a tuple: two results), with a PTX register named `%m`."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0)
    y = tl.load(Y + offs, mask=mask, other=0)
    lo, hi = tl.inline_asm_elementwise(
        "{ .reg .s32 %m; min.s32 %m, $2, $3; mov.b32 $0, %m; max.s32 $1, $2, $3; }", "=r,=r,r,r", [x, y],
        dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    tl.store(LO + offs, lo, mask=mask)
    tl.store(HI + offs, hi, mask=mask)
