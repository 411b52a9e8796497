// Point operations on uint8 images, channels last (operators/point_ops.py; CPU: kernels/point_ops.cpp):
// per-sample channel histograms, lookup tables computed from them (equalize, auto-contrast,
// contrast), a 256-entry table per sample and channel applied to every element, and sharpness.
// Each is one launch per batch; the tables' float arithmetic is the numpy code's, operation by
// operation in float64 (explicit _rn operations: no fused multiply-add).

// ---- channel histograms: hist[s, c * 256 + v] (u64, zeroed by the caller) -------------------
// A block counts kHistItems * blockDim elements of one sample into shared memory (samples of up to
// kHistSharedChannels channels), then adds its non-zero bins to the global histogram.
enum HistDesc { kHInOff, kHVolume, kHChannels, kHDesc = 3 };
constexpr int kHistItems = 16;
constexpr int kHistSharedChannels = 8;

extern "C" __global__ void channel_histograms(const u8* src, u64* hist, const i64* desc, const i64* block_start,
                                              int n, int max_c) {
  __shared__ u32 bins[kHistSharedChannels * 256];
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kHDesc;
  const i64 c = d[kHChannels], volume = d[kHVolume];
  const bool shared = c <= kHistSharedChannels;
  const int nbins = int(c) * 256;
  u64* h = hist + i64(s) * max_c * 256;
  if (shared) {
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) bins[b] = 0;
    __syncthreads();
  }
  const u8* in = src + d[kHInOff];
  const i64 first = (i64(blockIdx.x) - block_start[s]) * blockDim.x * kHistItems + threadIdx.x;
  for (int k = 0; k < kHistItems; ++k) {
    const i64 e = first + i64(k) * blockDim.x;
    if (e >= volume) break;
    const int bin = int(e % c) * 256 + in[e];
    if (shared) atomicAdd(&bins[bin], 1u);
    else atomicAdd(reinterpret_cast<unsigned long long*>(&h[bin]), 1ull);
  }
  if (shared) {
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
      if (bins[b]) atomicAdd(reinterpret_cast<unsigned long long*>(&h[b]), (unsigned long long)bins[b]);
  }
}

// ---- lookup tables from histograms: one block of 256 threads per sample, thread v = value v -----
enum HistLut { kEqualize, kAutoContrast, kContrast };

// Inclusive prefix sum over the block (256 threads); every thread gets its own and the total.
__device__ i64 block_scan(i64 v, i64* buf, i64* total) {
  const int t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (int step = 1; step < 256; step <<= 1) {
    const i64 add = t >= step ? buf[t - step] : 0;
    __syncthreads();
    buf[t] += add;
    __syncthreads();
  }
  const i64 r = buf[t];
  *total = buf[255];
  __syncthreads();  // buf is reused by the next scan
  return r;
}

// floor(clip(x, 0, 255) + 0.5): point_ops._lut_u8
__device__ __forceinline__ u8 lut_u8(double x) {
  x = x > 0.0 ? x : 0.0;
  x = x < 255.0 ? x : 255.0;
  return u8(floor(__dadd_rn(x, 0.5)));
}

