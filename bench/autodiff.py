#!/usr/bin/env python
"""Derived backward kernels (transpiler.autodiff) against the backwards users have today, on one GPU.

- GIoU (examples/giou_loss.py): `giou_loss_kernel.backward` (derived) against the backward torch.compile
  generates for the torch reference (`reference(..., xp=torch)` compiled, timed through
  torch.autograd.grad with retain_graph) and against a hand-written Triton backward of the same math
  (bench/autodiff_triton.py). Targets: >= 1.0x torch.compile, >= 0.9x Triton.
- layernorm: the derived backward of a layernorm forward (the tutorial's math, fp16 in, fp32 compute) against
  the hand-written Triton backward of the tutorial's math (dx kernel + dw/db group reduction, with the mean
  and 1/std the forward saved). Target: >= 0.8x.

Each timing is triton.testing.do_bench's median; the rows print time and speed ratio (baseline time / ours:
above 1 means ours is faster) and the results are checked against each other first. The derived backwards
run with accumulate=False (gradients written, not added into: what the hand-written kernels do); the GIoU row
also times the default (added into .grad).

    python bench/autodiff.py [--quick]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))


def _time(fn):
    import triton
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def _graph(fn):
    """GPU time alone (ms): the calls replayed from a CUDA graph (no host launch path, no L2 flush), or NaN
    with the reason printed when the call cannot be captured (a host synchronisation inside it would say so)."""
    import triton
    try:
        return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
    except Exception as e:      # noqa: BLE001 (reported, the other figures still printed)
        print(f"  CUDA graph capture failed: {type(e).__name__}: {str(e)[:200]}")
        return float("nan")


def _host(fn, calls=200):
    """Host (Python) time of one call in us, the GPU not waited for: do_bench's figure is the GPU's time
    from the first launch's start to the last's end, which includes idle gaps when the host launches slower
    than the GPU runs; a host time near the do_bench time says the figure is the launch path's."""
    import time
    import torch
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return host


def _close(name, got, want, rtol):
    err = float((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30))
    status = "ok" if err < rtol else "MISMATCH"
    print(f"  check {name}: relative error {err:.1e} {status}")
    return err < rtol


def bench_giou(batch, n):
    import torch
    import transpiler
    import giou_loss as G
    import autodiff_triton as T
    rng = __import__("numpy").random.default_rng(0)
    p, t = G.random_boxes(rng, batch, n)
    pred = torch.tensor(p, dtype=torch.float32, device="cuda")
    target = torch.tensor(t, dtype=torch.float32, device="cuda")
    grad_loss = torch.randn(batch, n, device="cuda")
    n_boxes = batch * n
    grid = (transpiler.cdiv(n_boxes, G.BLOCK),)
    grad_pred = torch.zeros_like(pred)
    loss_like = torch.empty(batch, n, device="cuda")
    valid_like = torch.empty(batch, n, dtype=torch.bool, device="cuda")

    def ours(accumulate=False):
        G.giou_loss_kernel.backward[grid](pred, target, loss_like, valid_like, n_boxes, G.EPS, BLOCK=G.BLOCK,
                                          num_warps=4, grads={"PRED": grad_pred, "LOSS": grad_loss},
                                          accumulate=accumulate)

    hand = torch.empty_like(pred)

    def triton_hand():
        T.giou_backward_kernel[grid](pred, target, grad_loss, hand, n_boxes, G.EPS, BLOCK=G.BLOCK, num_warps=4)

    compiled = torch.compile(lambda a, b: G.reference(a, b, G.EPS, xp=torch)[0])
    leaf = pred.clone().requires_grad_()
    loss = compiled(leaf, target)

    def torch_compiled():
        return torch.autograd.grad(loss, leaf, grad_loss, retain_graph=True)[0]

    grad_pred.fill_(float("nan"))
    ours()
    triton_hand()
    compiled_grad = torch_compiled()
    want = torch.from_numpy(G.reference_backward(pred, target, grad_loss))      # float64, torch autograd
    _close("giou derived vs float64 reference", grad_pred.cpu(), want, 1e-3)
    _close("giou torch.compile vs float64 reference", compiled_grad.cpu(), want, 1e-3)
    _close("giou hand-written Triton vs float64 reference", hand.cpu(), want, 1e-3)
    t_ours, t_hand, t_torch = _time(ours), _time(triton_hand), _time(torch_compiled)
    t_added = _time(lambda: ours(accumulate=True))
    print(f"giou backward {n_boxes} boxes fp32: derived {t_ours * 1e3:8.1f} us (added into .grad: "
          f"{t_added * 1e3:.1f} us) | torch.compile {t_torch * 1e3:8.1f} us ({t_torch / t_ours:.2f}x) | "
          f"hand-written Triton {t_hand * 1e3:8.1f} us ({t_hand / t_ours:.2f}x)")
    print(f"  host time per call: derived {_host(ours):.1f} us, hand-written Triton {_host(triton_hand):.1f} us")
    g_ours, g_hand = _graph(ours), _graph(triton_hand)
    print(f"  GPU time alone (CUDA graph, L2 warm): derived {g_ours * 1e3:.1f} us, hand-written Triton "
          f"{g_hand * 1e3:.1f} us ({g_hand / g_ours:.2f}x)")


