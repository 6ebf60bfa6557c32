"""Host wrappers of `torch_op_kernels.py`'s kernels, written once for any kernel module (ours, or the Triton twin
of the same source), and their registration as torch custom ops. Outputs are poisoned (NaN) before the launch,
so an op whose kernel did not run cannot pass."""
import torch

import transpiler

BLOCK = 128


def wrappers(k):
    """name -> host wrapper over kernel module `k` (annotated: torch.library reads the schema from them)."""
    def affine(x: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
        y = torch.full_like(x, float("nan"))
        n = x.numel()
        k.affine_kernel[(transpiler.cdiv(n, BLOCK),)](x, y, n, alpha, beta, BLOCK=BLOCK)
        return y

    def row_softmax(x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.full_like(x, float("nan"))
        k.row_softmax_kernel[(rows,)](y, x, cols, x.stride(0), y.stride(0), BLOCK=transpiler.next_power_of_2(cols))
        return y

    def add_into(acc: torch.Tensor, x: torch.Tensor) -> None:
        n = acc.numel()
        k.add_into_kernel[(transpiler.cdiv(n, BLOCK),)](acc, x, n, BLOCK=BLOCK)

    return {"affine": affine, "row_softmax": row_softmax, "add_into": add_into}


def register(namespace, k):
    """The three wrappers registered as `namespace::name` custom ops (one call each); returns name -> op."""
    w = wrappers(k)
    return {"affine": transpiler.custom_op(f"{namespace}::affine", w["affine"], mutates_args=()),
            "row_softmax": transpiler.custom_op(f"{namespace}::row_softmax", w["row_softmax"], mutates_args=()),
            "add_into": transpiler.custom_op(f"{namespace}::add_into", w["add_into"], mutates_args=("acc",))}
