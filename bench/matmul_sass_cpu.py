#!/usr/bin/env python
"""SASS of the bench matmul (bench/kernels.py at its configuration for a shape), ours and Triton's, made on the CPU
machine with no GPU: ours through NVRTC to PTX and Triton's bundled ptxas to a cubin, Triton's by `triton.compile`
for sm_90a with its launcher's specialization (pointers and 16-divisible ints marked divisible by 16, ints equal
to 1 constants); both disassembled by Triton's bundled cuobjdump. Prints each cubin's registers and every loop
(a backward branch) by opcode, and the innermost loops' tensor-core and shared-memory instructions in order.

    PYTHONPATH=/work/tritoncpu/site:$PWD python bench/matmul_sass_cpu.py float16:16x4096x14336 [--env X=1,...]
        [--dir out]     # the .sass files
        [--nvrtc LIB --nvdisasm BIN]   # ours by that libnvrtc's own ptxas instead (the H200's NVRTC 13.0 from the
                                       # nvidia-cuda-nvrtc==13.0.88 wheel, its folder on LD_LIBRARY_PATH), shown by
                                       # that nvdisasm (nvidia-cuda-nvdisasm): the code the H200 runs
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))
ORDER = ("HMMA", "LDSM", "LDGSTS", "BAR", "DEPBAR", "LDGDEPBAR", "LDS", "HGMMA", "WARPGROUP", "SYNCS")
INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?([^;]*);")


def triton_bin(name):
    import triton
    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def disassemble(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([triton_bin("cuobjdump"), "-sass", f.name], capture_output=True, text=True,
                              check=True).stdout


def instructions(sass):
    """(address, opcode, operands) of each instruction; nvdisasm's branch labels (`.L_x_3`) are replaced by the
    address of the instruction after the label, as cuobjdump prints targets."""
    labels, pending = {}, []
    for line in sass.splitlines():
        label = re.match(r"(\.L_x_\d+):", line.strip())
        if label:
            pending.append(label.group(1))
        elif pending and INSTRUCTION.match(line):
            for name in pending:
                labels[name] = INSTRUCTION.match(line).group(1)
            pending = []
    out = []
    for m in INSTRUCTION.finditer(sass):
        rest = re.sub(r"`\((\.L_x_\d+)\)", lambda t: "0x" + labels.get(t.group(1), "0"), m.group(4))
        out.append((int(m.group(1), 16), m.group(2), rest))
    return out


def loops(instrs):
    """(start, end) index ranges of the backward branches' bodies, innermost (shortest) first."""
    index = {addr: i for i, (addr, _, _) in enumerate(instrs)}
    found = []
    for i, (addr, op, rest) in enumerate(instrs):
        m = re.search(r"0x([0-9a-f]+)", rest) if op == "BRA" else None
        if m and int(m.group(1), 16) < addr and int(m.group(1), 16) in index:
            found.append((index[int(m.group(1), 16)], i))
    return sorted(found, key=lambda r: r[1] - r[0])


def report(label, sass, regs):
    instrs = instructions(sass)
    print(f"{label}: {len(instrs)} instructions, {regs} registers")
    for start, end in loops(instrs):
        body = instrs[start:end + 1]
        ops = collections.Counter(op for _, op, _ in body)
        print(f"  loop at {instrs[start][0]:#x}: {len(body)} instructions; "
              + ", ".join(f"{k} {v}" for k, v in ops.most_common()))
        print("    order: " + " ".join(op if op in ORDER else "." for _, op, _ in body))


def nvrtc_cubin(lib_path, source):
    """`source` to a cubin for sm_90a by the libnvrtc at `lib_path` (ctypes), with the runtime's options; its log."""
    import ctypes
    from transpiler.runtime.compiler import nvrtc_options
    lib = ctypes.CDLL(lib_path)
    prog, size = ctypes.c_void_p(), ctypes.c_size_t()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None, None) == 0
    options = [o.encode() for o in nvrtc_options("sm_90a", ("--ptxas-options=-v",))]
    rc = lib.nvrtcCompileProgram(prog, len(options), (ctypes.c_char_p * len(options))(*options))
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc:
        raise RuntimeError(log.value.decode()[-3000:])
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(prog, cubin)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin.raw, log.value.decode()


