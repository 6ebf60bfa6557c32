// ---- device helpers (templates/device.cuh: the ones this kernel uses, inlined) ----------------------------
// Triton's conversions, wide loads and stores, warp shuffles, reduction combiners; all __forceinline__.
#pragma once   // (an #include for nvcc; inlined into the .cu for NVRTC without this line)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace tp {

template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };
// The accumulator's type alone decides a combiner's type: the value folded in (a literal `3`, an `int`
// index) converts to it instead of failing template deduction.
template <typename T> struct type_identity { using type = T; };
template <typename T> using same_t = typename type_identity<T>::type;
template <typename T> struct is_half16 { static constexpr bool value = false; };
template <> struct is_half16<__half> { static constexpr bool value = true; };
template <> struct is_half16<__nv_bfloat16> { static constexpr bool value = true; };

template <typename T> __device__ __forceinline__ T nan() { return T(__int_as_float(0x7fc00000)); }
template <> __device__ __forceinline__ double nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }
template <typename T> __device__ __forceinline__ T inf() { return T(__int_as_float(0x7f800000)); }
template <> __device__ __forceinline__ double inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

// Value conversion with C semantics (float -> int truncates); 16-bit floats convert through float, rounding
// to nearest even, as Triton does.
template <typename To, typename From> __device__ __forceinline__ To cast(From x) {
  if constexpr (same_type<To, From>::value) {
    return x;
  } else if constexpr (same_type<From, __half>::value) {
    return cast<To>(__half2float(x));
  } else if constexpr (same_type<From, __nv_bfloat16>::value) {
    return cast<To>(__bfloat162float(x));
  } else if constexpr (same_type<To, __half>::value) {
    if constexpr (same_type<From, double>::value) return __double2half(x);
    else return __float2half_rn(static_cast<float>(x));
  } else if constexpr (same_type<To, __nv_bfloat16>::value) {
    if constexpr (same_type<From, double>::value) return __double2bfloat16(x);
    else return __float2bfloat16_rn(static_cast<float>(x));
  } else if constexpr (same_type<To, bool>::value) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

// Reinterpret the bits of a value as another type of the same width.
template <typename To, typename From> __device__ __forceinline__ To bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast needs equal widths");
  To y;
  memcpy(&y, &x, sizeof(To));
  return y;
}

// Copy two 16-bit values as one 32-bit word through an empty asm: the C compiler cannot tell the copy from new
// data, so a widening of the copy is not merged with an earlier one of the original (analysis/packed_rows.py:
// across a barrier the row lives as loaded words, two halves a register, not as one float an element).
template <typename T> __device__ __forceinline__ void opaque_words(T* dst, const T* src) {
  unsigned word;
  memcpy(&word, src, 4);
  asm("" : "+r"(word));
  memcpy(dst, &word, 4);
}

// fp32 division as Triton lowers `/`: div.full.f32 (at most 2 ulp, no slow path for the full range).
__device__ __forceinline__ float div_full(float a, float b) {
  float r; asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}

// fp32 2**x as Triton lowers tl.exp2: ex2.approx.ftz.f32, a result below 2**-126 is 0 (exp2f would be
// ex2.approx.f32, whose subnormal range costs a compare and two multiplies around each MUFU.EX2).
__device__ __forceinline__ float exp2_ftz(float a) {
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a)); return r;
}

