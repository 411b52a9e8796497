// The speech feature chain on the GPU (operators/audio_features.py; CPU: kernels/audio_features.cpp),
// each kernel one launch per batch, one thread per output element:
// - audio_frames: the windowed frames of every sample's spectrogram, zero-padded to nfft, as rows of
//   one [frames, nfft] float batch; the transform of all rows is one batched cuFFT plan (CuPy's
//   rfft), then audio_power writes |X|^2 or |X| in the sample's layout;
// - audio_power_lines: the same for power_spectrum's lines along any axis;
// - audio_matrix: a matrix along the middle axis of [outer, n, inner] samples (mel, DCT);
// - audio_decibels: multiplier * log10(max(x / reference, cutoff)) with per-sample references;
// - audio_preemphasis_<In>: x[t] - coeff * x[t - 1] over each sample, in float.

// reflect_101 of an index outside [0, n): ... 2 1 | 0 1 ... n-1 | n-2 ...
__device__ __forceinline__ i64 reflect_index(i64 i, i64 n) {
  if (n == 1) return 0;
  const i64 period = 2 * (n - 1);
  i = i < 0 ? -i : i;
  i %= period;
  return i >= n ? period - i : i;
}

// ---- frames: desc [src offset, length, first row, frames] -------------------------------------
enum FrameDesc { kFSrcOff, kFLength, kFRow, kFFrames, kFDesc };

extern "C" __global__ void audio_frames(const float* src, float* rows, const i64* desc, const i64* block_start, int n,
                                        const double* window, int wlen, int nfft, int step, int centered,
                                        int reflect) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kFDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kFFrames] * nfft) return;
  const i64 f = e / nfft, t = e % nfft;
  float* out = rows + (d[kFRow] + f) * nfft + t;
  if (t >= wlen) {
    *out = 0.0f;
    return;
  }
  const i64 len = d[kFLength];
  const i64 idx = f * step - (centered ? wlen / 2 : 0) + t;
  double v = 0.0;
  if (idx >= 0 && idx < len) v = src[d[kFSrcOff] + idx];
  else if (reflect) v = src[d[kFSrcOff] + reflect_index(idx, len)];
  *out = float(v * window[t]);
}

// ---- spectra from the transformed rows: desc [first row, frames, dst offset] ------------------
enum PowerDesc { kPRow, kPFrames, kPDstOff, kPDesc };

// bins: complex (re, im) [rows, nbins]; out: bins x frames (freq_major) or frames x bins
extern "C" __global__ void audio_power(const float* bins, float* dst, const i64* desc, const i64* block_start, int n,
                                       int nbins, int power, int freq_major) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kPDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  const i64 frames = d[kPFrames];
  if (e >= frames * nbins) return;
  const i64 f = e / nbins, k = e % nbins;
  const float* c = bins + 2 * ((d[kPRow] + f) * nbins + k);
  const float p = c[0] * c[0] + c[1] * c[1];
  dst[d[kPDstOff] + (freq_major ? k * frames + f : f * nbins + k)] = power == 2 ? p : sqrtf(p);
}

// ---- power_spectrum's lines: desc [src offset, outer, length, inner, first row, dst offset, nfft]
enum LineDesc { kLSrcOff, kLOuter, kLLength, kLInner, kLRow, kLDstOff, kLNfft, kLDesc };

// Thread e of a launch over every line (o, j) of every sample, `per_line` threads a line: its
// sample's descriptor, line, and index k within the line (valid false past the sample's work).
struct LineItem {
  const i64* d;
  i64 line, o, j, k;
  bool valid;
};

__device__ __forceinline__ LineItem line_item(const i64* desc, const i64* block_start, int n, i64 per_line) {
  const int s = find_sample(block_start, n, blockIdx.x);
  LineItem it;
  it.d = desc + s * kLDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  const i64 inner = it.d[kLInner];
  it.valid = e < it.d[kLOuter] * inner * per_line;
  it.line = e / per_line;
  it.k = e % per_line;
  it.o = it.line / inner;
  it.j = it.line % inner;
  return it;
}

