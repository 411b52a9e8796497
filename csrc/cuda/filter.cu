// Neighbourhood filters (kernels/filter.cpp): correlation with a per-sample filter, the Laplacian's
// separable passes, and the rank filters (median, minimum, maximum). One thread per output element;
// sums in float in the CPU kernels' order, without fused multiply-adds, so the results are the CPU's.
// Samples are (outer, D, H, W, C) (2-D samples: D = 1).

// Border modes (operators/filter.py's BORDERS): the source index of position i of an axis of extent
// n, or -1 for the constant border.
__device__ __forceinline__ i64 border_index(i64 i, i64 n, int border) {
  if (i >= 0 && i < n) return i;
  if (border == 0) {  // reflect 101
    if (n == 1) return 0;
    i64 period = 2 * (n - 1);
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
  }
  if (border == 1) {  // reflect 1001
    i64 period = 2 * n;
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - 1 - i;
  }
  if (border == 2) {  // wrap
    i %= n;
    return i < 0 ? i + n : i;
  }
  if (border == 3) return i < 0 ? 0 : n - 1;  // clamp
  return -1;  // constant
}

// ---- correlation ---------------------------------------------------------------------------------
enum FilterDesc {
  kFInOff, kFOutOff, kFVolume, kFD, kFH, kFW, kFC, kFOD, kFOH, kFOW,
  kFFD, kFFH, kFFW, kFAZ, kFAY, kFAX, kFFilterOff, kFDesc = 17
};

template <typename In, typename Out>
__device__ void filter_kernel(const In* src, Out* dst, const i64* desc, const i64* block_start, int n,
                              const float* filters, const float* fill, int border) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kFDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kFVolume]) return;
  const i64 C = d[kFC], OW = d[kFOW], OH = d[kFOH], OD = d[kFOD], D = d[kFD], H = d[kFH], W = d[kFW];
  const i64 c = e % C, x = (e / C) % OW, y = (e / (C * OW)) % OH, z = (e / (C * OW * OH)) % OD;
  const i64 o = e / (C * OW * OH * OD);
  const In* plane = src + d[kFInOff] + o * D * H * W * C;
  const float* f = filters + d[kFFilterOff];
  const float fv = fill[s];
  float acc = 0.f;
  for (i64 i = 0; i < d[kFFD]; ++i) {
    i64 sz = border_index(z - d[kFAZ] + i, D, border);
    for (i64 j = 0; j < d[kFFH]; ++j) {
      i64 sy = border_index(y - d[kFAY] + j, H, border);
      for (i64 l = 0; l < d[kFFW]; ++l) {
        i64 sx = border_index(x - d[kFAX] + l, W, border);
        float v = sz < 0 || sy < 0 || sx < 0 ? fv : to_float(plane[((sz * H + sy) * W + sx) * C + c]);
        acc = __fadd_rn(acc, __fmul_rn(f[(i * d[kFFH] + j) * d[kFFW] + l], v));
      }
    }
  }
  dst[d[kFOutOff] + e] = pixel_from<Out, true>(acc);  // half to even, as the CPU kernel (DALI's rounding)
}

// ---- the Laplacian's passes ------------------------------------------------------------------------
// A pass along an axis of a sample seen as [outer, extent, inner], reflect-101 borders, symmetric
// window of 2r + 1 taps: centre tap, then the pairs at distance 1..r (kernels/separable.h).
enum PassDesc { kPInOff, kPOutOff, kPVolume, kPExtent, kPInner, kPRadius, kPWeights, kPDesc = 7 };

template <typename In>
__device__ void separable_pass(const In* src, float* dst, const i64* desc, const i64* block_start, int n,
                               const float* weights) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kPDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kPVolume]) return;
  const i64 extent = d[kPExtent], inner = d[kPInner], r = d[kPRadius];
  const i64 j = (e / inner) % extent;
  const In* line = src + d[kPInOff] + (e - j * inner);
  const float* w = weights + d[kPWeights];
  float acc = __fmul_rn(w[r], to_float(line[j * inner]));
  for (i64 k = 1; k <= r; ++k) {
    float pair = __fadd_rn(to_float(line[border_index(j - k, extent, 0) * inner]),
                           to_float(line[border_index(j + k, extent, 0) * inner]));
    acc = __fadd_rn(acc, __fmul_rn(w[r + k], pair));
  }
  dst[d[kPOutOff] + e] = acc;
}

// acc += scale[sample] * part, over the whole batch (packed alike); `first`: acc = 0 + scale * part.
extern "C" __global__ void accumulate_scaled(float* acc, const float* part, const i64* desc, const i64* block_start,
                                             int n, const float* scales, int first) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * 3;  // offset, volume, scale index
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[1]) return;
  float v = __fmul_rn(scales[d[2]], part[d[0] + e]);
  acc[d[0] + e] = first ? __fadd_rn(0.f, v) : __fadd_rn(acc[d[0] + e], v);
}

