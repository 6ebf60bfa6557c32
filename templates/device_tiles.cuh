// ---- device helpers for shared-memory tiles, async copies and tensor cores (templates/device_tiles.cuh) ---------
// Inlined after device.cuh into kernels that use tl.dot or a software-pipelined loop.
namespace tp {

// Element offset of (row, col) in a row-major tile whose rows are ROW_BYTES long. The 16-byte chunks of a
// row are XOR-permuted by the row's position in its 128-byte-line group, so that 8 rows read or written at
// the same column land in 8 different 16-byte bank groups: ldmatrix and 16-byte stores are conflict-free.
template <int ROW_BYTES, int ES> __device__ __forceinline__ int swizzle(int row, int col) {
  constexpr unsigned ROW = ROW_BYTES / ES;                  // elements per row
  constexpr unsigned CHUNK = 16 / ES;                        // elements per 16-byte chunk
  constexpr unsigned CHUNKS = ROW_BYTES / 16;                // chunks per row
  if constexpr (CHUNKS <= 1) {
    return row * ROW + col;
  } else {
    constexpr unsigned ROWS_PER_LINE = ROW_BYTES >= 128 ? 1 : 128 / ROW_BYTES;
    constexpr unsigned PHASES = CHUNKS < 8 ? CHUNKS : 8;
    const unsigned r = row, c = col;
    const unsigned chunk = (c / CHUNK) ^ ((r / ROWS_PER_LINE) % PHASES);
    return static_cast<int>(r * ROW + chunk * CHUNK + c % CHUNK);
  }
}

// A tile whose rows are longer than 128 bytes, cut into 128-byte slabs stored one after the other (ROWS rows
// each), every slab swizzled as above: the layout warpgroup MMA reads with its 128-byte swizzle mode.
template <int ROW_BYTES, int ES, int ROWS> __device__ __forceinline__ int swizzle_slabs(int row, int col) {
  constexpr int SLAB = 128 / ES;                             // elements per slab row
  return (col / SLAB) * (ROWS * SLAB) + swizzle<128, ES>(row, col % SLAB);
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy BYTES (4, 8 or 16) from global to shared memory without passing through registers. 16-byte copies
// bypass L1 (.cg): the tiles are reused from shared memory, not from L1.
template <int BYTES> __device__ __forceinline__ void cp_async(void* dst, const void* src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst)), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(smem_addr(dst)), "l"(src), "n"(BYTES)
                 : "memory");
  }
}
// The same copy, of BYTES bytes when `valid` and of none otherwise: the hardware fills what it did not copy with
// zeros (a masked-off run of a load whose `other` is 0), and reads nothing from `src`.
template <int BYTES> __device__ __forceinline__ void cp_async_zfill(void* dst, const void* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const int size = valid ? BYTES : 0;
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(smem_addr(dst)), "l"(src), "r"(size)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(smem_addr(dst)), "l"(src), "n"(BYTES),
                 "r"(size) : "memory");
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Wait until at most N of this thread's newest copy groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

// ldmatrix: lane l gives the address of row (l % 8) of matrix (l / 8); each 16-byte row lands as mma fragments.
// The dot's reads pass a 32-bit shared address (a stage's base made once, plus the lane's offset and an immediate:
// ptxas keeps the base in a uniform register and the k steps in the instruction, as `[R + UR + imm]`).
__device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned& r0, unsigned& r1, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned& r0, unsigned& r1, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned& r0, unsigned& r1, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned& r0, unsigned& r1, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
               : "=r"(r0), "=r"(r1) : "r"(smem_addr(p)));
}

