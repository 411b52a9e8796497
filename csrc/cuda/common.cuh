// Shared by every CUDA kernel file: it is prepended to each file when the file is compiled at run
// time (NVRTC through CuPy), so it may use no system headers.
//
// Batch kernels launch one grid per batch. Work is cut into blocks per sample; `block_start`
// (N + 1 prefix sums of per-sample block counts, in device memory) maps a block to its sample.
// Value conversion follows the CPU kernels (engine/convert.h, kernels/fast_convert.h): float ->
// integer pixels round half away from zero and saturate; float16 rounds to nearest even.
typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef short i16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef float f32;
typedef double f64;
struct f16 {  // IEEE half, carried as bits
  u16 bits;
};


__device__ __forceinline__ float half_to_float(f16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
__device__ __forceinline__ f16 float_to_half(float f) {
  f16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}

// float_to_half saturating to the largest finite half (+-65504); NaN stays NaN (engine/convert.h)
__device__ __forceinline__ f16 float_to_half_sat(float f) {
  return float_to_half(f != f ? f : fminf(fmaxf(f, -65504.0f), 65504.0f));
}

template <typename T> __device__ __forceinline__ float to_float(T v) { return float(v); }
template <> __device__ __forceinline__ float to_float<f16>(f16 v) { return half_to_float(v); }

template <typename T> struct Limits;
template <> struct Limits<u8> { static constexpr float lo = 0.f, hi = 255.f; static constexpr bool is_signed = false; };
template <> struct Limits<i8> { static constexpr float lo = -128.f, hi = 127.f; static constexpr bool is_signed = true; };
template <> struct Limits<u16> { static constexpr float lo = 0.f, hi = 65535.f; static constexpr bool is_signed = false; };
template <> struct Limits<i16> { static constexpr float lo = -32768.f, hi = 32767.f; static constexpr bool is_signed = true; };

// A float result stored as a pixel of type Out (fast_convert.h's round_sat): integers rounded half
// away from zero, or half to even with kHalfToEven (Rounding::HalfToEven).
template <typename Out> struct PixelFrom {
  template <bool kHalfToEven>
  __device__ static __forceinline__ Out convert(float v) {  // narrow integers
    const float just_below_half = 0.49999997f;
    if (Limits<Out>::is_signed) v = v == v ? v : 0.f;
    v = v > Limits<Out>::lo ? v : Limits<Out>::lo;
    v = v < Limits<Out>::hi ? v : Limits<Out>::hi;
    if (kHalfToEven) return Out(__float2int_rn(v));
    if (Limits<Out>::is_signed) return Out(int(v + copysignf(just_below_half, v)));
    return Out(int(v + just_below_half));
  }
};
template <> struct PixelFrom<float> {
  template <bool> __device__ static __forceinline__ float convert(float v) { return v; }
};
template <> struct PixelFrom<f16> {
  template <bool> __device__ static __forceinline__ f16 convert(float v) { return float_to_half(v); }
};
template <> struct PixelFrom<i32> {
  template <bool kHalfToEven>
  __device__ static __forceinline__ i32 convert(float v) {
    double d = double(v);
    if (d != d) d = 0;
    d = d > -2147483648.0 ? d : -2147483648.0;
    d = d < 2147483647.0 ? d : 2147483647.0;
    if (kHalfToEven) return i32(__double2ll_rn(d));
    return i32(i64(d + copysign(0.5, d)));
  }
};
template <typename Out, bool kHalfToEven = false>
__device__ __forceinline__ Out pixel_from(float v) { return PixelFrom<Out>::template convert<kHalfToEven>(v); }

// The sample that block `block` of a batch launch works on.
__device__ __forceinline__ int find_sample(const i64* block_start, int n, i64 block) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (block_start[mid] <= block) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Elements per thread of the batch kernels that loop over several (ITEMS in _cuda/kernels/_launch.py): a
// thread finds its sample and reads the sample's descriptor once for all of them, instead of once
// per element (which cost more than the element itself in crop_mirror_normalize and the gather).
constexpr int kItems = 8;

// Calls body(e, i) for each of this thread's elements of sample s, which has `count` of them: e is
// the element's index, i the same as a u32 where all of the sample's elements fit, else as an i64
// (the kernels divide it by the sample's dimensions, and a 64-bit division costs the GPU several
// times a 32-bit one). Item j is element first + j * blockDim.x: consecutive threads, consecutive
// elements.
template <typename Body>
__device__ __forceinline__ void for_items(const i64* block_start, int s, i64 count, Body&& body) {
  const i64 first = (i64(blockIdx.x) - block_start[s]) * blockDim.x * kItems + threadIdx.x;
  const bool narrow = count <= i64(0xFFFFFFFFu);
  for (int j = 0; j < kItems; ++j) {
    i64 e = first + i64(j) * blockDim.x;
    if (e >= count) return;
    if (narrow) body(e, u32(e));
    else body(e, e);
  }
}

// Per-axis window arithmetic (kernels/window.h): output x of a window [anchor, anchor + out)
// reads source anchor + x (or anchor + out - 1 - x when flipped); -1 when outside the source.
__device__ __forceinline__ i64 window_source(i64 anchor, i64 out, i64 extent, bool flip, i64 x) {
  i64 s = flip ? anchor + out - 1 - x : anchor + x;
  return (s >= 0 && s < extent) ? s : -1;
}

// convert_sat of engine/convert.h (cast, noise, ...): float -> integer rounds half away from zero and
// saturates; integer -> integer saturates.
template <typename T> struct Kind {
  static constexpr bool is_float = false, is_signed = T(-1) < T(0), is_bool = false;
};
template <> struct Kind<float> { static constexpr bool is_float = true, is_signed = true, is_bool = false; };
template <> struct Kind<double> { static constexpr bool is_float = true, is_signed = true, is_bool = false; };
template <> struct Kind<bool> { static constexpr bool is_float = false, is_signed = false, is_bool = true; };

template <typename T> struct Range;
template <> struct Range<u8> { static constexpr u8 lo = 0, hi = 255; };
template <> struct Range<i8> { static constexpr i8 lo = -128, hi = 127; };
template <> struct Range<u16> { static constexpr u16 lo = 0, hi = 65535; };
template <> struct Range<i16> { static constexpr i16 lo = -32768, hi = 32767; };
template <> struct Range<u32> { static constexpr u32 lo = 0, hi = 4294967295u; };
template <> struct Range<i32> { static constexpr i32 lo = -2147483647 - 1, hi = 2147483647; };
template <> struct Range<u64> { static constexpr u64 lo = 0, hi = 18446744073709551615ull; };
template <> struct Range<i64> { static constexpr i64 lo = -9223372036854775807ll - 1, hi = 9223372036854775807ll; };

template <typename Out, typename In>
__device__ __forceinline__ Out convert_sat(In v) {
  if constexpr (Kind<Out>::is_bool) return Out(v != In(0));
  else if constexpr (Kind<Out>::is_float) return Out(v);
  else if constexpr (Kind<In>::is_bool) return Out(v);
  else if constexpr (Kind<In>::is_float) {
    if (v != v) return Out(0);
    double r = round(double(v));  // half away from zero
    if (r <= double(Range<Out>::lo)) return Range<Out>::lo;
    if (r >= double(Range<Out>::hi)) return Range<Out>::hi;
    return Out(r);
  }
  else if constexpr (Kind<In>::is_signed && !Kind<Out>::is_signed) {
    if (v < In(0)) return Out(0);
    if (u64(v) > u64(Range<Out>::hi)) return Range<Out>::hi;
    return Out(v);
  }
  else if constexpr (!Kind<In>::is_signed && Kind<Out>::is_signed) {
    if (u64(v) > u64(Range<Out>::hi)) return Range<Out>::hi;
    return Out(v);
  }
  else if constexpr (Kind<In>::is_signed) {
    i64 w = i64(v);
    if (w < i64(Range<Out>::lo)) return Range<Out>::lo;
    if (w > i64(Range<Out>::hi)) return Range<Out>::hi;
    return Out(v);
  }
  else {
    u64 w = u64(v);
    if (w > u64(Range<Out>::hi)) return Range<Out>::hi;
    return Out(v);
  }
}

// convert_trunc of engine/convert.h (crop, slice): convert_sat, except that float -> integer
// truncates toward zero first.
template <typename Out, typename In>
__device__ __forceinline__ Out convert_trunc(In v) {
  if constexpr (Kind<In>::is_float && !Kind<Out>::is_float && !Kind<Out>::is_bool)
    return convert_sat<Out, In>(In(trunc(double(v))));
  else return convert_sat<Out, In>(v);
}
