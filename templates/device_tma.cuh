// ---- device helpers for the Tensor Memory Accelerator and mbarriers, sm_90 (templates/device_tma.cuh) ---------
// Inlined after device_tiles.cuh into kernels whose pipelined loops load their tiles by TMA
// (analysis/tma.py decides which, emit_cuda/rules/pipeline.py spells the ring).
#pragma once   // (an #include for nvcc; inlined into the .cu for NVRTC without this line)
namespace tp {

// A CUtensorMap: 128 opaque bytes the host encodes (cuTensorMapEncodeTiled, runtime/tensor_maps.py) and passes
// by value as a `const __grid_constant__` parameter, so its address is one in parameter space TMA can read.
struct __align__(64) TensorMap { unsigned long long opaque[16]; };

// mbarrier: a 64-bit shared-memory object counting arrivals and transaction bytes; a phase completes when
// both reach zero, and its parity (0, 1, 0, ...) tells waiters which phase they wait for.
__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void mbarrier_inval(unsigned long long* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(smem_addr(bar)) : "memory");
}
// The initialised barriers become visible to the async proxy (the copy engine completes transactions on them).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// One arrival that also announces BYTES more transaction bytes this phase waits for (the boxes issued next).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}"
               :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Spin until the phase of parity PARITY has completed; its data (TMA writes) is then visible to this thread.
__device__ __forceinline__ void mbarrier_wait_parity(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
  }
}

// Bring a tensor map into the copy engine's descriptor cache ahead of its first box (its address: a kernel
// parameter's, in the generic space).
__device__ __forceinline__ void prefetch_tensormap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// Whether this launch's grid has at least one program per multiprocessor (%nsmid: the count of SM ids, which is
// the SM count where the ids are contiguous). A TMA ring's guard when analysis/tma.py keeps small grids on cp.async.
__device__ __forceinline__ bool grid_fills_sms() {
  unsigned sms;
  asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
  return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z >= sms;
}

// Copy the box of `map` whose first element is at (x inner, y outer) into shared memory at `dst` (laid out as
// the map's swizzle says), completing its bytes on `bar`. Elements outside the tensor are written as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, unsigned long long* bar, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];"
               :: "r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)),
                  "r"(x), "r"(y) : "memory");
}

}  // namespace tp
// ---- end of TMA helpers -----------------------------------------------------------------------------------------
