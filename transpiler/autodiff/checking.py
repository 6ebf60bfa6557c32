"""Checking a derived backward against central finite differences of its forward, on the CPU interpreter.

`gradient_check(kernel, grid, args, outputs=..., inputs=..., **constexprs)`: `args` are the forward's
arguments in order (NumPy arrays for the pointers); a random incoming gradient is drawn for each output, the
scalar L = sum(incoming * output) is differentiated numerically by central differences over every element of
each input, and analytically by `kernel.backward.interpret`. The gradient arrays start from random values, so
the check also covers the "added into" convention. Returns the largest relative error per input.
"""
from __future__ import annotations

import numpy as np


def _forward_outputs(kernel, grid, args, names, outputs, constexprs):
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel.interpret[grid](*copies, **constexprs)
    return {n: copies[names.index(n)].astype(np.float64) for n in outputs}


def numeric_gradient(kernel, grid, args, outputs, incoming, wrt, step=1e-6, **constexprs):
    names = kernel.arg_names
    index = names.index(wrt)
    x = args[index]
    grad = np.zeros(x.shape, np.float64)
    flat = x.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        values = []
        for sign in (1, -1):
            flat[i] = keep + sign * step
            outs = _forward_outputs(kernel, grid, args, names, outputs, constexprs)
            values.append(sum(float((incoming[n] * outs[n]).sum()) for n in outputs))
        flat[i] = keep
        grad.reshape(-1)[i] = (values[0] - values[1]) / (2 * step)
    return grad


def gradient_check(kernel, grid, args, outputs, inputs, seed=0, step=1e-6, **constexprs):
    """(analytic, numeric, relative error) per input name; see the module docstring."""
    rng = np.random.default_rng(seed)
    names = kernel.arg_names
    args = list(args)
    incoming = {n: rng.normal(size=args[names.index(n)].shape) for n in outputs}
    initial = {n: rng.normal(size=args[names.index(n)].shape) for n in inputs}
    grads = {n: incoming[n].astype(args[names.index(n)].dtype) for n in outputs}
    grads.update({n: initial[n].astype(args[names.index(n)].dtype) for n in inputs})
    kernel.backward.interpret[grid](*[a.copy() if isinstance(a, np.ndarray) else a for a in args], grads=grads,
                                    **constexprs)
    report = {}
    for n in inputs:
        analytic = grads[n].astype(np.float64) - initial[n]
        numeric = numeric_gradient(kernel, grid, args, outputs, incoming, n, step, **constexprs)
        scale = max(np.abs(numeric).max(), 1e-30)
        report[n] = (analytic, numeric, float(np.abs(analytic - numeric).max() / scale))
    return report
