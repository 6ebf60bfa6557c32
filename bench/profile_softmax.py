#!/usr/bin/env python
"""The fp16 softmax of examples/softmax.py at 4096 x 8192, launched a few times, for a profiler:

    ncu --kernel-name softmax_kernel --launch-skip 2 --launch-count 1 --section WarpStateStats \
        python bench/profile_softmax.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import cupy  # noqa: E402
import numpy as np  # noqa: E402

import softmax  # noqa: E402

rows, cols = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (4096, 8192)
x = cupy.asarray(np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float16))
y = cupy.empty_like(x)
for _ in range(4):
    softmax.softmax(x, out=y)
cupy.cuda.Device().synchronize()
print("done")
