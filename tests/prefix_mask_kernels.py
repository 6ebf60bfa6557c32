"""Kernels whose masks are, or are not, a prefix of each vector run (analysis/mask_runs.py), shared by the CPU
checks of the decision and the GPU checks of the results."""
import numpy as np

import transpiler
import transpiler.language as tl


@transpiler.jit
def masked_scale(X, Y, lo, hi, n_programs, BLOCK: tl.constexpr, KIND: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK + tl.arange(0, BLOCK)
    if KIND == 0:
        m = cols < hi
    elif KIND == 1:
        m = hi > cols
    elif KIND == 2:
        m = cols <= hi
    elif KIND == 3:
        m = (cols < hi) & (pid < n_programs)
    elif KIND == 4:
        m = cols >= lo
    elif KIND == 5:
        m = (cols >= lo) & (cols < hi)
    elif KIND == 6:
        m = (cols < lo) | (cols >= hi)
    else:
        m = (cols % 3) != 0
    x = tl.load(X + cols, mask=m, other=0.0)
    tl.store(Y + cols, x * 2.0, mask=m)


# KIND -> (what the mask is, whether it is a prefix of every run, NumPy's mask of column indices)
KINDS = {
    0: ("cols < hi", True, lambda c, lo, hi, pid_ok: c < hi),
    1: ("hi > cols", True, lambda c, lo, hi, pid_ok: hi > c),
    2: ("cols <= hi", True, lambda c, lo, hi, pid_ok: c <= hi),
    3: ("(cols < hi) & (pid < n_programs)", True, lambda c, lo, hi, pid_ok: (c < hi) & pid_ok),
    4: ("cols >= lo (a suffix)", False, lambda c, lo, hi, pid_ok: c >= lo),
    5: ("lo <= cols < hi (a window)", False, lambda c, lo, hi, pid_ok: (c >= lo) & (c < hi)),
    6: ("cols < lo or cols >= hi", False, lambda c, lo, hi, pid_ok: (c < lo) | (c >= hi)),
    7: ("cols % 3 != 0", False, lambda c, lo, hi, pid_ok: (c % 3) != 0),
}


def args_for(xp, dtype, n, lo, hi, block, rng):
    """(x, y poisoned, lo, hi, n_programs) for `masked_scale` over `n` elements in programs of `block`."""
    x = xp.asarray(rng.standard_normal(n).astype(dtype))
    y = xp.asarray(np.full(n, np.nan, dtype))
    programs = -(-n // block)
    return [x, y, lo, hi, programs - 1]      # the last program is outside `pid < n_programs`


def expected(kind, x, n, lo, hi, block):
    """NumPy's output of `masked_scale` (NaN where the kernel must not store)."""
    cols = np.arange(n)
    pid_ok = (cols // block) < (-(-n // block) - 1)
    m = KINDS[kind][2](cols, lo, hi, pid_ok)
    return np.where(m, x.astype(np.float64) * 2.0, np.nan)
