"""The oldest GPU architecture a kernel can run on, and the op that needs it.

Decides, from the ops of the typed IR, the minimum compute capability of the CUDA the emitter writes for them:
`tl.dot` is lowered to `mma.sync` m16n8k16 / m16n8k8 tf32 / m16n8k32 int8 tensor-core instructions with
operands staged by `cp.async`, which exist from sm_80 (Ampere); on fp8 inputs to m16n8k32 e4m3/e5m2, which exist
from sm_89 (Ada). Hands on an `ArchRequirement` (or None) that the
runtime checks before NVRTC runs for an architecture, so an older GPU gets "needs sm_80" at the user's line
rather than a PTX assembler log.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..parse.ir import OpKind

def _dot_requirement(op):
    if op.operands[0].dtype.is_fp8():
        return 89, "tl.dot on fp8 inputs (mma.sync e4m3/e5m2 instructions)"
    return 80, "tl.dot (tensor-core mma.sync and cp.async instructions)"


# op name -> the op's (minimum compute capability as major*10+minor, what needs it)
REQUIREMENTS = {
    OpKind.DOT: _dot_requirement,
}


@dataclass(frozen=True)
class ArchRequirement:
    capability: int        # e.g. 80 for sm_80
    what: str
    loc: object            # SourceLocation of the first op that needs it

    @property
    def arch(self) -> str:
        return f"sm_{self.capability}"


def required_arch(kernel) -> ArchRequirement | None:
    """The highest requirement of any op in the kernel (the first such op, in program order, names it)."""
    best = None
    for op in kernel.walk():
        need = REQUIREMENTS[op.name](op) if op.name in REQUIREMENTS else None
        if need and (best is None or need[0] > best.capability):
            best = ArchRequirement(need[0], need[1], op.loc)
    return best


def capability_of(arch: str) -> int:
    """'sm_90a' -> 90, 'compute_75' -> 75."""
    digits = "".join(ch for ch in arch.split("_", 1)[-1] if ch.isdigit())
    return int(digits) if digits else 0