def ours(dtype, m, n, k, env, nvrtc=None, nvdisasm=None):
    import transpiler
    import transpiler.language as tl
    from transpiler.runtime.compiler import compile_offline
    import kernels
    os.environ.update(env)
    a = transpiler.StandIn(getattr(tl, dtype))
    args = (a, a, a, m, n, k, k, 1, n, 1, n, 1)
    variant = kernels.matmul_kernel.compiled_variant(*args, arch="sm_90a", **kernels.matmul_config(m, n, k))
    if nvrtc:
        cubin, log = nvrtc_cubin(nvrtc, variant.source)
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            sass = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True, check=True).stdout
        regs = re.search(r"Used (\d+) registers", log)
        return sass, f"{regs.group(1) if regs else '?'} (that NVRTC's ptxas)"
    result = compile_offline(variant.source, "sm_90a")    # NVRTC's own cubin: registers; its PTX for ptxas
    ptx = re.sub(r"^\.version \d+\.\d+", ".version 8.7", result.ptx, flags=re.M)   # Triton's ptxas is 12.8
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "k.ptx").write_text(ptx)
        out = subprocess.run([triton_bin("ptxas"), "-arch=sm_90a", "-v", "-o", f"{tmp}/k.cubin", f"{tmp}/k.ptx"],
                             capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"ptxas: {out.stderr[-2000:]}")
        cubin = (Path(tmp) / "k.cubin").read_bytes()
    regs = re.search(r"Used (\d+) registers", out.stderr + out.stdout)
    return disassemble(cubin), f"{regs.group(1) if regs else '?'} (NVRTC's own ptxas: {result.registers})"


def theirs(dtype, m, n, k):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    from twins import load
    module = load(HERE / "kernels.py", "triton")
    config = dict(module.matmul_config(m, n, k))
    warps, stages = config.pop("num_warps"), config.pop("num_stages")
    fn = module.matmul_kernel
    ty = {"float16": "fp16", "bfloat16": "bf16"}[dtype]
    values = dict(A=None, B=None, C=None, M=m, N=n, K=k, stride_am=k, stride_ak=1, stride_bk=n, stride_bn=1,
                  stride_cm=n, stride_cn=1)
    signature, constexprs, attrs = {}, dict(config), {}
    for i, name in enumerate(fn.arg_names):
        if name in config:
            signature[name] = "constexpr"
        elif values[name] is None:
            signature[name] = "*" + ty
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif values[name] == 1:
            signature[name], constexprs[name] = "constexpr", 1
        else:
            signature[name] = "i32"
            if values[name] % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    compiled = triton.compile(ASTSource(fn, signature, constexprs=constexprs, attrs=attrs),
                              target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=stages))
    return disassemble(compiled.asm["cubin"]), compiled.n_regs if hasattr(compiled, "n_regs") else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", help="dtype:MxNxK")
    ap.add_argument("--env", default="", help="our code-generation settings, X=1,Y=0")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--nvrtc", default=None, help="a libnvrtc.so to compile ours with (its own ptxas)")
    ap.add_argument("--nvdisasm", default="nvdisasm", help="with --nvrtc: the disassembler of its cubins")
    ap.add_argument("--ours-only", action="store_true")
    args = ap.parse_args()
    dtype, dims = args.shape.split(":")
    m, n, k = (int(x) for x in dims.split("x"))
    env = dict(s.split("=", 1) for s in args.env.split(",") if s)
    results = {"ours": ours(dtype, m, n, k, env, args.nvrtc, args.nvdisasm)}
    if not args.ours_only:
        results["triton"] = theirs(dtype, m, n, k)
    for label, (sass, regs) in results.items():
        report(label, sass, regs)
        if args.dir:
            Path(args.dir).mkdir(parents=True, exist_ok=True)
            (Path(args.dir) / f"{label}_{dims}.sass").write_text(sass)


if __name__ == "__main__":
    main()
