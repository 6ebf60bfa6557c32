#!/usr/bin/env python
"""Compile the matmul example's 4096^3 fp16 specialization for this device and count its tensor-core
instructions in the SASS (`cuobjdump` from Triton's package or the CUDA toolkit): HGMMA is warpgroup MMA,
HMMA is mma.sync. Writes the .cu and the SASS under the folder given."""
import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import transpiler  # noqa: E402
import transpiler.language as tl  # noqa: E402
from transpiler.runtime import compiler  # noqa: E402

import matmul  # noqa: E402


def cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton
        hits = glob.glob(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))
        return hits[0] if hits else None
    except ImportError:
        return None


def main(out):
    arch = compiler.device_arch(0)
    a = b = c = transpiler.StandIn(tl.float16)
    cfg = matmul.config_for(4096, 4096, 4096)
    v = matmul.matmul_kernel.compiled_variant(a, b, c, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, ACTIVATION="",
                                              arch=arch, **cfg)
    Path(out, "matmul_4096.cu").write_text(v.source)
    cubin = v.cubin(arch)
    path = Path(out, "matmul_4096.cubin")
    path.write_bytes(cubin)
    tool = cuobjdump()
    if tool is None:
        print("no cuobjdump")
        return
    done = subprocess.run([tool, "--dump-sass", str(path)], capture_output=True, text=True)
    sass = done.stdout or done.stderr
    Path(out, "matmul_4096.sass").write_text(sass)
    counts = {k: len(re.findall(rf"\b{k}\b", sass)) for k in ("HGMMA", "HMMA", "LDSM", "LDGSTS", "BAR", "LDL", "STL")}
    print(tool, arch, cfg, counts, v.occupancy.get(arch).describe() if v.occupancy.get(arch) else "")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
