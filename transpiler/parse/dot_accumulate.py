"""Adding into a product's accumulator: `x + tl.dot(a, b)` becomes `tl.dot(a, b, x)`.

Triton's front end makes the same rewrite (its combine pass: an add of a value and a dot whose accumulator is
zero, the dot read by nothing else, becomes the dot accumulating into that value), and kernels are written
for it: attention's `acc += tl.dot(p, v)` and `qk += tl.dot(q, k)`, a matmul's `acc += tl.dot(a, b)`. Left
as an add, the product gets a zeroed accumulator of its own beside `x`: twice the registers for the tile
(attention's 128x128 fp32 output tile took 255 registers and spilled), an add per element, and a larger
program for NVRTC. Rewritten, the tensor cores add the product into `x`'s registers; the sum is rounded as
Triton's is (the product's terms accumulated onto `x`, not the product rounded and then added).

Decided from the IR alone: the add's operands are the dot's result and a value of the same type (fp32,
fp64 or int32, where integer addition wraps either way), the dot's accumulator is a splat of the constant 0
(+0.0 for floats), nothing else reads the dot, and both ops are in one region (the dot is not moved into a
loop). The add op becomes the dot, in the add's place (where `x` is defined), keeping the add's result value,
so its users need no rewriting; the zero splat is left to the dead-code pass.
"""
from __future__ import annotations

import math
from collections import Counter

from .ir import KernelIR, Op, OpKind, Region, walk


def accumulate_into_dots(kernel: KernelIR) -> None:
    """Rewrite, in place, every `x + dot(a, b, 0)` of `kernel` whose product nothing else reads."""
    uses = Counter(operand for op in walk(kernel.body) for operand in op.operands)
    _rewrite(kernel.body, uses)


def _rewrite(region: Region, uses: Counter) -> None:
    fused = set()
    for i, op in enumerate(region.ops):
        for inner in op.regions:
            _rewrite(inner, uses)
        product, other = _dot_add_operands(op, uses)
        if product is None or product.owner not in region.ops:
            continue
        dot = product.owner
        a, b, _zero = dot.operands
        region.ops[i] = Op(OpKind.DOT, [a, b, other], [op.result], dict(dot.attrs), dot.loc)
        fused.add(dot)
    if fused:
        region.ops = [op for op in region.ops if op not in fused]


def _dot_add_operands(op, uses):
    """`(product, other)` when `op` adds a zero-accumulator dot's result that only it reads to `other`."""
    if op.name != OpKind.ELEMENTWISE or op.attrs.get("fn") != "add" or len(op.operands) != 2:
        return None, None
    for product, other in (op.operands, op.operands[::-1]):
        dot = product.owner
        if (isinstance(dot, Op) and dot.name == OpKind.DOT and uses[product] == 1 and product is not other
                and other.type == product.type == op.result.type and _is_zero(dot.operands[2])):
            return product, other
    return None, None


def _is_zero(value) -> bool:
    splat = value.owner
    if not isinstance(splat, Op) or splat.name != OpKind.SPLAT:
        return False
    constant = splat.operands[0].owner
    if not isinstance(constant, Op) or constant.name != OpKind.CONSTANT:
        return False
    v = constant.attrs.get("value")
    return v == 0 and not (isinstance(v, float) and math.copysign(1.0, v) < 0)
