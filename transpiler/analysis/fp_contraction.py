"""Floating-point contraction: which fp32/fp64/fp16/bf16 `a * b + c` and `a * b - c` are computed as one fused multiply-add.

Triton compiles with `enable_fp_fusion=True` (its default, and the only mode we offer), and LLVM's NVPTX back end
fuses a product into the add or subtract that reads it within one basic block even when the product has other
readers (NVPTX enables LLVM's "aggressive" FMA fusion): attention's `qk = qk * scale` feeds both a row maximum
and `qk - m`, and Triton computes `qk - m` as `fma(qk, scale, -m)`. NVRTC (NVVM) fuses only a product read once,
so the emitted C alone would keep a multiply and a subtract there: other roundings than Triton's, and more
instructions. This pass makes the choice explicit in the IR, with LLVM's rule:

- an fp32 or fp64 `add` / `sub` one of whose operands is a `mul` of the same type in the same region (one basic
  block: a product outside a loop or an `if` is not fused into an add inside it, as in LLVM);
- when both operands are products, the one with fewer readers is fused (the left one on a tie), as LLVM prefers;
- `p + c`, `c + p` -> `fma(x, y, c)`; `p - c` -> `fma(x, y, -c)` (`fms`); `c - p` -> `fma(-x, y, c)` (`fnma`);
  the negations are exact, so these are the fused results of the written expressions, signed zeros included;
- the product stays for its other readers and is dropped when the fused op was its only one.

fp16 and bf16 follow the same rule (Triton's PTX for sm_80 and sm_90 has `fma.rn.f16` / `fma.rn.bf16` there,
one rounding in the element type); left to ptxas, which fuses 16-bit products itself, the product kept exact
was sometimes the other one of `a * b - c * d` (rotary embeddings: 1-2 fp16 units off Triton on the H200).
Runs on the compiled path only (the interpreter rounds each operation, as Triton's interpreter does); idempotent
(the kernel keeps `fp_contracted`).
"""
from __future__ import annotations

from collections import Counter

from .. import dtypes
from ..parse.ir import Op, OpKind, Region

_CONTRACTED = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)
_FUSED = {"add": ("fma", "fma"), "sub": ("fms", "fnma")}   # fn -> (product on the left, product on the right)
_WHY = ("Triton's enable_fp_fusion: LLVM fuses a product into the add that reads it in one basic block, also when "
        "the product has other readers")


def _is_product(v, region_ops, dt) -> bool:
    op = v.owner
    return (isinstance(op, Op) and op.name == OpKind.ELEMENTWISE and op.attrs.get("fn") == "mul"
            and not op.attrs.get("propagate_nan") and v.dtype is dt and id(op) in region_ops)


def _readers(kernel) -> Counter:
    count = Counter()
    for op in kernel.walk():
        for v in op.operands:
            count[v] += 1
    return count


def contract(kernel, decisions) -> int:
    """Rewrite the fusable add/sub ops of `kernel` into fused multiply-adds; the number rewritten."""
    if getattr(kernel, "fp_contracted", False):
        return 0
    kernel.fp_contracted = True
    readers = _readers(kernel)
    fused = 0

    def visit(region: Region):
        nonlocal fused
        here = {id(op) for op in region.ops}
        for i, op in enumerate(region.ops):
            for r in op.regions:
                visit(r)
            if op.name != OpKind.ELEMENTWISE or op.attrs.get("fn") not in _FUSED or len(op.operands) != 2:
                continue
            dt = op.result.dtype
            if dt not in _CONTRACTED or any(v.dtype is not dt for v in op.operands):
                continue
            left, right = op.operands
            candidates = [side for side, v in ((0, left), (1, right)) if _is_product(v, here, dt)]
            if not candidates:
                continue
            if len(candidates) == 2 and readers[right] < readers[left]:
                candidates = [1]
            side = candidates[0]
            product, other = (left, right) if side == 0 else (right, left)
            x, y = product.owner.operands
            fn = _FUSED[op.attrs["fn"]][side]
            new = Op(OpKind.ELEMENTWISE, [x, y, other], [op.result], {"fn": fn}, op.loc)
            region.ops[i] = new
            readers[product] -= 1
            readers[x] += 1
            readers[y] += 1
            fused += 1
            decisions.add("contraction", new, f"{op.attrs['fn']} of a product computed as one fused multiply-add",
                          _WHY)
        dead = {id(op) for op in region.ops if op.name == OpKind.ELEMENTWISE and op.attrs.get("fn") == "mul"
                and op.results and all(readers[r] == 0 for r in op.results)}
        if dead:
            for op in region.ops:
                if id(op) in dead:
                    for v in op.operands:
                        readers[v] -= 1
            region.ops[:] = [op for op in region.ops if id(op) not in dead]

    visit(kernel.body)
    return fused
