#!/usr/bin/env python
"""Run each matmul example case in a process of its own (a fault in one cannot hide the others' results).

    python bench/probe_matmul.py [--sanitize]
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("float16", (1000, 1100, 333), "", None),
    ("float16", (1024, 1024, 1024), "", None),
    ("float16", (1024, 1024, 1024), "", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=4, num_warps=4, num_stages=3)),
    ("float16", (1000, 1100, 333), "", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=4, num_warps=4, num_stages=3)),
    ("float16", (1024, 1024, 1024), "", dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3)),
    ("float16", (1024, 1024, 1024), "", dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=2)),
    ("float16", (16, 1024, 1024), "", None),
]

for dtype, shape, act, config in CASES:
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'examples')!r}); import matmul, _harness as H; "
            f"print(matmul.run_case(H.pick_library({dtype!r}, True), dtype={dtype!r}, shape={shape!r}, "
            f"activation={act!r}, config={config!r}))")
    cmd = [sys.executable, "-c", code]
    if "--sanitize" in sys.argv:
        cmd = ["compute-sanitizer", "--print-limit", "3"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    tail = (r.stdout + r.stderr).strip().splitlines()
    print(f"{dtype} {shape} {config}: rc={r.returncode}")
    for line in tail[-6:]:
        print("    " + line[:300])
