"""Which architectures get a source of their own: where the hardware has instructions the others lack and the
compiler uses them. Light on purpose (the launch path reads it on a warm start)."""
from __future__ import annotations

import os

# Rows a row loop's ring may hold ahead of the one being reduced (analysis/row_loop.py); the launcher keeps
# `grid x + MAX_ROWS_AHEAD x programs` inside an int. Here, not in analysis, so the launch path stays light.
MAX_ROWS_AHEAD = 3

WGMMA_TARGETS = ("sm_90a",)   # warpgroup MMA (wgmma.mma_async) exists only under the arch-specific target


def wgmma_enabled(target) -> bool:
    """Whether `target` gets warpgroup MMA (TRANSPILER_WGMMA=0 turns it off, for comparisons)."""
    return target in WGMMA_TARGETS and os.environ.get("TRANSPILER_WGMMA", "1") != "0"


# Switches of the tensor-core pipeline for A/B comparisons (defaults: what measured fastest and is correct);
# their values are part of every cache key through options.CompileOptions.
SWITCHES = {
    "TRANSPILER_WGMMA_IN_FLIGHT": "0",   # 1: a wgmma group stays in flight into the next iteration (measured slower)
    "TRANSPILER_WGMMA_CHAIN_IN_FLIGHT": "1",  # 0: the last of several wgmma dots of a loop waits for its group
    "TRANSPILER_WGMMA_CP_FENCE": "0",    # 1: fence.proxy.async after every cp.async wait, not only after stores
    "TRANSPILER_CP_ZFILL": "1",          # 0: masked-off runs of an other=0 load go through registers, as before
    # an mma.sync dot with registers to spare reads its whole stage first, then the refill (pipelining.py; H200:
    # 16x8192x8192 +17%, 16x4096x14336 +27%); 0: the stage read k step by k step
    "TRANSPILER_MMA_REFILL_READ_STAGE": "1",
    "TRANSPILER_MMA_FRAGMENT_REGISTERS": "128",  # the register budget of that (fragments over K + accumulator; 192: -13% at 32x8192x8192)
    "TRANSPILER_TMA": "1",               # 0: pipelined loops on sm_90a copy their tiles by cp.async, never TMA
    "TRANSPILER_TMA_IN_FLIGHT": "1",     # 0: a TMA loop waits for its wgmma group in its own iteration
    "TRANSPILER_TMA_REFILL_AFTER_WAIT": "1",  # 0: an in-flight TMA ring refills the stage of i-2 (S-2 ahead)
    "TRANSPILER_TMA_FULL_GRID": "0",     # 1: the TMA ring only where the grid has a program per SM (no gain measured)
    "TRANSPILER_TMA_PREFETCH": "1",      # 0: no prefetch of the tensor maps at kernel entry (1024^3: 11.8 vs 12.2 us)
    "TRANSPILER_WGMMA_TILES_PER_SM": "2",  # wgmma accumulators of 128 x 128 resident per SM (0: no limit; residency.py)
    "TRANSPILER_MMA_SHARED_BASE": "1",   # 0: ldmatrix addresses from generic pointers, not a tile's 32-bit base
    "TRANSPILER_TILE_IMMEDIATES": "1",   # 0: a tile offset's constant part all XORed when any bit meets the thread's
    "TRANSPILER_STMATRIX": "1",          # 0: conversions from 8x8 fragment layouts store element by element
    "TRANSPILER_ROW_LOOP": "1",          # 0: one row per program, no persistent row loop (analysis/row_loop.py)
    "TRANSPILER_ROW_LOOP_BYTES": "16",   # bytes a thread may hold one row ahead (32 and 64 measured slower)
    "TRANSPILER_ROW_RING": "0",          # 1: a ring for rows over TRANSPILER_ROW_LOOP_BYTES; 2: every row (0: none)
    "TRANSPILER_ROW_RING_WAVES": "2",    # a ring loop runs one wave only for grids of at most this many (0: any)
    "TRANSPILER_ROW_RING_BYTES": "131072",  # shared memory per SM the row ring's slots may take, all programs
    "TRANSPILER_PACK_PROGRAMS": "1",     # 0: one program per block, never one warp each (analysis/program_packing.py)
    "TRANSPILER_PACK_ROW_BYTES": "2048",  # the largest load of a program that packing takes
    "TRANSPILER_PROGRAM_WARPS": "32",    # bytes a thread of a row kernel's widest load (fewer warps); 0: num_warps always
    "TRANSPILER_LOOP_REDUCTION_BARRIER": "0",  # 1: every cross-warp reduction of a loop has a barrier before its write
    "TRANSPILER_PREFIX_MASK": "1",       # 0: a run under a prefix mask (cols < n) tested on every lane (mask_runs.py)
}


def switch(name) -> bool:
    return os.environ.get(name, SWITCHES[name]) != "0"


def switch_value(name) -> int:
    """A numeric switch (its value, not on/off)."""
    return int(os.environ.get(name, SWITCHES[name]))


def switches_key() -> tuple:
    """The switches' values now, TRANSPILER_WGMMA included (options.py records them in every cache key)."""
    return (os.environ.get("TRANSPILER_WGMMA", "1"),) + tuple(os.environ.get(name, default)
                                                             for name, default in SWITCHES.items())


def source_target(arch):
    """The architecture a variant's source is written for: `arch` where it has instructions of its own that
    the compiler uses (see analysis/tensor_cores.py), else None (one source for every device)."""
    return arch if wgmma_enabled(arch) else None


__all__ = ["WGMMA_TARGETS", "wgmma_enabled", "source_target", "switch", "switches_key"]
