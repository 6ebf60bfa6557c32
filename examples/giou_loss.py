"""Generalized-IoU loss, forward, for object detection (the kernel of the GIoU blog post, corrected).

Boxes are [batch, n, 4] as (left, top, right, bottom), predicted and target, in fp32, fp16 or bf16. The
kernel loads them in their own dtype and computes in fp32 (no conversion pass before the kernel, which is
what the blog found to matter). One program handles BLOCK consecutive boxes of the flattened batch.

Per box pair it stores `loss = 1 - giou` (fp32) and a `valid` flag (bool). Validity rule, the blog's: a
target box is real when its bottom coordinate is > 0. Batches are padded with all-zero target boxes, whose
bottom is 0, so padding is invalid; its loss is stored as 0. The loss is the mean over valid boxes:
sum(loss) / max(number valid, 1), taken on the host.

Two departures from the blog's kernel: the intersection's width and height are clamped at 0 (the blog's
product of two negative extents makes disjoint boxes overlap), and the last block is masked, so the number
of boxes needs not be a multiple of BLOCK.

The backward is derived, not written: `giou_loss_kernel.backward` is the kernel transpiler.autodiff derives
from this forward (recomputing the forward's values, routing the gradient through each min/max to the chosen
side, writing each box's four gradient fields with plain stores, as the analysis proves every box is read by
one lane of one program). `giou_loss_backward` launches it for the mean loss; `reference_backward` is torch
autograd of the float64 reference (central differences when torch is absent).

Run: `python examples/giou_loss.py` (GPU: checked and timed, bf16 through torch; no GPU: the CPU interpreter
on small batches in fp32 and fp16).
"""
import sys

import numpy as np

import transpiler
import transpiler.language as tl

try:
    from . import _harness as H
except ImportError:  # run as a script, or loaded by bench/twins.py: the examples folder is on sys.path
    import _harness as H

BLOCK = 512
EPS = 1e-7  # keeps the two divisions finite for degenerate (zero-area) boxes