// Triton's integer +, -, *, << and unary - wrap around (LLVM's add, sub, mul, shl without nsw); a signed C result
// out of range is undefined and NVVM builds on that (`(x + y) < x` became `y < 0`). These compute in an unsigned
// type of at least 32 bits (narrower operands would be promoted back to int) and convert back, which wraps.
template <typename T> struct wrapping { using U = unsigned; };
template <> struct wrapping<long long> { using U = unsigned long long; };
template <> struct wrapping<unsigned long long> { using U = unsigned long long; };
template <typename T> using wrap_u = typename wrapping<T>::U;
template <typename T> __device__ __forceinline__ T wrap_add(T a, T b) { return T(wrap_u<T>(a) + wrap_u<T>(b)); }
template <typename T> __device__ __forceinline__ T wrap_sub(T a, T b) { return T(wrap_u<T>(a) - wrap_u<T>(b)); }
template <typename T> __device__ __forceinline__ T wrap_mul(T a, T b) { return T(wrap_u<T>(a) * wrap_u<T>(b)); }
template <typename T> __device__ __forceinline__ T wrap_shl(T a, T b) { return T(wrap_u<T>(a) << wrap_u<T>(b)); }
template <typename T> __device__ __forceinline__ T wrap_neg(T a) { return wrap_sub<T>(T(0), a); }
// |INT_MIN| wraps to INT_MIN, as Triton's abs does.
template <typename T> __device__ __forceinline__ T iabs(T x) { return x < T(0) ? wrap_neg<T>(x) : x; }
// tl.umulhi: the high half of the unsigned product, whatever the signedness of the type (as Triton does).
__device__ __forceinline__ unsigned mulhi(unsigned a, unsigned b) { return __umulhi(a, b); }
__device__ __forceinline__ int mulhi(int a, int b) { return int(__umulhi(unsigned(a), unsigned(b))); }
__device__ __forceinline__ unsigned long long mulhi(unsigned long long a, unsigned long long b) {
  return __umul64hi(a, b);
}
__device__ __forceinline__ long long mulhi(long long a, long long b) {
  return (long long)__umul64hi((unsigned long long)a, (unsigned long long)b);
}

template <typename T> __device__ __forceinline__ T min_propagate_nan(T a, T b) {
  return (a != a || b != b) ? nan<T>() : (a < b ? a : b);
}
template <typename T> __device__ __forceinline__ T max_propagate_nan(T a, T b) {
  return (a != a || b != b) ? nan<T>() : (a > b ? a : b);
}

// ---- combiners of the built-in reductions: fold x into the accumulator -----------------------------------
template <typename T> __device__ __forceinline__ void combine_add(T& acc, same_t<T> x) {
  // integer sums wrap, as Triton's do (see wrap_add)
  if constexpr (same_type<T, int>::value || same_type<T, long long>::value) acc = wrap_add<T>(acc, x);
  else acc = acc + x;
}
template <typename T> __device__ __forceinline__ void combine_xor(T& acc, same_t<T> x) { acc = acc ^ x; }
template <typename T> __device__ __forceinline__ void combine_or(T& acc, same_t<T> x) { acc = acc | x; }
template <typename T> __device__ __forceinline__ void combine_max(T& acc, same_t<T> x) {
  if constexpr (same_type<T, float>::value) acc = fmaxf(acc, x);
  else if constexpr (same_type<T, double>::value) acc = fmax(acc, x);
  else acc = x > acc ? x : acc;
}
template <typename T> __device__ __forceinline__ void combine_min(T& acc, same_t<T> x) {
  if constexpr (same_type<T, float>::value) acc = fminf(acc, x);
  else if constexpr (same_type<T, double>::value) acc = fmin(acc, x);
  else acc = x < acc ? x : acc;
}
// (value, index) pairs: the larger value wins; equal values keep the smaller index.
template <typename T, typename I>
__device__ __forceinline__ void combine_argmax(T& v, I& i, same_t<T> xv, same_t<I> xi) {
  if (xv > v || (xv == v && xi < i)) { v = xv; i = xi; }
}
template <typename T, typename I>
__device__ __forceinline__ void combine_argmin(T& v, I& i, same_t<T> xv, same_t<I> xi) {
  if (xv < v || (xv == v && xi < i)) { v = xv; i = xi; }
}

