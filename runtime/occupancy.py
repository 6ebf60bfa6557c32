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

The decision: when the occupancy the first compile reaches is limited by registers, and the register budget of
the next step is at least 3/4 of what ptxas chose, compile again with `-DTP_MIN_BLOCKS_PER_SM=<next step>` and
keep that cubin only if ptxas reports no spills. The `.cu` text is the same either way; the define is recorded
with the cubin (`Occupancy`) and shown by `kernel.explain`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MACRO = "TP_MIN_BLOCKS_PER_SM"
KEEP_FRACTION = 0.75        # the next step's register budget must be at least this share of ptxas' choice


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
class PtxasReport:
    registers: int
    spill_stores: int
    spill_loads: int

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


def parse_ptxas_report(log: str) -> PtxasReport | None:
    """Registers and spill bytes from ptxas' `-v` lines in an NVRTC log (one kernel per program)."""
    used = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if not used:
        return None
    stores, loads = (int(spills.group(1)), int(spills.group(2))) if spills else (0, 0)
    return PtxasReport(int(used.group(1)), stores, loads)


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


def next_step(report: PtxasReport, threads: int, shared_bytes: int, arch: str) -> int | None:
    """The minimum programs per SM to ask ptxas for on a second compile, or None when it is not worth one."""
    limits = limits_for(arch)
    if limits is None or report.spills:
        return None
    now = blocks_per_sm(report.registers, threads, shared_bytes, limits)
    if now >= _blocks_without_registers(threads, shared_bytes, limits):
        return None     # registers are not what limits occupancy
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


def compile_for_occupancy(compile_with_log, source: str, shared_bytes: int, arch: str):
    """`(cubin, Occupancy | None)`: compile once with ptxas' report and, when `next_step` says so, again with
    the bound. `compile_with_log(defines)` returns `(cubin, log)`."""
    cubin, log = compile_with_log(())
    threads = threads_of(source)
    report = parse_ptxas_report(log)
    if threads is None or report is None:
        return cubin, None
    limits = limits_for(arch)
    occupancy = Occupancy(report.registers, 1, blocks_per_sm(report.registers, threads, shared_bytes, limits)
                          if limits else 0)
    target = next_step(report, threads, shared_bytes, arch)
    if target is None:
        return cubin, occupancy
    bounded, bounded_log = compile_with_log((f"-D{MACRO}={target}",))
    bounded_report = parse_ptxas_report(bounded_log)
    if bounded_report is None or bounded_report.spills:
        return cubin, Occupancy(occupancy.registers, 1, occupancy.blocks_per_sm, tried=target)
    return bounded, Occupancy(bounded_report.registers, target,
                              blocks_per_sm(bounded_report.registers, threads, shared_bytes, limits))
