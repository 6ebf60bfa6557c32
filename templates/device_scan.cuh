// ---- scan helpers (templates/device_scan.cuh, only in kernels with a scan) ---------------------------------
namespace tp {

// Shuffles of every element type: up (from lane - delta), down (from lane + delta), and from a given lane.
#define TP_SHFL(NAME, INTRINSIC)                                                                              \
  template <typename T> __device__ __forceinline__ T NAME(T v, int arg) {                                     \
    if constexpr (same_type<T, bool>::value) {                                                                \
      return INTRINSIC(0xffffffffu, static_cast<int>(v), arg) != 0;                                           \
    } else if constexpr (sizeof(T) < 4 && !is_half16<T>::value) {                                             \
      return static_cast<T>(INTRINSIC(0xffffffffu, static_cast<int>(v), arg));                                \
    } else {                                                                                                  \
      return INTRINSIC(0xffffffffu, v, arg);                                                                  \
    }                                                                                                         \
  }
TP_SHFL(shfl_up, __shfl_up_sync)
TP_SHFL(shfl_down, __shfl_down_sync)
TP_SHFL(shfl_from, __shfl_sync)
#undef TP_SHFL

}  // namespace tp
