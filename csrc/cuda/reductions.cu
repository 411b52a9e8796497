// reductions.*: a segmented reduction over a whole batch in one launch. One warp computes one
// output element: its lanes stride over the reduced elements, then combine by shuffles.
// Accumulation follows operators/reductions.py: sums in 64 bits of the output's kind (elements
// first converted to an integer output type), means and moments in double, min/max in the
// input type; the result is converted to the output type as numpy's astype does (C casts).

enum ReduceKind { kSum, kMean, kMeanSquare, kRms, kMin, kMax, kVariance, kStdDev };
// Per sample: input offset, output offset, output elements, reduced elements per output, mean
// offset (variance, std_dev), then the kept axes' extents and strides and the reduced axes'.
enum ReduceDesc { kRIn, kROut, kROutVol, kRCount, kRMean, kRKeptExt = 5, kRKeptStr = 13, kRRedExt = 21,
                  kRRedStr = 29, kRDesc = 37 };

template <typename T> struct WideOf { typedef i64 type; };  // signed integers
template <> struct WideOf<u8> { typedef u64 type; };
template <> struct WideOf<u16> { typedef u64 type; };
template <> struct WideOf<u32> { typedef u64 type; };
template <> struct WideOf<u64> { typedef u64 type; };
template <> struct WideOf<bool> { typedef u64 type; };
template <> struct WideOf<float> { typedef double type; };
template <> struct WideOf<double> { typedef double type; };

template <typename A> __device__ __forceinline__ A shfl_down(A v, int delta) {
  return __shfl_down_sync(0xffffffffu, v, delta);
}

// NaN-propagating min / max (numpy's)
template <typename A> __device__ __forceinline__ A pick_min(A a, A b) { return (b != b || b < a) ? b : a; }
template <typename A> __device__ __forceinline__ A pick_max(A a, A b) { return (b != b || b > a) ? b : a; }

template <typename In, typename Out, typename A, int K>
__device__ A reduce_warp(const In* x, const i64* d, int nk, int nr, i64 o, int lane, const double* mean) {
  A acc = K == kMin || K == kMax ? A(x[0]) : A(0);
  double mu = K == kVariance ? mean[d[kRMean] + o] : 0.0;
  for (i64 r = lane; r < d[kRCount]; r += 32) {
    i64 at = 0, rem = r;
    for (int j = nr - 1; j >= 0; --j) {
      i64 c = rem % d[kRRedExt + j];
      rem /= d[kRRedExt + j];
      at += c * d[kRRedStr + j];
    }
    In v = x[at];
    if (K == kSum) {
      if (Kind<Out>::is_float) acc += A(double(v));
      else acc += A(Out(v));
    } else if (K == kMean) {
      acc += A(double(v));
    } else if (K == kMeanSquare) {
      acc += A(double(v) * double(v));
    } else if (K == kVariance) {
      double dv = double(v) - mu;
      acc += A(dv * dv);
    } else if (K == kMin) {
      acc = pick_min(acc, A(v));
    } else {
      acc = pick_max(acc, A(v));
    }
  }
  for (int delta = 16; delta > 0; delta >>= 1) {
    A other = shfl_down(acc, delta);
    if (lane + delta < 32) {
      if (K == kMin) acc = pick_min(acc, other);
      else if (K == kMax) acc = pick_max(acc, other);
      else acc += other;
    }
  }
  return acc;
}

