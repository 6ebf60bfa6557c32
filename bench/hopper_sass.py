#!/usr/bin/env python
"""SASS of the bench's matmul, ours in each code-generation setting and Triton's, with an opcode summary.

Ours: the variant of bench/kernels.py at one shape and its bench configuration, built under each setting
(`--variants` as in hopper_ab.py), its cubin disassembled with `cuobjdump -sass`. Triton's: every
`matmul_kernel.cubin` under TRITON_CACHE_DIR (run after hopper_ab.py, which compiled them).

    python bench/hopper_sass.py --dir sass_out [--shape float16:2048x2048x2048] [--variants ...]
"""
import argparse
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hopper_ab import VARIANTS, environment, load_copy, parse_shape, parse_variants  # noqa: E402

import transpiler  # noqa: E402
import transpiler.language as tl  # noqa: E402

WATCH = ("HGMMA", "WARPGROUP", "BAR", "SYNCS", "UTMALDG", "UBLKCP", "LDGSTS", "LDSM", "HMMA", "STS", "STG", "LDG",
         "LDS", "BRA", "LDL", "STL", "ISETP", "IMAD", "IADD3", "R2UR", "UIADD3")


def summary(sass):
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    total = sum(ops.values())
    return f"{total} instructions; " + ", ".join(f"{k} {ops[k]}" for k in WATCH if ops.get(k))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--shape", default="float16:2048x2048x2048")
    ap.add_argument("--variants", default=VARIANTS)
    args = ap.parse_args()
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    dtype, (m, n, k), _ = parse_shape(args.shape)
    el = {"float16": tl.float16, "bfloat16": tl.bfloat16}[dtype]
    a = transpiler.StandIn(el)
    cubins = {}
    for name, settings in parse_variants(args.variants).items():
        module = load_copy(f"sass_{name}")
        cfg = module.matmul_config(m, n, k)
        with environment(settings):
            var = module.matmul_kernel.compiled_variant(a, a, a, m, n, k, k, 1, n, 1, n, 1, arch="sm_90a", **cfg)
            cubins[f"ours_{name}"] = var.cubin("sm_90a")
            (out / f"ours_{name}.cu").write_text(var.source)
    for i, path in enumerate(sorted(Path(os.environ.get("TRITON_CACHE_DIR", "~/.triton/cache")).expanduser()
                                    .rglob("matmul_kernel.cubin"))):
        cubins[f"triton_{i}"] = path.read_bytes()
    for name, blob in cubins.items():
        (out / f"{name}.cubin").write_bytes(blob)
        sass = subprocess.run(["cuobjdump", "-sass", str(out / f"{name}.cubin")], capture_output=True,
                              text=True).stdout
        if not sass.strip() and (out / f"{name}.cu").exists():
            # a cubin from a newer NVRTC than the machine's cuobjdump reads: the same source through its nvcc
            subprocess.run(["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-o",
                            str(out / f"{name}.nvcc.cubin"), str(out / f"{name}.cu")], capture_output=True)
            sass = subprocess.run(["cuobjdump", "-sass", str(out / f"{name}.nvcc.cubin")], capture_output=True,
                                  text=True).stdout
        (out / f"{name}.sass").write_text(sass)
        print(f"{name}: {summary(sass)}", flush=True)


if __name__ == "__main__":
    main()
