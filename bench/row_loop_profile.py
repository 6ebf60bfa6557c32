#!/usr/bin/env python
"""One launch of each row kernel variant, for `ncu` (achieved bandwidth, stalls, occupancy), and the registers
and resident programs per SM of each variant, printed. Variants: folded into a row loop (default budget, or
TRANSPILER_ROW_LOOP_BYTES=64) and one row per program (TRANSPILER_ROW_LOOP=0), each from a fresh Kernel object.

    ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
        python bench/row_loop_profile.py [WORD ...]    (only the cases whose label holds one of the words)
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from twins import EXAMPLES, BENCH  # noqa: E402,F401  (puts examples/ on sys.path)

CASES = [  # (label, module path, wrapper, dtype, shape, environment)
    ("softmax fp16 8192x4096 fold", EXAMPLES / "softmax.py", "softmax", "float16", (8192, 4096), {}),
    ("softmax fp16 8192x4096 off", EXAMPLES / "softmax.py", "softmax", "float16", (8192, 4096),
     {"TRANSPILER_ROW_LOOP": "0"}),
    ("softmax fp16 4096x8192 fold64", EXAMPLES / "softmax.py", "softmax", "float16", (4096, 8192),
     {"TRANSPILER_ROW_LOOP_BYTES": "64"}),
    ("softmax fp16 4096x8192 off", EXAMPLES / "softmax.py", "softmax", "float16", (4096, 8192),
     {"TRANSPILER_ROW_LOOP": "0"}),
    ("argmax fp16 32768x1024 fold", BENCH / "kernels.py", "row_argmax", "float16", (32768, 1024), {}),
    ("softmax fp16 32768x1024 packed", EXAMPLES / "softmax.py", "softmax", "float16", (32768, 1024), {}),
    ("softmax fp16 32768x1024 unpacked", EXAMPLES / "softmax.py", "softmax", "float16", (32768, 1024),
     {"TRANSPILER_PACK_PROGRAMS": "0"}),
    # issue 18, session 7: rows ahead in a shared-memory ring (analysis/row_ring.py) against the register fold
    ("softmax fp16 8192x4096 ring", EXAMPLES / "softmax.py", "softmax", "float16", (8192, 4096), {}),
    ("softmax fp16 8192x4096 regs", EXAMPLES / "softmax.py", "softmax", "float16", (8192, 4096),
     {"TRANSPILER_ROW_RING": "0"}),
    ("softmax fp32 4096x1024 ring", EXAMPLES / "softmax.py", "softmax", "float32", (4096, 1024), {}),
    ("softmax fp32 4096x1024 regs", EXAMPLES / "softmax.py", "softmax", "float32", (4096, 1024),
     {"TRANSPILER_ROW_RING": "0"}),
]


def main():
    import importlib.util

    import torch
    from transpiler.runtime.occupancy import blocks_per_sm, cubin_resources, limits_for
    words = sys.argv[1:]
    for i, (label, path, fn, dt, shape, env) in enumerate(CASES):
        if words and not any(w in label for w in words):
            continue
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        spec = importlib.util.spec_from_file_location(f"_profile_{i}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        x = torch.randn(shape, device="cuda", dtype=getattr(torch, dt))
        getattr(module, fn)(x)
        torch.cuda.synchronize()
        kernel = module.softmax_kernel if fn == "softmax" else module.argmax_kernel
        for var in kernel.variants.values():
            report = cubin_resources(var.cubin("sm_90a"))
            threads = int(re.match(r"\d+", var.source.split("__launch_bounds__(")[-1]).group(0))
            per_sm = blocks_per_sm(report.registers, threads, var.shared_bytes, limits_for("sm_90a"))
            print(f"{label}: row_loop={var.row_loop} packed={var.programs_per_block} registers={report.registers} "
                  f"blocks/SM={per_sm}", flush=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


if __name__ == "__main__":
    main()
