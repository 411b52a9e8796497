// Separable Gaussian blur (kernels/gaussian_blur.cpp): one launch per spatial axis, each thread
// computes one element of one pass: the window taps along the axis (reflect-101 borders) summed
// in float as the CPU does (centre tap, then the pairs at distance 1..r), without fused
// multiply-adds. Samples are (outer, spatial..., channels); the pass along an axis sees a sample
// as [outer, extent, inner]. Intermediate passes are float; the last converts to the output type.
enum BlurDesc { kBInOff, kBOutOff, kBVolume, kBExtent, kBInner, kBRadius, kBWeights, kBDesc = 7 };

__device__ __forceinline__ i64 reflect101(i64 i, i64 n) {
  if (n == 1) return 0;
  i64 period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

template <typename In, typename Out>
__device__ void blur_pass(const In* src, Out* dst, const i64* desc, const i64* block_start, int n,
                          const float* weights) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kBDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kBVolume]) return;
  const i64 extent = d[kBExtent], inner = d[kBInner], r = d[kBRadius];
  const i64 j = (e / inner) % extent;
  const In* line = src + d[kBInOff] + (e - j * inner);  // element 0 of this line
  const float* w = weights + d[kBWeights];              // 2r + 1 taps
  float acc = __fmul_rn(w[r], to_float(line[j * inner]));
  for (i64 k = 1; k <= r; ++k) {
    const i64 lo = j - k >= 0 ? j - k : reflect101(j - k, extent);  // the modulo only at the borders
    const i64 hi = j + k < extent ? j + k : reflect101(j + k, extent);
    float pair = __fadd_rn(to_float(line[lo * inner]), to_float(line[hi * inner]));
    acc = __fadd_rn(acc, __fmul_rn(w[r + k], pair));
  }
  dst[d[kBOutOff] + e] = pixel_from<Out>(acc);
}

#define PENSTOCK_BLUR(I, O)                                                                             \
  extern "C" __global__ void blur_##I##_##O(const I* src, O* dst, const i64* desc, const i64* block_start, \
                                            int n, const float* weights) {                              \
    blur_pass<I, O>(src, dst, desc, block_start, n, weights);                                           \
  }
#define PENSTOCK_BLUR_IN(I) \
  PENSTOCK_BLUR(I, u8) PENSTOCK_BLUR(I, i16) PENSTOCK_BLUR(I, u16) PENSTOCK_BLUR(I, i32) PENSTOCK_BLUR(I, f32)
PENSTOCK_BLUR_IN(u8) PENSTOCK_BLUR_IN(i16) PENSTOCK_BLUR_IN(u16) PENSTOCK_BLUR_IN(i32) PENSTOCK_BLUR_IN(f32)
