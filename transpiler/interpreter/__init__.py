"""CPU interpreter: runs a kernel's Python function program by program with NumPy-backed block values.

    from transpiler.interpreter import interpret
    interpret(kernel_fn, grid, args, kwargs, num_warps=4)

Every builtin but iteration and debugging is the compiler's typing rule run against an eager builder (`eager`:
Triton's interpreter design), whose ops `evaluate`, `evaluate_blocks` (reduce, scan, dot) and `evaluate_atomics`
compute on NumPy as they are made (`registry`: the rule table), with the values' arithmetic of
`transpiler/numerics/` (storage, rounding, casts, fp8, libdevice). Modules: `runner` (the launch loop and the
object that answers `tl.*` calls), `arguments` (binding, host copies of arrays, writing results back), `tensor`
(the block value and its operators), `records` (block pointers and tensor descriptors as the kernel holds them),
`pointers` (pointer values, buffers, bounds-checked gathers and scatters), `loops` (the kernel's source made
runnable as Python), `location` (the kernel line an error points at) and the interpreter's own rules, `rules`
(ranges, prints, asserts).
"""
from .pointers import Buffer, Pointer
from .runner import Interpreter, interpret
from .tensor import Tensor

__all__ = ["interpret", "Interpreter", "Tensor", "Pointer", "Buffer"]
