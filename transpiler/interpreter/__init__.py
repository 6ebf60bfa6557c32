"""CPU interpreter: runs a kernel's Python function program by program with NumPy-backed block values.

    from transpiler.interpreter import interpret
    interpret(kernel_fn, grid, args, kwargs, num_warps=4)

Operators, casts, the elementwise builtins, reductions, scans, `tl.dot` and the standard library are the
compiler's typing rules run against an eager builder (`eager`: Triton's interpreter design), whose ops
`evaluate` and `evaluate_blocks` compute on NumPy; `shared_rules` lists those builtins. Modules: `runner` (the launch loop and the object that answers `tl.*` calls), `arguments` (binding,
host copies of arrays, writing results back), `tensor` (the block value and its operators), `numeric` (dtype
storage, rounding, casts), `shapes` (broadcasting, block-shape and axis checks), `pointers` (pointer values,
masked loads/stores, bounds checks), `block_pointers` (`tl.make_block_ptr`, `tl.advance`, loads and stores
through them), `location` (the kernel line an error points at), `registry` (rule table by builtin name) and
the interpreter's own rule modules `rules` and `atomics`.
"""
from .pointers import Buffer, Pointer
from .runner import Interpreter, interpret
from .tensor import Tensor

__all__ = ["interpret", "Interpreter", "Tensor", "Pointer", "Buffer"]
