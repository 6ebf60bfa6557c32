"""parse/dead_code.py: pure ops nothing reads leave the IR (and the CUDA); ops with effects stay."""
import numpy as np

import transpiler
import transpiler.language as tl


@transpiler.jit
def unused_values_kernel(X, OUT, scale, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    unused_scalar = scale * 37 + 11          # nothing reads it  # noqa: F841
    unused_block = offs * 5 - 3              # nor this  # noqa: F841
    x = tl.load(X + offs, mask=offs < N)     # an unread load goes too (Triton drops it)  # noqa: F841
    v = tl.load(X + offs, mask=offs < N, volatile=True)   # a volatile one stays  # noqa: F841
    tl.store(OUT + offs, offs * 2, mask=offs < N)


def _source():
    return unused_values_kernel.cuda_source(np.zeros(8, np.float32), np.zeros(8, np.int32), 3, 8, BLOCK=8)


def test_unread_pure_values_are_not_emitted():
    body = _source().split("__global__", 1)[1]
    assert "37" not in body and "11" not in body and "* 5" not in body
    assert "* 2" in body


def test_unread_volatile_loads_and_all_stores_stay_in_the_ir():
    ir = unused_values_kernel.ir(np.zeros(8, np.float32), np.zeros(8, np.int32), 3, 8, BLOCK=8)
    names = [op.name for op in ir.walk()]
    assert names.count("load") == 1 and names.count("store") == 1
    assert [op.attrs["volatile"] for op in ir.walk() if op.name == "load"] == [True]
    used = {operand for op in ir.walk() for operand in op.operands}
    assert all(r in used for op in ir.walk() if op.name not in ("load", "store") for r in op.results)
