"""Register feedback for occupancy: decides, from ptxas' report on a first compile, whether a kernel is compiled
again for one more program per SM.

ptxas chooses a kernel's register count freely up to what `__launch_bounds__(threads)` allows, and sometimes
lands just above an occupancy step. Softmax over 8192 fp16 columns with 512 threads took 40 registers, three
programs per SM; bounded to four programs it takes 32 registers, spills nothing, and runs 5% faster on the
H200 (bench/NOTES.md). Kernels whose speed comes from keeping memory busy gain from that step; kernels with
tensor-core loops plan their registers and are left alone: the emitter marks the eligible ones by writing
`__launch_bounds__(threads, TP_MIN_BLOCKS_PER_SM)` under `#ifdef TP_MIN_BLOCKS_PER_SM`, and the plain
`__launch_bounds__(threads)` otherwise. (Not a default of 1: ptxas reads an explicit minimum of one program as
licence to use up to 255 registers, where the plain bound keeps it nearer two programs' worth.)

The decision: when the occupancy the first compile reaches is limited by registers (read from the cubin's
`.nv.info` records) to at most four programs per SM, and the register budget of the next step is at least 60% of
what ptxas chose (below that a spill is near certain and the second compile wasted), compile again with
`-DTP_MIN_BLOCKS_PER_SM=<next step>` and keep that cubin only if it has no stack frame (no spills). Few programs
per SM is where a step pays: a program that owns a whole row alternates loading, reducing and storing, and with
three neighbours instead of two there is a third more memory traffic in flight to cover those phases. With many
small programs per SM the phases already overlap, and the step cost as much as it gave: copy2d (10 -> 12 programs
of 128 threads) and a transpose through shared memory (12 -> 16) measured 1.5% and 3.5% slower on the H200,
softmax (3 -> 4 programs of 512 threads) 5.6% faster. The largest gain is at one program per SM: softmax over
16384 fp16 columns with 32 warps took 43 registers, one program per SM with nothing to overlap its phases, and ran
at 0.62x Triton's speed; 32 registers (two programs) compile without spills. The `.cu` text is the same either
way; the outcome (`Occupancy`) is kept on the variant that compiled it, and `kernel.explain(..., arch=...)` shows
it.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

MACRO = "TP_MIN_BLOCKS_PER_SM"
KEEP_FRACTION = 0.6         # the next step's register budget must be at least this share of ptxas' choice
FEW_PROGRAMS = 4            # tune only kernels with at most this many programs per SM


@dataclass(frozen=True)
class SMLimits:
    max_threads: int
    max_blocks: int
    shared_bytes: int                 # shared memory per SM available to programs
    registers: int = 65536
    register_unit: int = 256          # registers are allocated per warp in units of this many
    max_registers_per_thread: int = 255
    reserved_shared_per_block: int = 1024


# Per compute capability (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability").
_LIMITS = {
    80: SMLimits(2048, 32, 164 * 1024), 86: SMLimits(1536, 16, 100 * 1024), 87: SMLimits(2048, 32, 164 * 1024),
    89: SMLimits(1536, 24, 100 * 1024), 90: SMLimits(2048, 32, 228 * 1024), 100: SMLimits(2048, 32, 228 * 1024),
    120: SMLimits(1536, 32, 100 * 1024),
}


def limits_for(arch: str) -> SMLimits | None:
    """Limits of `sm_XY[a]`, or None for an architecture not in the table (then nothing is tuned)."""
    match = re.fullmatch(r"sm_(\d+)[a-z]?", arch)
    return _LIMITS.get(int(match.group(1))) if match else None


@dataclass(frozen=True)
class CubinResources:
    """What ptxas gave one kernel, read from the cubin itself (NVRTC 13.0 leaves ptxas' `-v` report out of
    its log; the cubin carries the same numbers in every version)."""
    registers: int
    frame_bytes: int        # per-thread stack frame: spills, or local arrays; none in a fully unrolled kernel

    @property
    def spills(self) -> bool:
        return self.frame_bytes > 0


# `.nv.info` attributes (the CUDA ELF's per-function records): format byte 0x04 = sized value, then the
# attribute; REGCOUNT and FRAME_SIZE hold (symbol index u32, value u32).
_EIFMT_SVAL, _EIATTR_FRAME_SIZE, _EIATTR_REGCOUNT = 0x04, 0x11, 0x2F


def cubin_resources(cubin: bytes) -> CubinResources | None:
    """Registers and stack frame of the kernel in a cubin (the largest over its functions), or None when the
    cubin has no `.nv.info` records."""
    values = {_EIATTR_REGCOUNT: [], _EIATTR_FRAME_SIZE: []}
    for offset, size in _sections_named(cubin, ".nv.info"):
        i, end = offset, offset + size
        while i + 4 <= end:
            fmt, attr = cubin[i], cubin[i + 1]
            if fmt != _EIFMT_SVAL:
                i += 4 if fmt in (0x02, 0x03) else 2   # byte / half values take 4 bytes, "no value" 2
                continue
            (length,) = struct.unpack_from("<H", cubin, i + 2)
            if attr in values and length == 8:
                values[attr].append(struct.unpack_from("<I", cubin, i + 8)[0])
            i += 4 + length
    if not values[_EIATTR_REGCOUNT]:
        return None
    return CubinResources(max(values[_EIATTR_REGCOUNT]), max(values[_EIATTR_FRAME_SIZE], default=0))


def _sections_named(elf: bytes, name: str):
    """(offset, size) of each section called `name` in a little-endian ELF64 file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + k * entsize) for k in range(count)]
    names_offset = headers[names_index][4]
    wanted = name.encode() + b"\0"
    for name_offset, _type, _flags, _addr, offset, size in headers:
        start = names_offset + name_offset
        if elf[start:start + len(wanted)] == wanted:
            yield offset, size