template <typename In, typename Out>
__device__ void reduce_batch(int kind, const In* src, Out* dst, const i64* desc, const i64* block_start, int n,
                             int nk, int nr, int ddof, const double* mean) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + kRDesc * s;
  i64 t = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  i64 o = t >> 5;
  int lane = int(t & 31);
  if (o >= d[kROutVol]) return;  // whole warps: the work is 32 threads per output
  i64 base = d[kRIn], rem = o;
  for (int j = nk - 1; j >= 0; --j) {
    i64 c = rem % d[kRKeptExt + j];
    rem /= d[kRKeptExt + j];
    base += c * d[kRKeptStr + j];
  }
  const In* x = src + base;
  double count = double(d[kRCount]);
  Out* out = dst + d[kROut] + o;
  typedef typename WideOf<In>::type W;
  switch (kind) {
    case kSum: {
      if (Kind<Out>::is_float) {
        double r = reduce_warp<In, Out, double, kSum>(x, d, nk, nr, o, lane, mean);
        if (lane == 0) *out = Out(r);
      } else if (Kind<Out>::is_signed) {
        i64 r = reduce_warp<In, Out, i64, kSum>(x, d, nk, nr, o, lane, mean);
        if (lane == 0) *out = Out(r);
      } else {
        u64 r = reduce_warp<In, Out, u64, kSum>(x, d, nk, nr, o, lane, mean);
        if (lane == 0) *out = Out(r);
      }
      break;
    }
    case kMean: case kMeanSquare: case kRms: {
      if (kind == kMean && !Kind<Out>::is_float) {  // as reductions.cpp: the wrapped sum / count, truncating
        i64 n = d[kRCount];
        if (Kind<Out>::is_signed) {
          Out s = Out(reduce_warp<In, Out, i64, kSum>(x, d, nk, nr, o, lane, mean));
          if (lane == 0) *out = n ? Out(i64(s) / n) : Out(0);
        } else {
          Out s = Out(reduce_warp<In, Out, u64, kSum>(x, d, nk, nr, o, lane, mean));
          if (lane == 0) *out = n ? Out(u64(s) / u64(n)) : Out(0);
        }
        break;
      }
      double r = kind == kMean ? reduce_warp<In, Out, double, kMean>(x, d, nk, nr, o, lane, mean)
                               : reduce_warp<In, Out, double, kMeanSquare>(x, d, nk, nr, o, lane, mean);
      r /= count;
      if (lane == 0) *out = Out(kind == kRms ? sqrt(r) : r);
      break;
    }
    case kVariance: case kStdDev: {
      double r = reduce_warp<In, Out, double, kVariance>(x, d, nk, nr, o, lane, mean) / (count - double(ddof));
      if (lane == 0) *out = Out(kind == kStdDev ? sqrt(r) : r);
      break;
    }
    case kMin: {
      W r = reduce_warp<In, Out, W, kMin>(x, d, nk, nr, o, lane, mean);
      if (lane == 0) *out = Out(In(r));
      break;
    }
    default: {
      W r = reduce_warp<In, Out, W, kMax>(x, d, nk, nr, o, lane, mean);
      if (lane == 0) *out = Out(In(r));
    }
  }
}

#define PENSTOCK_REDUCE(I, O)                                                                     \
  extern "C" __global__ void reduce_##I##_##O(int kind, const I* src, O* dst, const i64* desc,    \
                                              const i64* block_start, int n, int nk, int nr, int ddof, \
                                              const double* mean) {                               \
    reduce_batch<I, O>(kind, src, dst, desc, block_start, n, nk, nr, ddof, mean);                \
  }
// Only the pairs the operators ask for (reductions' allowed dtypes, normalize's float64 statistics):
// the input's own type, float32, float64 and the 64-bit type of the input's kind. Every pair of the
// 11 types would be 121 kernels and a minute of NVRTC on the first use.
#define PENSTOCK_REDUCE_FLOATS(I) PENSTOCK_REDUCE(I, f32) PENSTOCK_REDUCE(I, f64)
#define PENSTOCK_REDUCE_UNSIGNED(I) PENSTOCK_REDUCE(I, I) PENSTOCK_REDUCE_FLOATS(I) PENSTOCK_REDUCE(I, u64)
#define PENSTOCK_REDUCE_SIGNED(I) PENSTOCK_REDUCE(I, I) PENSTOCK_REDUCE_FLOATS(I) PENSTOCK_REDUCE(I, i64)
PENSTOCK_REDUCE_UNSIGNED(u8) PENSTOCK_REDUCE_UNSIGNED(u16) PENSTOCK_REDUCE_UNSIGNED(u32)
PENSTOCK_REDUCE_UNSIGNED(bool)
PENSTOCK_REDUCE(u64, u64) PENSTOCK_REDUCE_FLOATS(u64)
PENSTOCK_REDUCE_SIGNED(i8) PENSTOCK_REDUCE_SIGNED(i16) PENSTOCK_REDUCE_SIGNED(i32)
PENSTOCK_REDUCE(i64, i64) PENSTOCK_REDUCE_FLOATS(i64)
PENSTOCK_REDUCE_FLOATS(f32)
PENSTOCK_REDUCE(f64, f64)