// ---- warp shuffles for every element type --------------------------------------------------------------
template <typename T> __device__ __forceinline__ T shfl_xor(T v, int lane_mask) {
  if constexpr (same_type<T, bool>::value) {
    return __shfl_xor_sync(0xffffffffu, static_cast<int>(v), lane_mask) != 0;
  } else if constexpr (sizeof(T) < 4 && !is_half16<T>::value) {
    return static_cast<T>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), lane_mask));
  } else {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
  }
}

// ---- wide global loads and stores ----------------------------------------------------------------------
template <int BYTES> struct raw;
template <> struct raw<16> { typedef uint4 type; };
template <> struct raw<8> { typedef uint2 type; };
template <> struct raw<4> { typedef unsigned int type; };
template <> struct raw<2> { typedef unsigned short type; };
template <> struct raw<1> { typedef unsigned char type; };

enum Cache { CACHE_DEFAULT, CACHE_CA, CACHE_CG, CACHE_CS, CACHE_CV, CACHE_LU, CACHE_WB, CACHE_WT };

template <int CACHE, typename V> __device__ __forceinline__ V load_raw(const V* p) {
  if constexpr (CACHE == CACHE_CA) return __ldca(p);
  else if constexpr (CACHE == CACHE_CG) return __ldcg(p);
  else if constexpr (CACHE == CACHE_CS) return __ldcs(p);
  else if constexpr (CACHE == CACHE_CV) return __ldcv(p);
  else if constexpr (CACHE == CACHE_LU) return __ldlu(p);
  else return *p;
}

template <int CACHE, typename V> __device__ __forceinline__ void store_raw(V* p, V v) {
  if constexpr (CACHE == CACHE_CG) __stcg(p, v);
  else if constexpr (CACHE == CACHE_CS) __stcs(p, v);
  else if constexpr (CACHE == CACHE_WB) __stwb(p, v);
  else if constexpr (CACHE == CACHE_WT) __stwt(p, v);
  else *p = v;
}