@transpiler.transpile
def giou_loss_kernel(PRED, TARGET, LOSS, VALID, n_boxes, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    box = pid * BLOCK + tl.arange(0, BLOCK)
    live = box < n_boxes
    # Four loads per box, written as the blog writes them. Their addresses are consecutive, so the compiler
    # can merge them into one 16-byte load per box (fp32; 8 bytes for fp16 and bf16).
    p_left = tl.load(PRED + 4 * box + 0, mask=live, other=0.0).to(tl.float32)
    p_top = tl.load(PRED + 4 * box + 1, mask=live, other=0.0).to(tl.float32)
    p_right = tl.load(PRED + 4 * box + 2, mask=live, other=0.0).to(tl.float32)
    p_bottom = tl.load(PRED + 4 * box + 3, mask=live, other=0.0).to(tl.float32)
    t_left = tl.load(TARGET + 4 * box + 0, mask=live, other=0.0).to(tl.float32)
    t_top = tl.load(TARGET + 4 * box + 1, mask=live, other=0.0).to(tl.float32)
    t_right = tl.load(TARGET + 4 * box + 2, mask=live, other=0.0).to(tl.float32)
    t_bottom = tl.load(TARGET + 4 * box + 3, mask=live, other=0.0).to(tl.float32)

    area_p = (p_right - p_left) * (p_bottom - p_top)
    area_t = (t_right - t_left) * (t_bottom - t_top)
    inter_w = tl.maximum(tl.minimum(p_right, t_right) - tl.maximum(p_left, t_left), 0.0)
    inter_h = tl.maximum(tl.minimum(p_bottom, t_bottom) - tl.maximum(p_top, t_top), 0.0)
    inter = inter_w * inter_h
    union = area_p + area_t - inter
    iou = inter / tl.maximum(union, eps)

    # The smallest box enclosing both.
    enclose_w = tl.maximum(p_right, t_right) - tl.minimum(p_left, t_left)
    enclose_h = tl.maximum(p_bottom, t_bottom) - tl.minimum(p_top, t_top)
    enclose = enclose_w * enclose_h
    giou = iou - (enclose - union) / tl.maximum(enclose, eps)

    valid = t_bottom > 0
    tl.store(LOSS + box, tl.where(valid, 1.0 - giou, 0.0), mask=live)
    tl.store(VALID + box, valid, mask=live)


def giou_loss_per_box(pred, target, out=None):
    """Per box pair `(loss, valid)`, each of shape pred.shape[:-1]; `out` may give both, preallocated."""
    assert tuple(pred.shape) == tuple(target.shape) and pred.shape[-1] == 4, "boxes must be [..., 4], same shape"
    assert H.is_contiguous(pred) and H.is_contiguous(target), "boxes must be contiguous"
    n_boxes = H.numel(pred) // 4
    shape = tuple(pred.shape[:-1])
    loss, valid = out or (H.empty(pred, shape, "float32"), H.empty(pred, shape, "bool"))
    grid = (transpiler.cdiv(n_boxes, BLOCK),)
    H.launcher(giou_loss_kernel, pred)[grid](pred, target, loss, valid, n_boxes, EPS, BLOCK=BLOCK, num_warps=4)
    return loss, valid


def giou_loss(pred, target) -> float:
    """Mean GIoU loss over the valid (non-padding) boxes; the final sum and division happen on the host."""
    loss, valid = giou_loss_per_box(pred, target)
    return float(loss.sum()) / max(int(valid.sum()), 1)


def giou_loss_per_box_backward(pred, target, grad_loss, grad_pred=None):
    """The gradient of sum(grad_loss * loss) with respect to `pred`, by the derived backward kernel; added
    into `grad_pred` when given (torch's `.grad` convention), else into a new zero array."""
    n_boxes = H.numel(pred) // 4
    if grad_pred is None:
        grad_pred = H.empty(pred, tuple(pred.shape))
        grad_pred[...] = 0
    loss_like, valid_like = H.empty(pred, grad_loss.shape, "float32"), H.empty(pred, grad_loss.shape, "bool")
    grid = (transpiler.cdiv(n_boxes, BLOCK),)
    H.launcher(giou_loss_kernel.backward, pred)[grid](pred, target, loss_like, valid_like, n_boxes, EPS,
                                                      BLOCK=BLOCK, num_warps=4,
                                                      grads={"PRED": grad_pred, "LOSS": grad_loss})
    return grad_pred


def giou_loss_backward(pred, target):
    """The gradient of the mean loss `giou_loss(pred, target)` with respect to `pred`."""
    _, valid = giou_loss_per_box(pred, target)
    n_valid = max(int(valid.sum()), 1)
    grad_loss = valid.astype("float32") / n_valid if H.library(pred) != "torch" else valid.float() / n_valid
    return giou_loss_per_box_backward(pred, target, grad_loss)


def reference_backward(pred, target, grad_loss, eps=EPS):
    """d sum(grad_loss * loss) / d pred in float64: torch autograd of `reference`'s formula, or central
    differences of `reference` when torch is not installed (boxes are independent: 8 evaluations)."""
    p, t, g = H.to_float64(pred), H.to_float64(target), H.to_float64(grad_loss)
    try:
        import torch
    except ImportError:
        grad = np.zeros_like(p)
        for k in range(4):
            step = np.zeros_like(p)
            step[..., k] = 1e-6
            grad[..., k] = g * (reference(p + step, t, eps)[0] - reference(p - step, t, eps)[0]) / 2e-6
        return grad
    pt = torch.tensor(p, requires_grad=True)
    loss, _ = reference(pt, torch.tensor(t), eps, xp=torch)
    (loss * torch.tensor(g)).sum().backward()
    return pt.grad.numpy()


def reference(pred, target, eps=EPS, xp=np):
    """(loss, valid) per box pair in float64, by the same formula (`xp=torch` on float64 CPU tensors: the
    same formula under torch autograd)."""
    if xp is np:
        pred, target = H.to_float64(pred), H.to_float64(target)
    pl, pt, pr, pb = (pred[..., k] for k in range(4))
    tl_, tt, tr, tb = (target[..., k] for k in range(4))
    lo = 0.0 if xp is np else xp.tensor(0.0, dtype=pred.dtype, device=pred.device)
    e = eps if xp is np else xp.tensor(eps, dtype=pred.dtype, device=pred.device)
    inter_w = xp.maximum(xp.minimum(pr, tr) - xp.maximum(pl, tl_), lo)
    inter = inter_w * xp.maximum(xp.minimum(pb, tb) - xp.maximum(pt, tt), lo)
    union = (pr - pl) * (pb - pt) + (tr - tl_) * (tb - tt) - inter
    enclose = (xp.maximum(pr, tr) - xp.minimum(pl, tl_)) * (xp.maximum(pb, tb) - xp.minimum(pt, tt))
    giou = inter / xp.maximum(union, e) - (enclose - union) / xp.maximum(enclose, e)
    valid = tb > 0
    return xp.where(valid, 1.0 - giou, 0.0 * giou), valid


def random_boxes(rng, batch: int, n: int, padded_fraction: float = 0.25):
    """Predictions near their targets (some overlapping, some disjoint) and targets padded with zeros."""
    left_top = rng.uniform(0, 100, (batch, n, 2))
    size = rng.uniform(1, 40, (batch, n, 2))
    target = np.concatenate([left_top, left_top + size], axis=-1)
    shift = rng.normal(0, 10, (batch, n, 2))
    pred_size = size * rng.uniform(0.5, 1.5, (batch, n, 2))
    pred = np.concatenate([left_top + shift, left_top + shift + pred_size], axis=-1)
    n_real = rng.integers(int(n * (1 - padded_fraction)), n + 1, batch)
    target[np.arange(n)[None, :] >= n_real[:, None]] = 0.0  # padding: all four coordinates 0
    return pred, target


def run_case(lib, dtype="float32", batch=3, n=100, timed=False) -> str:
    pred_host, target_host = random_boxes(np.random.default_rng(batch * n), batch, n)
    pred, target = H.to_library(pred_host, lib, dtype), H.to_library(target_host, lib, dtype)
    out = (H.poison(H.empty(pred, (batch, n), "float32")), H.poison(H.empty(pred, (batch, n), "bool")))
    giou_loss_per_box(pred, target, out=out)
    want_loss, want_valid = reference(pred, target)  # from the inputs as rounded to `dtype`
    H.check_equal("valid", out[1], want_valid)
    # The kernel computes in fp32 whatever the input dtype, on inputs rounded once like the reference's.
    error = H.check_close("loss", out[0], want_loss, "float32")
    mean = giou_loss(pred, target)
    want_mean = want_loss.sum() / max(want_valid.sum(), 1)
    if not np.isclose(mean, want_mean, rtol=1e-4):  # a float32 sum of many terms
        raise H.Mismatch(f"mean loss {mean} != {want_mean}")
    line = f"giou_loss {dtype:8} {batch}x{n}x4{'':6} max abs error {error:.1e} mean loss {mean:.4f}"
    if timed:
        nbytes = batch * n * (2 * 4 * H.ITEMSIZE[dtype] + 4 + 1)
        line += H.throughput(nbytes, H.gpu_time_ms(lambda: giou_loss_per_box(pred, target, out=out)))
    # The derived backward, for incoming gradients drawn at random, against torch autograd of the reference.
    grad_loss = H.to_library(np.random.default_rng(n).normal(size=(batch, n)), lib, "float32")
    grad_pred = H.poison(H.empty(pred, tuple(pred.shape)))
    grad_pred[...] = 0
    giou_loss_per_box_backward(pred, target, grad_loss, grad_pred)
    want = reference_backward(pred, target, grad_loss)
    scale = max(float(np.abs(want).max()), 1e-30)
    worst = float(np.abs(H.to_float64(grad_pred) - want).max()) / scale
    # fp32 arithmetic through divisions; fp16/bf16 gradients are rounded once when stored.
    if worst > {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1e-2}[dtype]:
        raise H.Mismatch(f"d loss / d pred: relative error {worst:.1e} against torch autograd of the reference")
    line += f" | backward rel error {worst:.1e}"
    if timed:
        nbytes = batch * n * (3 * 4 * H.ITEMSIZE[dtype] + 4)     # pred, target, grad_loss read; grad_pred r+w
        line += H.throughput(nbytes, H.gpu_time_ms(lambda: giou_loss_per_box_backward(pred, target, grad_loss,
                                                                                      grad_pred)))
    return line


GPU_CASES = [
    dict(dtype="float32", batch=64, n=10_007),
    dict(dtype="float32", batch=256, n=16_411),
    dict(dtype="float16", batch=256, n=16_411),
    dict(dtype="bfloat16", batch=256, n=16_411),
]
CPU_CASES = [dict(dtype="float32", batch=3, n=100), dict(dtype="float16", batch=2, n=700)]


def demo_cases():
    return [(f"giou_loss {c['dtype']} {c['batch']}x{c['n']}", H.demo(run_case, c)) for c in CPU_CASES]


def main() -> int:
    return H.run_main("giou_loss", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
