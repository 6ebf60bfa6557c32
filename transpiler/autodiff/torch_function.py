"""`transpiler.autograd(kernel, grid, outputs)`: a kernel and its derived backward as a torch function.

    giou = transpiler.autograd(giou_loss_kernel, grid=lambda meta: ..., outputs=["LOSS", "VALID"], BLOCK=512)
    loss, valid = giou(pred, target, loss_like, valid_like, n_boxes, eps)
    (loss * weights).sum().backward()      # runs giou_loss_kernel.backward; pred.grad is filled

The arguments are the forward's (constexprs and launch options are given once, to `autograd`); at the
positions named in `outputs` any tensor of the output's shape and dtype stands in: each call allocates a fresh
output like it (so every call has its own autograd node) and returns the outputs in the order of `outputs`.
Floating-point outputs are differentiable, the others (a boolean mask) are marked non-differentiable. The
backward adds into zero-initialised gradient tensors for the floating-point inputs that need one and launches
the derived backward on the same grid; CPU tensors run on the interpreter both ways (gradcheck works there).
"""
from __future__ import annotations


def autograd(kernel, grid, outputs, **options):
    import torch

    names = kernel.arg_names
    positions = [names.index(n) for n in outputs]

    def launcher(k, tensors):
        on_cpu = all(not t.is_cuda for t in tensors if isinstance(t, torch.Tensor))
        return k.interpret[grid] if on_cpu else k[grid]

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            args = list(args)
            outs = []
            for p in positions:
                args[p] = torch.empty_like(args[p])
                outs.append(args[p])
            run_args = [a.detach().contiguous() if isinstance(a, torch.Tensor) else a for a in args]
            for p, o in zip(positions, outs):
                run_args[p] = o
            launcher(kernel, run_args)(*run_args, **options)
            ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
            tensors = [a for a in run_args if isinstance(a, torch.Tensor)]
            ctx.save_for_backward(*tensors)
            ctx.tensor_slots = [i for i, a in enumerate(run_args) if isinstance(a, torch.Tensor)]
            ctx.scalars = [None if isinstance(a, torch.Tensor) else a for a in run_args]
            return tuple(outs) if len(outs) > 1 else outs[0]

        @staticmethod
        def backward(ctx, *grad_outputs):
            args = list(ctx.scalars)
            for slot, t in zip(ctx.tensor_slots, ctx.saved_tensors):
                args[slot] = t
            grads = {}
            for name, p, g in zip(outputs, positions, grad_outputs):
                if args[p].is_floating_point():
                    grads[name] = (torch.zeros_like(args[p]) if g is None else g.contiguous()).to(args[p].dtype)
            wanted = []
            for i, a in enumerate(args):
                if (i not in positions and ctx.needs_input_grad[i] and isinstance(a, torch.Tensor)
                        and a.is_floating_point()):
                    grads[names[i]] = torch.zeros_like(a)
                    wanted.append(i)
            result = [None] * len(args)
            if wanted:
                launcher(kernel.backward, args)(*args, grads=grads, **options)
                for i in wanted:
                    result[i] = grads[names[i]]
            return tuple(result)

    def apply(*args):
        return KernelFunction.apply(*args)

    apply.__name__ = f"{kernel.__name__}_autograd"
    apply.function = KernelFunction
    return apply