// Eviction priority hints (sm_80+): one 32-bit word at a time keeps the asm simple; ptxas fuses the words
// of a 16-byte run back into one LDG.128 only without hints, so hinted loads use the vector forms below.
#define TP_LD_HINT(SUFFIX, HINT)                                                                                \
  __device__ __forceinline__ uint4 ld_##SUFFIX(const uint4* p) {                                                \
    uint4 v;                                                                                                     \
    asm volatile("ld.global.L1::" HINT ".v4.u32 {%0,%1,%2,%3}, [%4];"                                           \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));                                       \
    return v;                                                                                                    \
  }                                                                                                              \
  __device__ __forceinline__ uint2 ld_##SUFFIX(const uint2* p) {                                                \
    uint2 v;                                                                                                     \
    asm volatile("ld.global.L1::" HINT ".v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));              \
    return v;                                                                                                    \
  }                                                                                                              \
  __device__ __forceinline__ unsigned int ld_##SUFFIX(const unsigned int* p) {                                  \
    unsigned int v;                                                                                              \
    asm volatile("ld.global.L1::" HINT ".u32 %0, [%1];" : "=r"(v) : "l"(p));                                    \
    return v;                                                                                                    \
  }                                                                                                              \
  __device__ __forceinline__ unsigned short ld_##SUFFIX(const unsigned short* p) {                              \
    unsigned short v;                                                                                            \
    asm volatile("ld.global.L1::" HINT ".u16 %0, [%1];" : "=h"(v) : "l"(p));                                    \
    return v;                                                                                                    \
  }                                                                                                              \
  __device__ __forceinline__ unsigned char ld_##SUFFIX(const unsigned char* p) {                                \
    unsigned short v;                                                                                            \
    asm volatile("ld.global.L1::" HINT ".u8 %0, [%1];" : "=h"(v) : "l"(p));                                     \
    return static_cast<unsigned char>(v);                                                                        \
  }
TP_LD_HINT(evict_first, "evict_first")
TP_LD_HINT(evict_last, "evict_last")
#undef TP_LD_HINT

enum Evict { EVICT_NORMAL, EVICT_FIRST, EVICT_LAST };

// Load N consecutive elements (N * sizeof(T) bytes, aligned to that) into dst[0..N).
template <int N, typename T> __device__ __forceinline__ void load(T* dst, const T* src) {
  typedef typename raw<N * sizeof(T)>::type V;
  const V v = *reinterpret_cast<const V*>(src);
  memcpy(dst, &v, sizeof(V));
}

// The same with a cache modifier (tl.load(..., cache_modifier=".cg")).
template <int N, int CACHE, typename T> __device__ __forceinline__ void load_cached(T* dst, const T* src) {
  typedef typename raw<N * sizeof(T)>::type V;
  const V v = load_raw<CACHE>(reinterpret_cast<const V*>(src));
  memcpy(dst, &v, sizeof(V));
}

// The same with an eviction priority hint (EVICT_FIRST or EVICT_LAST), which replaces the cache modifier.
template <int N, int EVICT, typename T> __device__ __forceinline__ void load_evict(T* dst, const T* src) {
  typedef typename raw<N * sizeof(T)>::type V;
  V v;
  if constexpr (EVICT == EVICT_FIRST) v = ld_evict_first(reinterpret_cast<const V*>(src));
  else v = ld_evict_last(reinterpret_cast<const V*>(src));
  memcpy(dst, &v, sizeof(V));
}

// The same as volatile reads (tl.load(..., volatile=True)): a volatile uint4 / uint2 cannot be copied as a
// whole, so its words are read one by one, each volatile.
template <int N, typename T> __device__ __forceinline__ void load_volatile(T* dst, const T* src) {
  typedef typename raw<N * sizeof(T)>::type V;
  const volatile V* q = reinterpret_cast<const volatile V*>(src);
  V v;
  if constexpr (sizeof(V) == 16) v = make_uint4(q->x, q->y, q->z, q->w);
  else if constexpr (sizeof(V) == 8) v = make_uint2(q->x, q->y);
  else v = *q;
  memcpy(dst, &v, sizeof(V));
}

// Store src[0..N) to N consecutive elements at dst (aligned to N * sizeof(T) bytes).
template <int N, typename T> __device__ __forceinline__ void store(T* dst, const T* src) {
  typedef typename raw<N * sizeof(T)>::type V;
  V v;
  memcpy(&v, src, sizeof(V));
  *reinterpret_cast<V*>(dst) = v;
}

// The same with a cache modifier (tl.store(..., cache_modifier=".cs")).
template <int N, int CACHE, typename T> __device__ __forceinline__ void store_cached(T* dst, const T* src) {
  typedef typename raw<N * sizeof(T)>::type V;
  V v;
  memcpy(&v, src, sizeof(V));
  store_raw<CACHE>(reinterpret_cast<V*>(dst), v);
}

// ---- a row loop's rows ahead in shared memory (analysis/row_ring.py) --------------------------------------
// N consecutive elements from global `src` to this thread's shared `dst` (N * sizeof(T) = 4, 8 or 16 bytes):
// cp.async from sm_80 (the copy lands later: row_ring_wait), a load and a shared store below it.
template <int N, typename T> __device__ __forceinline__ void row_ring_copy(T* dst, const T* src) {
  constexpr int BYTES = N * sizeof(T);
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#if __CUDA_ARCH__ >= 800
  const unsigned smem = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(smem), "l"(src), "n"(BYTES) : "memory");
  }
#else
  typedef typename raw<BYTES>::type V;
  *reinterpret_cast<V*>(dst) = *reinterpret_cast<const V*>(src);
#endif
}
// One group per row copied; wait until at most N of this thread's newest groups are in flight.
__device__ __forceinline__ void row_ring_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void row_ring_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#endif
}

}  // namespace tp
// ---- end of device helpers ---------------------------------------------------------------------------------
