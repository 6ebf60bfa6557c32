#!/usr/bin/env python
"""One 4096^3 fp16 matmul of examples/matmul.py, launched a few times, for a profiler to look at:

    ncu --kernel-name matmul_kernel --launch-skip 2 --launch-count 1 --section WarpStateStats python bench/profile_matmul.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import cupy  # noqa: E402
import numpy as np  # noqa: E402

import matmul  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
rng = np.random.default_rng(0)
a = cupy.asarray(rng.standard_normal((n, n)).astype(np.float16))
b = cupy.asarray(rng.standard_normal((n, n)).astype(np.float16))
c = cupy.empty((n, n), np.float16)
for _ in range(4):
    matmul.matmul(a, b, out=c)
cupy.cuda.Device().synchronize()
print("done")
