"""`python -m transpiler compile`: a kernel ahead of time, for a C++ program that needs neither Python nor us.

From one specialization (a Triton AOT signature, constexprs, num_warps, an architecture) writes into a folder:
  NAME.cu               the generated CUDA (what `dump` prints)
  NAME.ARCH.cubin       NVRTC's output for ARCH
  NAME_launcher.h/.cpp  a typed launch function on the CUDA driver API (cuModuleLoadData + cuLaunchKernel) with
                        the cubin embedded; it refuses arguments that break the specialization (an unaligned
                        pointer, an integer not divisible by 16 or not 1) with CUDA_ERROR_INVALID_VALUE, since
                        code compiled for them would be silently wrong otherwise.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..targets import MAX_ROWS_AHEAD
from .signature import SignatureError

# Our element types as the host program passes them (16-bit floats as their bits: no CUDA half headers needed).
HOST_TYPES = {
    "int1": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "fp16": "uint16_t", "bf16": "uint16_t", "fp32": "float", "fp64": "double",
}
_NOTES = {"fp16": "the bits of an IEEE half (uint16_t)", "bf16": "the bits of a bfloat16 (uint16_t)"}


@dataclass(frozen=True)
class HostParam:
    name: str
    ctype: str
    note: str = ""


@dataclass(frozen=True)
class Check:
    expr: str
    text: str


def host_interface(arg_names, key_parts, param_kinds):
    """(params, checks) of the launch function: one typed parameter per runtime kernel parameter, and a check per
    property the specialization assumed."""
    params, checks = [], []
    for name, part, kind in zip(arg_names, key_parts, param_kinds):
        if kind is None:             # constexpr: compiled in
            continue
        if part[0] == "ptr":
            params.append(HostParam(name, "CUdeviceptr", f"device address of {part[1]} elements"))
            if part[2] > 1:
                checks.append(Check(f"({name} & {part[2] - 1}) == 0", f"{name} {part[2]}-byte aligned"))
            continue
        if part[0] == "none":
            raise SignatureError(f"'{name}': a None argument cannot be compiled ahead of time")
        params.append(HostParam(name, HOST_TYPES[part[0]], _NOTES.get(part[0], "")))
        if len(part) == 3 and part[1]:
            checks.append(Check(f"{name} == 1", f"{name} == 1"))
        elif len(part) == 3 and part[2] > 1:
            checks.append(Check(f"{name} % {part[2]} == 0", f"{name} divisible by {part[2]}"))
    return params, checks


def _byte_rows(data: bytes, per_row: int = 16):
    return [", ".join(f"0x{b:02x}" for b in data[i:i + per_row]) + ("," if i + per_row < len(data) else "")
            for i in range(0, len(data), per_row)]


def compile_ahead_of_time(spec, arch: str, out_dir: str) -> list:
    """Write the four files for `spec` (a `KernelLaunchSpec`) compiled for `arch`; returns their paths."""
    from ..emit_cuda.emitter import jinja_env
    from ..runtime.compiler import compile_offline
    kernel = spec.kernel
    variant = spec.compiled_variant()
    variant.check_arch(arch)
    if variant.tensor_maps:    # not reached today (no target-specific source here); the C launcher has no maps
        from ..errors import NOT_YET, CompileTimeError
        raise CompileTimeError("ahead-of-time launchers of kernels that load by TMA", kernel.definition(),
                               kernel=variant.name, refusal=NOT_YET)
    values = kernel._bind_for_compile(spec.args, dict(spec.constexprs), spec.num_warps)
    params, checks = host_interface(kernel.arg_names, kernel.spec_key(values), variant.param_kinds)
    cubin = compile_offline(variant.source, arch, name=f"{variant.name}.cu").cubin
    specialization = _specialization_of(variant.source)
    context = dict(name=variant.name, source_file=os.path.basename(kernel.fn.__code__.co_filename), arch=arch,
                   specialization=specialization, num_warps=variant.num_warps, threads=32 * variant.num_warps,
                   shared_bytes=variant.shared_bytes, params=params, checks=checks, cubin_bytes=len(cubin),
                   cubin_rows=_byte_rows(cubin), indent=len(f"CUresult {variant.name}_launch("),
                   row_loop=variant.row_loop, programs_per_block=variant.programs_per_block,
                   row_loop_span=1 + MAX_ROWS_AHEAD)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        f"{variant.name}.cu": variant.source,
        f"{variant.name}.{arch}.cubin": cubin,
        f"{variant.name}_launcher.h": jinja_env().get_template("aot_launcher.h.j2").render(**context),
        f"{variant.name}_launcher.cpp": jinja_env().get_template("aot_launcher.cpp.j2").render(**context),
    }
    written = []
    for name, payload in files.items():
        path = out / name
        if isinstance(payload, bytes):
            path.write_bytes(payload)
        else:
            path.write_text(payload)
        written.append(path)
    return written


def _specialization_of(source: str) -> str:
    """The `.cu` header's specialization text, its continuation lines (`//   ...`) joined back."""
    lines = source.splitlines()[:40]
    start = next((i for i, line in enumerate(lines) if line.startswith("// specialization: ")), None)
    if start is None:
        return ""
    parts = [lines[start].split(": ", 1)[1]]
    for line in lines[start + 1:]:
        if not line.startswith("//   "):
            break
        parts.append(line[5:])
    return " ".join(parts)