// hist [N, max_c, 256]; luts [N, max_c, 256]; params [N] (contrast's factor); weights [max_c]
// (contrast's grey level: sum of channel means times weights, in that order).
extern "C" __global__ void histogram_luts(const u64* hist, u8* luts, const double* params, const double* weights,
                                          int max_c, int kind) {
  __shared__ i64 buf[256];
  __shared__ int used_lo, used_hi;
  const int s = blockIdx.x, v = threadIdx.x;
  const u64* hs = hist + i64(s) * max_c * 256;
  u8* ls = luts + i64(s) * max_c * 256;
  double grey_sum = 0.0;  // contrast: running sum of mean_c * weight_c (every thread holds it)
  for (int c = 0; c < max_c; ++c) {
    const i64 count = i64(hs[c * 256 + v]);
    if (v == 0) {
      used_lo = 256;
      used_hi = -1;
    }
    __syncthreads();
    if (count > 0) {
      atomicMin(&used_lo, v);
      atomicMax(&used_hi, v);
    }
    i64 total;
    const i64 upto = block_scan(count, buf, &total);  // also orders the atomics before the reads below
    const int lo = used_lo <= 255 ? used_lo : 0, hi = used_hi >= 0 ? used_hi : 255;  // numpy argmax of none: 0
    if (kind == kEqualize) {  // point_ops._equalize: (cdf - count of lo) * 255 / (total - it), half to even
      const i64 lo_count = i64(hs[c * 256 + lo]);
      const i64 denom = total - lo_count;
      double x = __dmul_rn(double(upto - lo_count), 255.0) / double(denom > 1 ? denom : 1);  // IEEE division
      x = x > 0.0 ? x : 0.0;
      x = x < 255.0 ? x : 255.0;
      ls[c * 256 + v] = denom == 0 ? u8(v) : u8(rint(x));
    } else if (kind == kAutoContrast) {
      const double scale = 255.0 / double(hi - lo > 1 ? hi - lo : 1);
      ls[c * 256 + v] = hi > lo ? lut_u8(__dmul_rn(double(v) - double(lo), scale)) : u8(v);
    } else {
      i64 weighted;
      block_scan(count * v, buf, &weighted);
      const double mean = double(weighted) / double(total > 1 ? total : 1);
      grey_sum = __dadd_rn(grey_sum, __dmul_rn(mean, weights[c]));
    }
    __syncthreads();  // used_lo/used_hi are reset for the next channel
  }
  if (kind == kContrast) {
    const double grey = floor(__dadd_rn(grey_sum, 0.5));
    const u8 out = lut_u8(__dadd_rn(grey, __dmul_rn(params[s], double(v) - grey)));
    for (int c = 0; c < max_c; ++c) ls[c * 256 + v] = out;
  }
}

// ---- table lookup: out[e] = luts[s, e % channels, in[e]], one thread per element --------------
enum LutDesc { kLInOff, kLOutOff, kLVolume, kLChannels, kLDesc = 4 };

extern "C" __global__ void apply_lut(const u8* src, u8* dst, const i64* desc, const i64* block_start, int n,
                                     const u8* luts, int max_c) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kLDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kLVolume]) return;
  const u8* table = luts + (i64(s) * max_c + e % d[kLChannels]) * 256;
  dst[d[kLOutOff] + e] = table[src[d[kLInOff] + e]];
}

// ---- sharpness (PIL's ImageEnhance.Sharpness, as kernels/point_ops.cpp computes it in float) --
// degenerate = ([1 1 1; 1 5 1; 1 1 1] / 13, rounded) inside, the pixel itself on the border;
// out = round(degenerate + factor * (pixel - degenerate)), clamped. One thread per element.
enum SharpDesc { kSInOff, kSOutOff, kSVolume, kSH, kSW, kSC, kSDesc = 6 };

extern "C" __global__ void sharpness(const u8* src, u8* dst, const i64* desc, const i64* block_start, int n,
                                     const float* factors) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kSDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kSVolume]) return;
  const i64 h = d[kSH], w = d[kSW], c = d[kSC], row = w * c;
  const i64 y = e / row, x = (e % row) / c;
  const u8* in = src + d[kSInOff];
  const int v = in[e];
  int degenerate = v;
  if (y > 0 && y + 1 < h && x > 0 && x + 1 < w) {
    int sum = 4 * v;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) sum += in[e + dy * row + dx * c];
    degenerate = (sum + 6) / 13;
  }
  const float r = __fadd_rn(float(degenerate), __fmul_rn(factors[s], float(v - degenerate)));
  float q = floorf(__fadd_rn(r, 0.5f));
  q = q > 0.f ? q : 0.f;
  q = q < 255.f ? q : 255.f;
  dst[d[kSOutOff] + e] = u8(q);
}