template <typename Out>
__device__ void store_float(const float* src, Out* dst, const i64* desc, const i64* block_start, int n) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * 3;  // source offset, destination offset, volume
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[2]) return;
  dst[d[1] + e] = pixel_from<Out>(src[d[0] + e]);
}

// ---- rank filters ------------------------------------------------------------------------------------
enum RankDesc { kRInOff, kROutOff, kRVolume, kRH, kRW, kRC, kRWH, kRWW, kRAY, kRAX, kRDesc = 10 };

template <typename T> __device__ __forceinline__ bool less_than(T a, T b) { return a < b; }
template <> __device__ __forceinline__ bool less_than<f16>(f16 a, f16 b) { return half_to_float(a) < half_to_float(b); }

// rank 0: median (the (count / 2)-th smallest of the window's values inside the image), 1: minimum,
// 2: maximum; outside the image `border` (constant: the point is left out).
template <typename T>
__device__ void rank_kernel(const T* src, T* dst, const i64* desc, const i64* block_start, int n, int rank,
                            int border) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kRDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kRVolume]) return;
  const i64 C = d[kRC], W = d[kRW], H = d[kRH];
  const i64 c = e % C, x = (e / C) % W, y = (e / (C * W)) % H, o = e / (C * W * H);
  const T* plane = src + d[kRInOff] + o * H * W * C;
  const i64 wh = d[kRWH], ww = d[kRWW];
  bool found = false;
  T best = T();
  i64 count = 0;
  if (rank == 0) {
    for (i64 j = 0; j < wh; ++j)
      for (i64 l = 0; l < ww; ++l)
        count += border_index(y - d[kRAY] + j, H, border) >= 0 && border_index(x - d[kRAX] + l, W, border) >= 0;
  }
  const i64 m = count / 2;
  for (i64 j = 0; j < wh && !(rank == 0 && found); ++j) {
    i64 sy = border_index(y - d[kRAY] + j, H, border);
    for (i64 l = 0; l < ww; ++l) {
      i64 sx = border_index(x - d[kRAX] + l, W, border);
      if (sy < 0 || sx < 0) continue;
      T v = plane[(sy * W + sx) * C + c];
      if (rank == 1) { if (!found || less_than(v, best)) best = v; found = true; continue; }
      if (rank == 2) { if (!found || less_than(best, v)) best = v; found = true; continue; }
      // median: v is the m-th smallest when fewer than m + 1 values are below it and more than m are at most it
      i64 below = 0, at_most = 0;
      for (i64 jj = 0; jj < wh; ++jj) {
        i64 yy = border_index(y - d[kRAY] + jj, H, border);
        for (i64 ll = 0; ll < ww; ++ll) {
          i64 xx = border_index(x - d[kRAX] + ll, W, border);
          if (yy < 0 || xx < 0) continue;
          T u = plane[(yy * W + xx) * C + c];
          below += less_than(u, v);
          at_most += !less_than(v, u);
        }
      }
      if (below <= m && m < at_most) { best = v; found = true; break; }
    }
  }
  dst[d[kROutOff] + e] = best;
}

#define PENSTOCK_FILTER(I, O)                                                                                   \
  extern "C" __global__ void filter_##I##_##O(const I* src, O* dst, const i64* desc, const i64* block_start,   \
                                              int n, const float* filters, const float* fill, int border) {     \
    filter_kernel<I, O>(src, dst, desc, block_start, n, filters, fill, border);                                \
  }
#define PENSTOCK_FILTER_TYPE(T)                                                                                 \
  PENSTOCK_FILTER(T, T)                                                                                         \
  extern "C" __global__ void separable_pass_##T(const T* src, float* dst, const i64* desc, const i64* block_start, \
                                                int n, const float* weights) {                                  \
    separable_pass<T>(src, dst, desc, block_start, n, weights);                                                 \
  }                                                                                                             \
  extern "C" __global__ void store_float_##T(const float* src, T* dst, const i64* desc, const i64* block_start,  \
                                             int n) {                                                           \
    store_float<T>(src, dst, desc, block_start, n);                                                             \
  }                                                                                                             \
  extern "C" __global__ void rank_filter_##T(const T* src, T* dst, const i64* desc, const i64* block_start,      \
                                             int n, int rank, int border) {                                     \
    rank_kernel<T>(src, dst, desc, block_start, n, rank, border);                                               \
  }
PENSTOCK_FILTER_TYPE(u8) PENSTOCK_FILTER_TYPE(i8) PENSTOCK_FILTER_TYPE(u16) PENSTOCK_FILTER_TYPE(i16)
PENSTOCK_FILTER_TYPE(f16) PENSTOCK_FILTER_TYPE(f32)
PENSTOCK_FILTER(u8, f32) PENSTOCK_FILTER(i8, f32) PENSTOCK_FILTER(u16, f32) PENSTOCK_FILTER(i16, f32)
PENSTOCK_FILTER(f16, f32)
