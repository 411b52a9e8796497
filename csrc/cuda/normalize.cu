// normalize (operators/normalize.py): out = (x - mean) / stddev * scale + shift, in double, written
// as float. The statistics are per sample (or one set for the batch) in double; each has strides
// over the sample's axes (0 on a reduced axis, all 0 for one value), so one kernel serves computed,
// given scalar and given per-sample statistics. One thread per element, the batch in one launch.
enum NormDesc { kNSrcOff, kNDstOff, kNVolume, kNMeanOff, kNStdOff, kNShape = 5, kNMeanStride = 13,
                kNStdStride = 21, kNDesc = 29 };

template <typename T> __device__ __forceinline__ double norm_value(T v) { return double(v); }
template <> __device__ __forceinline__ double norm_value<f16>(f16 v) { return double(half_to_float(v)); }

template <typename T>
__device__ void normalize_batch(const T* src, float* dst, const i64* desc, const i64* block_start, int n, int nd,
                                const double* mean, const double* stddev, double scale, double shift) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kNDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kNVolume]) return;
  i64 rest = e, m = d[kNMeanOff], sd = d[kNStdOff];
  for (int k = nd - 1; k >= 0; --k) {  // the element's index along each axis, innermost first
    i64 extent = d[kNShape + k];
    i64 i = rest % extent;
    rest /= extent;
    m += i * d[kNMeanStride + k];
    sd += i * d[kNStdStride + k];
  }
  double x = norm_value<T>(src[d[kNSrcOff] + e]);
  dst[d[kNDstOff] + e] = float((x - mean[m]) / stddev[sd] * scale + shift);
}

#define PENSTOCK_NORMALIZE(T)                                                                            \
  extern "C" __global__ void normalize_##T(const T* src, float* dst, const i64* desc, const i64* block_start, \
                                           int n, int nd, const double* mean, const double* stddev,      \
                                           double scale, double shift) {                                 \
    normalize_batch<T>(src, dst, desc, block_start, n, nd, mean, stddev, scale, shift);                  \
  }
PENSTOCK_NORMALIZE(u8) PENSTOCK_NORMALIZE(i8) PENSTOCK_NORMALIZE(u16) PENSTOCK_NORMALIZE(i16)
PENSTOCK_NORMALIZE(u32) PENSTOCK_NORMALIZE(i32) PENSTOCK_NORMALIZE(u64) PENSTOCK_NORMALIZE(i64)
PENSTOCK_NORMALIZE(f16) PENSTOCK_NORMALIZE(f32) PENSTOCK_NORMALIZE(f64)