// stmatrix (sm_90): the inverse of ldmatrix_x4. Lane l gives the address of row (l % 8) of block (l / 8); register i
// of each lane holds its two elements of block i, as an mma accumulator's fragment (layout conversions, emitter.py).
__device__ __forceinline__ void stmatrix_x4(void* p, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
               :: "r"(smem_addr(p)), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

// Fragments built element by element (operand layouts ldmatrix cannot produce).
template <typename T> __device__ __forceinline__ unsigned pack2(T lo, T hi) {
  unsigned short a, b;
  memcpy(&a, &lo, 2);
  memcpy(&b, &hi, 2);
  return static_cast<unsigned>(a) | (static_cast<unsigned>(b) << 16);
}
// Four 8-bit values (int8, or fp8 as cuda_fp8.h's one-byte types) given by reference (elements of a tile: their
// bytes are read in place), the first in the low byte.
template <typename T> __device__ __forceinline__ unsigned pack4(const T& x0, const T& x1, const T& x2, const T& x3) {
  static_assert(sizeof(T) == 1, "pack4 packs 8-bit values");
  const auto byte = [](const T& x) { return static_cast<unsigned>(*reinterpret_cast<const unsigned char*>(&x)); };
  return byte(x0) | (byte(x1) << 8) | (byte(x2) << 16) | (byte(x3) << 24);
}
// fp32 -> tf32 (round to nearest, ties away), as the tensor cores expect it.
__device__ __forceinline__ unsigned tf32(float x) {
  unsigned y;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(y) : "f"(x));
  return y;
}

// D += A * B on one m16n8 tile; a, b hold the operand fragments, d the 4 accumulator registers. Not volatile:
// a pure register operation the compiler may schedule freely (ldmatrix and cp.async stay volatile: they
// touch shared memory across barriers).
__device__ __forceinline__ void mma_m16n8k16_f16(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// fp8 (sm_89+): A and B fragments as for int8 (four values a register), an fp32 accumulator.
__device__ __forceinline__ void mma_m16n8k32_e4m3(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k32_e5m2(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k32_s8(int* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- warpgroup MMA (sm_90a) ----
// Shared-memory matrix descriptor (PTX "Matrix Descriptor Format"): start address, leading- and stride-
// dimension byte offsets (16-byte units), swizzle mode (1: 128-byte, 2: 64-byte, 3: 32-byte). The start must
// sit on the origin of a swizzle atom row (tiles are 1024-byte aligned, so the base-offset field stays 0).
template <int MODE, int LBO, int SBO> __device__ __forceinline__ unsigned long long wgmma_desc(const void* p) {
  constexpr unsigned long long fixed = (static_cast<unsigned long long>((LBO & 0x3FFFF) >> 4) << 16) |
                                       (static_cast<unsigned long long>((SBO & 0x3FFFF) >> 4) << 32) |
                                       (static_cast<unsigned long long>(MODE) << 62);
  return fixed | static_cast<unsigned long long>((smem_addr(p) & 0x3FFFF) >> 4);
}
// Registers written by ordinary instructions become visible to the next wgmma (accumulators, A fragments).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Wait until at most N of this warpgroup's wgmma groups are in flight.
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of the accumulator registers across a fence or a wait
// (the hardware writes them asynchronously between the wgmma and its wait).
template <int N> __device__ __forceinline__ void wgmma_pin(float* d) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_pin(int* d) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i]) :: "memory");
}
// The same for register-A fragments: they stay in their registers until the wait that follows the wgmmas.
template <int N> __device__ __forceinline__ void wgmma_pin(unsigned* a) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(a[i]) :: "memory");
}
// Shared memory written by ordinary stores and cp.async becomes visible to the async proxy (wgmma reads).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// acc += a * b on CUDA cores (exact fp32/fp64 products; int8 products summed in int32).
template <typename Acc, typename T> __device__ __forceinline__ void madd(Acc& acc, T a, T b) {
  if constexpr (same_type<Acc, float>::value) acc = fmaf(cast<float>(a), cast<float>(b), acc);
  else if constexpr (same_type<Acc, double>::value) acc = fma(cast<double>(a), cast<double>(b), acc);
  else acc = wrap_add<Acc>(acc, wrap_mul<Acc>(static_cast<Acc>(a), static_cast<Acc>(b)));   // integers wrap
}

}  // namespace tp
// ---- end of tile helpers ---------------------------------------------------------------------------------------