def blocks_per_sm(registers: int, threads: int, shared_bytes: int, limits: SMLimits) -> int:
    """Programs of `threads` threads one SM holds at once, given their registers and dynamic shared memory."""
    warps = -(-threads // 32)
    per_warp = -(-max(registers, 1) * 32 // limits.register_unit) * limits.register_unit
    by_registers = (limits.registers // per_warp) // warps
    return min(by_registers, _blocks_without_registers(threads, shared_bytes, limits))


def _blocks_without_registers(threads, shared_bytes, limits):
    by_shared = limits.shared_bytes // (shared_bytes + limits.reserved_shared_per_block)
    return min(limits.max_threads // threads, limits.max_blocks, by_shared)


def register_budget(blocks: int, threads: int, limits: SMLimits) -> int:
    """The most registers per thread that still lets `blocks` programs share an SM (a multiple of 8)."""
    warps = -(-threads // 32)
    per_warp = (limits.registers // (blocks * warps)) // limits.register_unit * limits.register_unit
    return min(per_warp // 32 // 8 * 8, limits.max_registers_per_thread)


def next_step(report: CubinResources, threads: int, shared_bytes: int, arch: str) -> int | None:
    """The minimum programs per SM to ask ptxas for on a second compile, or None when it is not worth one."""
    limits = limits_for(arch)
    if limits is None or report.spills:
        return None
    now = blocks_per_sm(report.registers, threads, shared_bytes, limits)
    if now >= _blocks_without_registers(threads, shared_bytes, limits):
        return None     # registers are not what limits occupancy
    if now > FEW_PROGRAMS:
        return None     # many small programs already overlap each other's phases
    target = now + 1
    if register_budget(target, threads, limits) < KEEP_FRACTION * report.registers:
        return None     # too far below ptxas' choice: it would spill or recompute a lot
    return target


@dataclass(frozen=True)
class Occupancy:
    """What the compile of one variant for one architecture decided, kept next to its cubin."""
    registers: int
    min_blocks: int            # the TP_MIN_BLOCKS_PER_SM the kept cubin was compiled with (1: no bound)
    blocks_per_sm: int         # programs per SM the kept cubin allows
    tried: int | None = None   # a bound tried and refused because ptxas spilled under it

    def describe(self) -> str:
        text = f"{self.registers} registers, {self.blocks_per_sm} programs per SM"
        if self.min_blocks > 1:
            text += f" (compiled with {MACRO}={self.min_blocks})"
        if self.tried:
            text += f"; {MACRO}={self.tried} was tried and spilled"
        return text


def threads_of(source: str) -> int | None:
    """The thread count of a kernel whose launch bounds name the macro, else None (not eligible)."""
    match = re.search(r"__launch_bounds__\((\d+), " + MACRO + r"\)", source)
    return int(match.group(1)) if match else None


def compile_for_occupancy(compile_with, source: str, shared_bytes: int, arch: str):
    """`(cubin, Occupancy | None)`: compile once and, when `next_step` says so, again with the bound kept only
    if that cubin has no stack frame. `compile_with(options)` returns a cubin."""
    cubin = compile_with(())
    threads = threads_of(source)
    report = cubin_resources(cubin) if threads is not None else None
    limits = limits_for(arch)
    if report is None or limits is None:
        return cubin, None
    occupancy = Occupancy(report.registers, 1, blocks_per_sm(report.registers, threads, shared_bytes, limits))
    target = next_step(report, threads, shared_bytes, arch)
    if target is None:
        return cubin, occupancy
    bounded = compile_with((f"-D{MACRO}={target}",))
    bounded_report = cubin_resources(bounded)
    if bounded_report is None or bounded_report.spills:
        return cubin, Occupancy(occupancy.registers, 1, occupancy.blocks_per_sm, tried=target)
    return bounded, Occupancy(bounded_report.registers, target,
                              blocks_per_sm(bounded_report.registers, threads, shared_bytes, limits))
