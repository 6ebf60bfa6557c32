#!/usr/bin/env python
"""Print %nsmid (what templates/device_tma.cuh's grid_fills_sms compares the grid with) next to the device's
multiprocessor count: they agree where the SM ids are contiguous."""
import cupy

SOURCE = r'''extern "C" __global__ void nsmid(unsigned* out) {
  unsigned n; asm("mov.u32 %0, %%nsmid;" : "=r"(n)); out[0] = n;
}'''
out = cupy.zeros(1, cupy.uint32)
cupy.RawKernel(SOURCE, "nsmid")((1,), (1,), (out,))
print("nsmid", int(out[0]), "multiprocessors", cupy.cuda.Device().attributes["MultiProcessorCount"])