def bench_layernorm(rows, cols):
    import torch
    import triton
    import transpiler
    import transpiler.language as tl
    import autodiff_triton as T
    from autodiff_layernorm import layernorm_fwd
    from transpiler.autodiff import partials
    dt = torch.float16
    x = torch.randn(rows, cols, device="cuda", dtype=dt)
    w = torch.randn(cols, device="cuda", dtype=dt)
    b = torch.randn(cols, device="cuda", dtype=dt)
    dy = torch.randn(rows, cols, device="cuda", dtype=dt)
    block = triton.next_power_of_2(cols)
    warps = min(max(block // 256, 1), 16)
    y = torch.empty_like(x)
    dx, dw, db = torch.zeros_like(x), torch.zeros_like(w), torch.zeros_like(b)
    gw, gb = torch.zeros(cols, device="cuda"), torch.zeros(cols, device="cuda")

    def ours():
        layernorm_fwd.backward[(rows,)](x, w, b, y, cols, cols, 1e-5, BLOCK=block, num_warps=warps,
                                        grads={"X": dx, "W": gw, "B": gb, "Y": dy}, accumulate=False)

    mean = torch.empty(rows, device="cuda")
    rstd = torch.empty(rows, device="cuda")
    T.layernorm_forward_kernel[(rows,)](x, w, b, y, mean, rstd, cols, cols, 1e-5, BLOCK=block, num_warps=warps)
    groups = 64 if cols <= 8192 else 32
    dw_part = torch.empty(groups, cols, device="cuda")
    db_part = torch.empty(groups, cols, device="cuda")
    hdx, hdw, hdb = torch.empty_like(x), torch.empty(cols, device="cuda"), torch.empty(cols, device="cuda")

    def triton_hand():
        dw_part.zero_()
        db_part.zero_()
        T.layernorm_backward_dx_kernel[(rows,)](x, w, dy, hdx, mean, rstd, dw_part, db_part, cols, cols,
                                                GROUPS=groups, BLOCK=block, num_warps=warps)
        T.layernorm_backward_dwdb_kernel[(triton.cdiv(cols, 128),)](dw_part, db_part, hdw, hdb, cols,
                                                                    GROUPS=groups, BLOCK_N=128)

    ours()
    triton_hand()
    xr, wr, br = (v.double().requires_grad_() for v in (x, w, b))
    torch.nn.functional.layer_norm(xr, (cols,), wr, br, 1e-5).backward(dy.double())
    _close("layernorm dx derived", dx, xr.grad, 1e-2)
    _close("layernorm dw derived", gw, wr.grad, 1e-3)
    _close("layernorm db derived", gb, br.grad, 1e-3)
    _close("layernorm dx hand-written", hdx, xr.grad, 1e-2)
    t_ours, t_hand = _time(ours), _time(triton_hand)
    # Where the derived backward's time goes: its main kernel alone, and the partial sums of dw and db.
    d, values, options, plans, size = layernorm_fwd.backward._prepare(
        (x, w, b, y, cols, cols, 1e-5), dict(BLOCK=block, num_warps=warps, accumulate=False,
                                             grads={"X": dx, "W": gw, "B": gb, "Y": dy}), launching=True,
        grid=(rows,))
    t_main = _time(lambda: d.kernel[size](*values, **options))
    t_sums = _time(lambda: partials.reduce_all(plans))
    print(f"layernorm backward {rows}x{cols} fp16: derived {t_ours * 1e3:8.1f} us (main kernel {t_main * 1e3:.1f} "
          f"us, partial sums {t_sums * 1e3:.1f} us) | hand-written Triton {t_hand * 1e3:8.1f} us "
          f"({t_hand / t_ours:.2f}x)")
    print(f"  host time per call: derived {_host(ours):.1f} us (main kernel's launch "
          f"{_host(lambda: d.kernel[size](*values, **options)):.1f} us, partial sums "
          f"{_host(lambda: partials.reduce_all(plans)):.1f} us: both by the general path), hand-written Triton "
          f"{_host(triton_hand):.1f} us")
    g_ours, g_hand = _graph(ours), _graph(triton_hand)
    print(f"  GPU time alone (CUDA graph, L2 warm): derived {g_ours * 1e3:.1f} us, hand-written Triton "
          f"{g_hand * 1e3:.1f} us ({g_hand / g_ours:.2f}x)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    # layernorm first: its figure is the one furthest from its target, and the GIoU row's torch.compile is the
    # slowest step of a cold run (a capped run keeps the layernorm row).
    for rows, cols in ([(4096, 1024)] if args.quick else [(4096, 1024), (4096, 4096), (4096, 8192)]):
        bench_layernorm(rows, cols)
    for batch, n in ([(64, 10_007)] if args.quick else [(64, 10_007), (256, 16_411)]):
        bench_giou(batch, n)


if __name__ == "__main__":
    main()
