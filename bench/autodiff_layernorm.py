"""The layernorm forward whose derived backward bench/autodiff.py times: the tutorial's math (fp16 in, fp32
compute, one block per row), in our dialect; it saves nothing (the derived backward recomputes mean and 1/std)."""
import transpiler
import transpiler.language as tl


@transpiler.jit
def layernorm_fwd(X, W, B, Y, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    b = tl.load(B + cols, mask=mask).to(tl.float32)
    tl.store(Y + row * stride + cols, xc * rstd * w + b, mask=mask)
