// Per-element kernels of the breadth operators: lookup_table, the three noise operators
// (kernels/noise.cpp) and a batched copy of element ranges (element_extract, permute_batch).

// ---- copy of ranges ---------------------------------------------------------------------------
// Per range: source address, destination address (bytes), element count.
#define PENSTOCK_COPY_RANGES(U)                                                                   \
  extern "C" __global__ void copy_ranges_##U(const i64* desc, const i64* block_start, int n) {   \
    int s = find_sample(block_start, n, blockIdx.x);                                              \
    const i64* d = desc + 3 * s;                                                                  \
    i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;                        \
    if (e < d[2]) reinterpret_cast<U*>(d[1])[e] = reinterpret_cast<const U*>(d[0])[e];           \
  }
PENSTOCK_COPY_RANGES(u8) PENSTOCK_COPY_RANGES(u16) PENSTOCK_COPY_RANGES(u32) PENSTOCK_COPY_RANGES(u64)

// ---- lookup_table -----------------------------------------------------------------------------
// `table` holds `size` entries already in the output type, then the default value at [size].
#define PENSTOCK_LUT(I, U)                                                                        \
  extern "C" __global__ void lut_##I##_##U(const I* src, U* dst, const U* table, i64 size, i64 n) { \
    for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x) { \
      i64 x = i64(src[i]);                                                                        \
      dst[i] = table[(x >= 0 && x < size) ? x : size];                                            \
    }                                                                                             \
  }
#define PENSTOCK_LUT_FROM(I) PENSTOCK_LUT(I, u8) PENSTOCK_LUT(I, u16) PENSTOCK_LUT(I, u32) PENSTOCK_LUT(I, u64)
PENSTOCK_LUT_FROM(u8) PENSTOCK_LUT_FROM(u16) PENSTOCK_LUT_FROM(u32) PENSTOCK_LUT_FROM(i8) PENSTOCK_LUT_FROM(i16)
PENSTOCK_LUT_FROM(i32) PENSTOCK_LUT_FROM(i64) PENSTOCK_LUT_FROM(bool)
// u64 keys above 2^63 must miss the table, not wrap to negative indices
#define PENSTOCK_LUT_U64(U)                                                                       \
  extern "C" __global__ void lut_u64_##U(const u64* src, U* dst, const U* table, i64 size, i64 n) { \
    for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x) \
      dst[i] = table[src[i] < u64(size) ? i64(src[i]) : size];                                    \
  }
PENSTOCK_LUT_U64(u8) PENSTOCK_LUT_U64(u16) PENSTOCK_LUT_U64(u32) PENSTOCK_LUT_U64(u64)

// ---- noise ------------------------------------------------------------------------------------
// splitmix64 as in kernels/noise.cpp. Its state after k draws is seed + k * golden, so draw k of
// a sample's stream is computed directly: Gaussian and salt-and-pepper elements read the same
// draws as the CPU's sequential loop and give the CPU's values.
__device__ __forceinline__ u64 splitmix_draw(u64 seed, u64 k) {  // k counts from 1
  u64 z = seed + k * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ double splitmix_uniform(u64 seed, u64 k) {
  return double(splitmix_draw(seed, k) >> 11) * 0x1.0p-53;
}

// Poisson draws (the CPU kernel's algorithms) from a stream (seed, position).
__device__ i64 poisson(double lam, u64 seed) {
  u64 k = 0;
  if (lam < 10) {
    double limit = exp(-lam), prod = splitmix_uniform(seed, ++k);
    i64 count = 0;
    while (prod > limit) {
      prod *= splitmix_uniform(seed, ++k);
      ++count;
    }
    return count;
  }
  double slam = sqrt(lam), loglam = log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  while (true) {
    double u = splitmix_uniform(seed, ++k) - 0.5, v = splitmix_uniform(seed, ++k);
    double us = 0.5 - fabs(u);
    i64 c = i64(floor((2 * a / us + b) * u + lam + 0.43));
    if (us >= 0.07 && v <= vr) return c;
    if (c < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -lam + double(c) * loglam - lgamma(double(c) + 1))
      return c;
  }
}

enum NoiseKind { kGaussian = 0, kShot = 1, kSaltAndPepper = 2 };
// Per sample: offset, element count, work items (pairs / elements / pixels), channels per item.
enum NoiseDesc { kNOff, kNVol, kNWork, kNChan, kNDesc };

template <typename T>
__device__ void noise_batch(int kind, const T* src, T* dst, const i64* desc, const i64* block_start, int n,
                            const u64* seeds, const double* params) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + kNDesc * s;
  i64 w = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (w >= d[kNWork]) return;
  const T* in = src + d[kNOff];
  T* out = dst + d[kNOff];
  const double* p = params + 4 * s;
  i64 vol = d[kNVol];
  u64 seed = seeds[s];
  if (kind == kGaussian) {  // pair w: elements 2w, 2w + 1 from draws 2w + 1, 2w + 2
    float mean = float(p[0]), sd = float(p[1]);
    i64 k = 2 * w;
    float u1 = 1.0f - float(splitmix_uniform(seed, u64(k) + 1)), u2 = float(splitmix_uniform(seed, u64(k) + 2));
    float r = __fmul_rn(sd, sqrtf(__fmul_rn(-2.0f, logf(u1))));
    float angle = __fmul_rn(6.2831853f, u2);
    out[k] = convert_sat<T, float>(__fadd_rn(__fadd_rn(to_float(in[k]), mean), __fmul_rn(r, cosf(angle))));
    if (k + 1 < vol)
      out[k + 1] = convert_sat<T, float>(__fadd_rn(__fadd_rn(to_float(in[k + 1]), mean), __fmul_rn(r, sinf(angle))));
  } else if (kind == kShot) {
    // Each element draws from its own stream (the sample's seed mixed with the element index):
    // the CPU's single sequential stream cannot be split, so shot noise agrees with the CPU in
    // distribution, not value by value.
    double lam = fmax(0.0, double(in[w])) / p[0];
    u64 elem_seed = splitmix_draw(seed ^ 0xD1B54A32D192ED03ull, u64(w) + 1);
    out[w] = convert_sat<T, double>(lam > 0 ? double(poisson(lam, elem_seed)) * p[0] : 0.0);
  } else {  // pixel w: draws 2w + 1 (hit), 2w + 2 (salt or pepper)
    i64 ch = d[kNChan], k = w * ch;
    bool hit = splitmix_uniform(seed, 2 * u64(w) + 1) < p[0];
    bool is_salt = splitmix_uniform(seed, 2 * u64(w) + 2) < p[1];
    T salt = convert_sat<T, double>(p[2]), pepper = convert_sat<T, double>(p[3]);
    for (i64 c = 0; c < ch && k + c < vol; ++c) out[k + c] = hit ? (is_salt ? salt : pepper) : in[k + c];
  }
}

#define PENSTOCK_NOISE(T)                                                                         \
  extern "C" __global__ void noise_##T(int kind, const T* src, T* dst, const i64* desc, const i64* block_start, \
                                       int n, const u64* seeds, const double* params) {           \
    noise_batch<T>(kind, src, dst, desc, block_start, n, seeds, params);                          \
  }
PENSTOCK_NOISE(u8) PENSTOCK_NOISE(u16) PENSTOCK_NOISE(u32) PENSTOCK_NOISE(u64) PENSTOCK_NOISE(i8)
PENSTOCK_NOISE(i16) PENSTOCK_NOISE(i32) PENSTOCK_NOISE(i64) PENSTOCK_NOISE(f32) PENSTOCK_NOISE(f64)
PENSTOCK_NOISE(bool)
