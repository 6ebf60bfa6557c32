"""Automatic differentiation of kernels: `kernel.backward` (a derived backward kernel) and
`transpiler.autograd` (a torch.autograd.Function around a forward and its derived backward).

Modules, one job each: `reverse.py` (the reverse-mode transform over the IR), `regions.py` (runtime loops and
ifs in reverse), `derivatives.py` (the derivative table per IR op kind), `gradient_writes.py` (plain or atomic
gradient writes), `refusals.py` (what cannot be differentiated, located), `spelling.py` (IR ops back to
Triton-dialect Python), `writer.py` (the backward program's text), `kernel.py` (the kernel object),
`torch_function.py` (the torch wrapper). docs/autodiff.md describes it.
"""
from .kernel import BackwardKernel, backward_of
from .torch_function import autograd

__all__ = ["BackwardKernel", "backward_of", "autograd"]
