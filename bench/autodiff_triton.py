"""Hand-written Triton backwards, the baselines of bench/autodiff.py (written for this bench, in real Triton).

- `giou_backward_kernel`: d sum(grad_loss * loss) / d pred of examples/giou_loss.py's loss, derived by hand:
  the forward's values recomputed per box, the chain rule written out (a min/max tie gives each side half, as
  torch and our derived backward do), the four gradient fields stored.
- `layernorm_forward_kernel` (saves mean and 1/std), `layernorm_backward_dx_kernel` (dx per row, and dw, db
  partial sums atomically added into GROUPS rows of a buffer, row r into group r % GROUPS) and
  `layernorm_backward_dwdb_kernel` (sums the groups): the layernorm tutorial's backward math, with the tutorial's
  per-group lock replaced by atomic adds into the group's row.
"""
import triton
import triton.language as tl


@triton.jit
def _routed(chosen, tie, g):
    """The gradient of a min/max operand: all of `g` where it is the chosen side, half on a tie (torch's rule,
    which the float64 reference follows; fp32 boxes tie often enough to show)."""
    return tl.where(chosen, g, tl.where(tie, 0.5 * g, 0.0))


@triton.jit
def giou_backward_kernel(PRED, TARGET, GRAD_LOSS, GRAD_PRED, n_boxes, eps, BLOCK: tl.constexpr):
    box = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = box < n_boxes
    pl = tl.load(PRED + 4 * box + 0, mask=live, other=0.0).to(tl.float32)
    pt = tl.load(PRED + 4 * box + 1, mask=live, other=0.0).to(tl.float32)
    pr = tl.load(PRED + 4 * box + 2, mask=live, other=0.0).to(tl.float32)
    pb = tl.load(PRED + 4 * box + 3, mask=live, other=0.0).to(tl.float32)
    tl_ = tl.load(TARGET + 4 * box + 0, mask=live, other=0.0).to(tl.float32)
    tt = tl.load(TARGET + 4 * box + 1, mask=live, other=0.0).to(tl.float32)
    tr = tl.load(TARGET + 4 * box + 2, mask=live, other=0.0).to(tl.float32)
    tb = tl.load(TARGET + 4 * box + 3, mask=live, other=0.0).to(tl.float32)
    g = tl.load(GRAD_LOSS + box, mask=live, other=0.0)
    iw_raw = tl.minimum(pr, tr) - tl.maximum(pl, tl_)
    ih_raw = tl.minimum(pb, tb) - tl.maximum(pt, tt)
    iw = tl.maximum(iw_raw, 0.0)
    ih = tl.maximum(ih_raw, 0.0)
    inter = iw * ih
    union = (pr - pl) * (pb - pt) + (tr - tl_) * (tb - tt) - inter
    um = tl.maximum(union, eps)
    ew = tl.maximum(pr, tr) - tl.minimum(pl, tl_)
    eh = tl.maximum(pb, tb) - tl.minimum(pt, tt)
    enc = ew * eh
    em = tl.maximum(enc, eps)
    iou = inter / um
    frac = (enc - union) / em
    dgiou = tl.where(tb > 0, -g, 0.0)
    # giou = iou - frac
    d_inter = dgiou / um
    d_union = tl.where(union > eps, -dgiou * iou / um, 0.0) + dgiou / em
    d_enc = -dgiou / em + tl.where(enc > eps, dgiou * frac / em, 0.0)
    d_inter -= d_union
    d_iw = _routed(iw_raw > 0, iw_raw == 0, d_inter * ih)
    d_ih = _routed(ih_raw > 0, ih_raw == 0, d_inter * iw)
    d_ew = d_enc * eh
    d_eh = d_enc * ew
    wp = pr - pl
    hp = pb - pt
    d_pr = d_union * hp + _routed(pr < tr, pr == tr, d_iw) + _routed(pr > tr, pr == tr, d_ew)
    d_pl = -d_union * hp - _routed(pl > tl_, pl == tl_, d_iw) - _routed(pl < tl_, pl == tl_, d_ew)
    d_pb = d_union * wp + _routed(pb < tb, pb == tb, d_ih) + _routed(pb > tb, pb == tb, d_eh)
    d_pt = -d_union * wp - _routed(pt > tt, pt == tt, d_ih) - _routed(pt < tt, pt == tt, d_eh)
    tl.store(GRAD_PRED + 4 * box + 0, d_pl, mask=live)
    tl.store(GRAD_PRED + 4 * box + 1, d_pt, mask=live)
    tl.store(GRAD_PRED + 4 * box + 2, d_pr, mask=live)
    tl.store(GRAD_PRED + 4 * box + 3, d_pb, mask=live)


@triton.jit
def layernorm_forward_kernel(X, W, B, Y, MEAN, RSTD, stride, n_cols, eps, BLOCK: tl.constexpr):
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
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)


@triton.jit
def layernorm_backward_dx_kernel(X, W, DY, DX, MEAN, RSTD, DW_PARTIAL, DB_PARTIAL, stride, n_cols,
                                 GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(MEAN + row)
    rstd = tl.load(RSTD + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    tl.store(DX + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
    group = row % GROUPS
    tl.atomic_add(DW_PARTIAL + group * n_cols + cols, dy * xhat, mask=mask, sem="relaxed")
    tl.atomic_add(DB_PARTIAL + group * n_cols + cols, dy, mask=mask, sem="relaxed")


@triton.jit
def layernorm_backward_dwdb_kernel(DW_PARTIAL, DB_PARTIAL, DW, DB, n_cols, GROUPS: tl.constexpr,
                                   BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    dw = tl.zeros((BLOCK_N,), tl.float32)
    db = tl.zeros((BLOCK_N,), tl.float32)
    for g in range(GROUPS):
        dw += tl.load(DW_PARTIAL + g * n_cols + cols, mask=mask, other=0.0)
        db += tl.load(DB_PARTIAL + g * n_cols + cols, mask=mask, other=0.0)
    tl.store(DW + cols, dw, mask=mask)
    tl.store(DB + cols, db, mask=mask)
