"""Kernels whose derived backwards the autodiff tests check (CPU: finite differences through the interpreter,
NVRTC compiles; GPU: float64 references). Each case is a dict: kernel, args (forward arguments in order, NumPy
float64 unless said), grid, constexprs, outputs and inputs (the names differentiated), num_warps.
"""
import numpy as np

import transpiler
import transpiler.language as tl
from transpiler.language.extra import libdevice

UNARY = ["exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf", "sigmoid", "abs",
         "tanh", "expm1", "log1p", "atan", "sinh", "cosh", "tan", "floor", "neg", "cast32",
         "libdevice_exp", "libdevice_log", "libdevice_sqrt", "libdevice_rsqrt", "libdevice_sin", "libdevice_cos",
         "libdevice_erf"]
BINARY = ["add", "sub", "mul", "truediv", "div_rn", "minimum", "maximum", "where", "fma", "clamp", "pow"]


@transpiler.jit
def unary_kernel(X, OUT, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    x = tl.load(X + offs, mask=live, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "abs":
        y = tl.abs(x - 1.25)
    elif FN == "tanh":
        y = libdevice.tanh(x)
    elif FN == "expm1":
        y = libdevice.expm1(x)
    elif FN == "log1p":
        y = libdevice.log1p(x)
    elif FN == "atan":
        y = libdevice.atan(x)
    elif FN == "sinh":
        y = libdevice.sinh(x)
    elif FN == "cosh":
        y = libdevice.cosh(x)
    elif FN == "tan":
        y = libdevice.tan(x)
    elif FN == "libdevice_exp":
        y = libdevice.exp(x)
    elif FN == "libdevice_log":
        y = libdevice.log(x)
    elif FN == "libdevice_sqrt":
        y = libdevice.sqrt(x)
    elif FN == "libdevice_rsqrt":
        y = libdevice.rsqrt(x)
    elif FN == "libdevice_sin":
        y = libdevice.sin(x)
    elif FN == "libdevice_cos":
        y = libdevice.cos(x)
    elif FN == "libdevice_erf":
        y = libdevice.erf(x)
    elif FN == "floor":
        y = tl.floor(x * 3.0) + x * x
    elif FN == "neg":
        y = -x * x
    else:
        y = (x.to(tl.float32) * 2.0).to(tl.float64) + x
    tl.store(OUT + offs, y, mask=live)


@transpiler.jit
def binary_kernel(X, Y, OUT, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    x = tl.load(X + offs, mask=live, other=1.0)
    y = tl.load(Y + offs, mask=live, other=2.0)
    if FN == "add":
        r = x + y
    elif FN == "sub":
        r = x - y
    elif FN == "mul":
        r = x * y
    elif FN == "truediv":
        r = x / y
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "minimum":
        r = tl.minimum(x, y)
    elif FN == "maximum":
        r = tl.maximum(x, y)
    elif FN == "where":
        r = tl.where(x > y, x * y, x - y)
    elif FN == "fma":
        r = tl.fma(x, y, x * x)
    elif FN == "clamp":
        r = tl.clamp(x, y - 0.5, y + 0.5)
    else:
        r = libdevice.pow(x, y)
    tl.store(OUT + offs, r, mask=live)


@transpiler.jit
def row_reduce_kernel(X, OUT, n_cols, stride, FN: tl.constexpr, BLOCK: tl.constexpr):
    """One row per program: sum, mean, max, min, softmax, log_softmax, layernorm and rmsnorm over the row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    live = cols < n_cols
    if FN == "max" or FN == "softmax" or FN == "log_softmax":
        x = tl.load(X + row * stride + cols, mask=live, other=-float("inf"))
    elif FN == "min":
        x = tl.load(X + row * stride + cols, mask=live, other=float("inf"))
    else:
        x = tl.load(X + row * stride + cols, mask=live, other=0.0)
    if FN == "sum":
        tl.store(OUT + row, tl.sum(x * x, axis=0))
    elif FN == "mean":
        tl.store(OUT + row, tl.sum(x, axis=0) / n_cols)
    elif FN == "max":
        tl.store(OUT + row, tl.max(x, axis=0))
    elif FN == "min":
        tl.store(OUT + row, tl.min(x, axis=0) * 2.0)
    elif FN == "softmax":
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(OUT + row * stride + cols, e / tl.sum(e, axis=0), mask=live)
    elif FN == "log_softmax":
        z = x - tl.max(x, axis=0)
        lse = tl.log(tl.sum(tl.exp(z), axis=0))
        tl.store(OUT + row * stride + cols, z - lse, mask=live)
    elif FN == "layernorm":
        mean = tl.sum(x, axis=0) / n_cols
        diff = tl.where(live, x - mean, 0.0)
        var = tl.sum(diff * diff, axis=0) / n_cols
        tl.store(OUT + row * stride + cols, diff / tl.sqrt(var + 1e-5), mask=live)
    else:
        ms = tl.sum(x * x, axis=0) / n_cols
        tl.store(OUT + row * stride + cols, x * tl.rsqrt(ms + 1e-6), mask=live)


@transpiler.jit
def layernorm_kernel(X, W, B, Y, stride, n_cols, eps, BLOCK: tl.constexpr):
    """The forward of Triton's layernorm tutorial in one block per row, with weight and bias."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y, mask=mask)


@transpiler.jit
def bias_2d_kernel(X, BIAS, OUT, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    """A 2-D grid of tiles and a bias indexed by the column tile only: programs along axis 0 share it."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    live = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride + rn[None, :], mask=live, other=0.0)
    b = tl.load(BIAS + rn, mask=rn < N, other=0.0)
    tl.store(OUT + rm[:, None] * stride + rn[None, :], tl.sin(x + b[None, :]) * x, mask=live)


@transpiler.jit
def broadcast_kernel(X, S, V, OUT, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    """2-D block: a per-row scalar and a per-column vector broadcast over the block, a column sum."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    live = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(X + rows[:, None] * n_cols + cols[None, :], mask=live, other=0.0)
    s = tl.load(S + rows, mask=rows < n_rows, other=0.0)
    v = tl.load(V + cols, mask=cols < n_cols, other=0.0)
    scale = tl.load(S + 0)
    y = x * s[:, None] + v[None, :] * scale
    tl.store(OUT + rows[:, None] * n_cols + cols[None, :], y * y, mask=live)


@transpiler.jit
def boxes_kernel(PRED, TARGET, LOSS, n_boxes, eps, BLOCK: tl.constexpr):
    """GIoU in float64 (four field loads per box), for the finite-difference check at 1e-6."""
    box = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = box < n_boxes
    pl = tl.load(PRED + 4 * box + 0, mask=live, other=0.0)
    pt = tl.load(PRED + 4 * box + 1, mask=live, other=0.0)
    pr = tl.load(PRED + 4 * box + 2, mask=live, other=1.0)
    pb = tl.load(PRED + 4 * box + 3, mask=live, other=1.0)
    tl_ = tl.load(TARGET + 4 * box + 0, mask=live, other=0.0)
    tt = tl.load(TARGET + 4 * box + 1, mask=live, other=0.0)
    tr = tl.load(TARGET + 4 * box + 2, mask=live, other=1.0)
    tb = tl.load(TARGET + 4 * box + 3, mask=live, other=1.0)
    inter = tl.maximum(tl.minimum(pr, tr) - tl.maximum(pl, tl_), 0.0) * \
        tl.maximum(tl.minimum(pb, tb) - tl.maximum(pt, tt), 0.0)
    union = (pr - pl) * (pb - pt) + (tr - tl_) * (tb - tt) - inter
    enclose = (tl.maximum(pr, tr) - tl.minimum(pl, tl_)) * (tl.maximum(pb, tb) - tl.minimum(pt, tt))
    giou = inter / tl.maximum(union, eps) - (enclose - union) / tl.maximum(enclose, eps)
    tl.store(LOSS + box, tl.where(tb > 0, 1.0 - giou, 0.0), mask=live)


@transpiler.jit
def loop_sum_kernel(X, W, OUT, n_cols, stride, BLOCK: tl.constexpr):
    """A runtime loop over column blocks with a carried accumulator (reverse without replay)."""
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + cols, mask=cols < n_cols, other=0.0)
        w = tl.load(W + cols, mask=cols < n_cols, other=0.0)
        acc += tl.exp(x) * w
    tl.store(OUT + row, tl.sum(acc, axis=0))


@transpiler.jit
def loop_blocks_kernel(X, Y, OUT, n, ITERS: tl.constexpr, BLOCK: tl.constexpr, OVERLAP: tl.constexpr):
    """A runtime loop over ITERS blocks per program: the iterations' blocks are disjoint (plain gradient writes
    inside the loop), or with OVERLAP consecutive iterations share half a block (atomic adds)."""
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float64)
    for i in range(0, ITERS):
        if OVERLAP:
            offs = pid * ITERS * BLOCK + i * (BLOCK // 2) + tl.arange(0, BLOCK)
        else:
            offs = (pid * ITERS + i) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n, other=0.0)
        y = tl.load(Y + offs, mask=offs < n, other=0.0)
        acc += tl.sin(x) * y
    tl.store(OUT + pid * BLOCK + tl.arange(0, BLOCK), acc)


@transpiler.jit
def recurrence_kernel(X, W, OUT, steps, n, BLOCK: tl.constexpr):
    """Non-linear carried state and a runtime if in the loop (reverse with per-iteration replay)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(X + offs, mask=m, other=0.0)
    w = tl.load(W + offs, mask=m, other=0.0)
    for i in range(0, steps):
        h = tl.sin(h * w) + tl.where(h > 0, h, 0.5 * h)
        if i % 2 == 1:
            h = h * 0.75
    tl.store(OUT + offs, h, mask=m)


@transpiler.jit
def recurrence_bounds_kernel(X, W, OUT, n, STEPS: tl.constexpr, BY_PROGRAM: tl.constexpr, BLOCK: tl.constexpr):
    """Non-linear carried state, a block and a scalar, over a constant trip count (STEPS) or one depending on
    the program (tape or replay: the cost decision, and bounds a tape cannot be sized by)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(X + offs, mask=m, other=0.0)
    w = tl.load(W + offs, mask=m, other=0.0)
    s = tl.sum(w, axis=0) * 0.1
    for i in range(0, STEPS + (tl.program_id(0) if BY_PROGRAM else 0)):
        h = tl.sin(h * w + s)
        s = tl.cos(s) * 0.5 + tl.sum(h * w, axis=0) * 0.01
    tl.store(OUT + offs, h + s, mask=m)


@transpiler.jit
def static_loop_kernel(X, OUT, n, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    """tl.static_range unrolled, a constexpr if folded, a cumsum."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(X + offs, mask=m, other=0.0)
    for k in tl.static_range(STEPS):
        if k % 2 == 0:
            h = h * h * 0.5 + 0.25
        else:
            h = tl.cos(h)
    tl.store(OUT + offs, tl.cumsum(h, axis=0), mask=m)


@transpiler.jit
def dot_act_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A fused dot + activation (an MLP layer): C = gelu-like(A @ B), both operands differentiated."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    z = tl.dot(a, b)
    y = z * tl.sigmoid(1.702 * z)
    tl.store(C + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))


@transpiler.jit
def dot_loop_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A matmul with a K loop (the accumulator carried), then tanh."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float64)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], libdevice.tanh(acc), mask=(rm[:, None] < M) & (rn[None, :] < N))


@transpiler.jit
def dot_pointer_loop_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A matmul as Triton writes it: pointers advanced by the loop (carried), the accumulator carried (the
    gradient through the carried pointers is refused, not supported yet)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = B + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), tl.float64)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k0 < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(C + rm[:, None] * N + rn[None, :], acc * acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _positive(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


def cases(rng):
    out = []
    n = 37
    for fn in UNARY:
        x = _positive(rng, n) if fn in ("log", "log2", "sqrt", "sqrt_rn", "rsqrt", "log1p", "libdevice_log",
                                        "libdevice_sqrt", "libdevice_rsqrt") else \
            rng.uniform(-1.2, 1.2, n)
        if fn == "floor":
            x = x + 0.011       # stay clear of the jumps of floor(3x)
        case = dict(kernel=unary_kernel, args=[x, np.zeros(n), n], grid=(3,), constexprs=dict(FN=fn, BLOCK=16),
                    outputs=["OUT"], inputs=["X"])
        if fn == "cast32":
            case["step"] = 0.5      # linear through an fp32 rounding: a wide step keeps the rounding out
        out.append((f"unary_{fn}", case))
    for fn in BINARY:
        x, y = (_positive(rng, n), _positive(rng, n)) if fn in ("pow", "truediv", "div_rn") else \
            (rng.normal(size=n), rng.normal(size=n))
        out.append((f"binary_{fn}", dict(kernel=binary_kernel, args=[x, y, np.zeros(n), n], grid=(3,),
                                         constexprs=dict(FN=fn, BLOCK=16), outputs=["OUT"], inputs=["X", "Y"])))
    rows, cols = 3, 29
    for fn in ["sum", "mean", "max", "min", "softmax", "log_softmax", "layernorm", "rmsnorm"]:
        per_row = fn in ("sum", "mean", "max", "min")
        o = np.zeros(rows) if per_row else np.zeros((rows, cols))
        out.append((f"row_{fn}", dict(kernel=row_reduce_kernel, args=[rng.normal(size=(rows, cols)), o, cols, cols],
                                      grid=(rows,), constexprs=dict(FN=fn, BLOCK=32), outputs=["OUT"],
                                      inputs=["X"])))
    # Rows overlapping in memory (stride 10 < 29 columns): the runtime test takes the atomic adds.
    out.append(("row_sum_overlapping_rows", dict(kernel=row_reduce_kernel, args=[rng.normal(size=49), np.zeros(rows),
                                                                                cols, 10],
                                                 grid=(rows,), constexprs=dict(FN="sum", BLOCK=32), outputs=["OUT"],
                                                 inputs=["X"])))
    out.append(("layernorm_affine", dict(
        kernel=layernorm_kernel, args=[rng.normal(size=(rows, cols)), rng.normal(size=cols), rng.normal(size=cols),
                                       np.zeros((rows, cols)), cols, cols, 1e-5],
        grid=(rows,), constexprs=dict(BLOCK=32), outputs=["Y"], inputs=["X", "W", "B"])))
    out.append(("bias_2d", dict(
        kernel=bias_2d_kernel, args=[rng.normal(size=(20, 32)), rng.normal(size=32), np.zeros((20, 32)), 20, 30, 32],
        grid=(3, 2), constexprs=dict(BM=8, BN=16), outputs=["OUT"], inputs=["X", "BIAS"])))
    out.append(("broadcast_2d", dict(
        kernel=broadcast_kernel, args=[rng.normal(size=(10, 13)), rng.normal(size=10), rng.normal(size=13),
                                       np.zeros((10, 13)), 10, 13],
        grid=(3,), constexprs=dict(BM=4, BN=16), outputs=["OUT"], inputs=["X", "S", "V"])))
    pred, target = _boxes(rng, 45)
    out.append(("boxes_giou", dict(kernel=boxes_kernel, args=[pred, target, np.zeros(45), 45, 1e-7], grid=(3,),
                                   constexprs=dict(BLOCK=16), outputs=["LOSS"], inputs=["PRED", "TARGET"])))
    out.append(("loop_sum", dict(kernel=loop_sum_kernel, args=[rng.normal(size=(3, 37)), rng.normal(size=37),
                                                               np.zeros(3), 37, 37],
                                 grid=(3,), constexprs=dict(BLOCK=16), outputs=["OUT"], inputs=["X", "W"])))
    for overlap in (False, True):
        out.append((f"loop_blocks{'_overlapping' if overlap else ''}", dict(
            kernel=loop_blocks_kernel, args=[rng.normal(size=181), rng.normal(size=181), np.zeros(64), 181],
            grid=(4,), constexprs=dict(ITERS=3, BLOCK=16, OVERLAP=overlap), outputs=["OUT"], inputs=["X", "Y"])))
    out.append(("loop_recurrence", dict(kernel=recurrence_kernel, args=[rng.normal(size=20), rng.normal(size=20),
                                                                        np.zeros(20), 5, 20],
                                        grid=(2,), constexprs=dict(BLOCK=16), outputs=["OUT"], inputs=["X", "W"])))
    for label, steps, by_program in (("short", 3, False), ("long", 12, False), ("by_program", 3, True)):
        out.append((f"loop_recurrence_{label}", dict(
            kernel=recurrence_bounds_kernel, args=[rng.normal(size=20), rng.normal(size=20), np.zeros(20), 20],
            grid=(2,), constexprs=dict(STEPS=steps, BY_PROGRAM=by_program, BLOCK=16), outputs=["OUT"],
            inputs=["X", "W"])))
    out.append(("static_loop", dict(kernel=static_loop_kernel, args=[rng.normal(size=20), np.zeros(20), 20],
                                    grid=(2,), constexprs=dict(STEPS=3, BLOCK=16), outputs=["OUT"], inputs=["X"])))
    m, nn, k = 20, 18, 17
    out.append(("dot_activation", dict(kernel=dot_act_kernel, args=[rng.normal(size=(m, k)) * 0.3,
                                                                    rng.normal(size=(k, nn)) * 0.3,
                                                                    np.zeros((m, nn)), m, nn, k],
                                       grid=(2, 2), constexprs=dict(BM=16, BN=16, BK=32), outputs=["C"],
                                       inputs=["A", "B"])))
    out.append(("dot_loop", dict(kernel=dot_loop_kernel, args=[rng.normal(size=(m, 40)) * 0.2,
                                                               rng.normal(size=(40, nn)) * 0.2,
                                                               np.zeros((m, nn)), m, nn, 40],
                                 grid=(2, 2), constexprs=dict(BM=16, BN=16, BK=16), outputs=["C"],
                                 inputs=["A", "B"])))
    return out


def _boxes(rng, n):
    lt = rng.uniform(0, 10, (n, 2))
    size = rng.uniform(1, 4, (n, 2))
    target = np.concatenate([lt, lt + size], axis=-1)
    shift = rng.normal(0, 1.5, (n, 2))
    psize = size * rng.uniform(0.5, 1.5, (n, 2))
    pred = np.concatenate([lt + shift, lt + shift + psize], axis=-1)
    target[-5:] = -1.0      # padding (invalid: bottom <= 0), off the jump of `tb > 0` at 0 for the differences
    return pred, target