// rows [sum of outer * inner, nfft]: line (o, j) of a sample, cut or zero-padded
extern "C" __global__ void audio_lines(const float* src, float* rows, const i64* desc, const i64* block_start, int n,
                                       int nfft) {
  const LineItem it = line_item(desc, block_start, n, nfft);
  if (!it.valid) return;
  const i64* d = it.d;
  rows[(d[kLRow] + it.line) * nfft + it.k] =
      it.k < d[kLLength] ? src[d[kLSrcOff] + (it.o * d[kLLength] + it.k) * d[kLInner] + it.j] : 0.0f;
}

// bins of line (o, j) written to [outer, nbins, inner]
extern "C" __global__ void audio_line_power(const float* bins, float* dst, const i64* desc, const i64* block_start,
                                            int n, int nbins, int power) {
  const LineItem it = line_item(desc, block_start, n, nbins);
  if (!it.valid) return;
  const i64* d = it.d;
  const float* c = bins + 2 * ((d[kLRow] + it.line) * nbins + it.k);
  const float p = c[0] * c[0] + c[1] * c[1];
  dst[d[kLDstOff] + (it.o * nbins + it.k) * d[kLInner] + it.j] = power == 2 ? p : sqrtf(p);
}

// ---- a matrix along the middle axis: desc [src offset, dst offset, outer, cols, inner, rows, matrix offset]
enum MatrixDesc { kMSrcOff, kMDstOff, kMOuter, kMCols, kMInner, kMRows, kMMatOff, kMDesc };

extern "C" __global__ void audio_matrix(const float* src, float* dst, const i64* desc, const i64* block_start, int n,
                                        const double* matrices) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kMDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  const i64 inner = d[kMInner], rows = d[kMRows], cols = d[kMCols];
  if (e >= d[kMOuter] * rows * inner) return;
  const i64 o = e / (rows * inner), r = (e / inner) % rows, j = e % inner;
  const float* x = src + d[kMSrcOff] + o * cols * inner + j;
  const double* m = matrices + d[kMMatOff] + r * cols;
  double acc = 0.0;
  for (i64 c = 0; c < cols; ++c)
    if (m[c] != 0.0) acc += m[c] * double(x[c * inner]);
  dst[d[kMDstOff] + e] = float(acc);
}

// ---- decibels: desc [src offset, dst offset, volume]; refs [N] (each sample's maximum, or given) --
enum DbDesc { kDSrcOff, kDDstOff, kDVolume, kDDesc };

extern "C" __global__ void audio_decibels(const float* src, float* dst, const float* refs, const i64* desc,
                                          const i64* block_start, int n, double multiplier, double floor_ratio) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kDVolume]) return;
  // in float, as the CPU kernel and DALI compute it
  const float ratio = src[d[kDSrcOff] + e] * (1.0f / refs[s]), floor = float(floor_ratio);
  dst[d[kDDstOff] + e] = float(multiplier) * log10f(ratio > floor ? ratio : floor);
}

// ---- preemphasis: desc [src offset, dst offset, volume]; coeffs [N] ----------------------------
template <typename In>
__device__ void preemphasis(const In* src, float* dst, const i64* desc, const i64* block_start, int n,
                            const float* coeffs, int border) {
  const int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDDesc;
  const i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  const i64 volume = d[kDVolume];
  if (e >= volume) return;
  const In* x = src + d[kDSrcOff];
  float before;
  if (e > 0) before = float(x[e - 1]);
  else if (border == 0) before = 0.0f;                              // zero
  else if (border == 2 && volume > 1) before = float(x[1]);         // reflect
  else before = float(x[0]);                                        // clamp
  dst[d[kDDstOff] + e] = __fsub_rn(float(x[e]), __fmul_rn(coeffs[s], before));  // no fused multiply-add: the CPU's
}

#define PENSTOCK_PREEMPHASIS(T)                                                                              \
  extern "C" __global__ void audio_preemphasis_##T(const T* src, float* dst, const i64* desc,                 \
                                                   const i64* block_start, int n, const float* coeffs,        \
                                                   int border) {                                              \
    preemphasis<T>(src, dst, desc, block_start, n, coeffs, border);                                           \
  }
PENSTOCK_PREEMPHASIS(i16) PENSTOCK_PREEMPHASIS(i32) PENSTOCK_PREEMPHASIS(f32)
