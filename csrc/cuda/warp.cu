// 2-D affine warp (kernels/warp.cpp): output pixel (x, y) samples the input at
// M * [x + 0.5, y + 0.5, 1]; nearest takes the pixel containing that point, linear blends the 4
// around it (centres at i + 0.5). Taps outside the image take `fill` when has_fill, else the
// nearest edge pixel. One thread per output pixel (all channels); frames share the matrix.
enum WarpDesc { kInOff, kOutOff, kH, kW, kOutH, kOutW, kPixels, kDesc = 8 };

__device__ __forceinline__ float bound(float v, float lo, float hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

template <typename T>
__device__ void warp(const T* src, T* dst, const i64* desc, const i64* block_start, int n, int C,
                     const float* matrices, int linear, int has_fill, float fill) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDesc;
  i64 p = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (p >= d[kPixels]) return;
  i64 H = d[kH], W = d[kW], Ho = d[kOutH], Wo = d[kOutW];
  i64 frame = p / (Ho * Wo), r = p - frame * Ho * Wo, y = r / Wo, x = r - y * Wo;
  const T* in = src + d[kInOff] + frame * H * W * C;
  T* out = dst + d[kOutOff] + p * C;
  const float* m = matrices + s * 6;
  const float cx = float(x) + 0.5f, cy = float(y) + 0.5f;
  const float bx = m[1] * cy + m[2], by = m[4] * cy + m[5];
  const float sx = m[0] * cx + bx, sy = m[3] * cx + by;
  const bool clamp = !has_fill && H > 0 && W > 0;
  const T fill_value = pixel_from<T>(fill);
  auto tap = [&](i64 yy, i64 xx, int c) -> float {
    if (yy >= 0 && yy < H && xx >= 0 && xx < W) return to_float(in[(yy * W + xx) * C + c]);
    if (!clamp) return to_float(fill_value);
    yy = yy < 0 ? 0 : (yy >= H ? H - 1 : yy);
    xx = xx < 0 ? 0 : (xx >= W ? W - 1 : xx);
    return to_float(in[(yy * W + xx) * C + c]);
  };
  if (!linear) {
    i64 yy = i64(floorf(bound(sy, -1.f, float(H)))), xx = i64(floorf(bound(sx, -1.f, float(W))));
    for (int c = 0; c < C; ++c) {
      if (yy >= 0 && yy < H && xx >= 0 && xx < W) out[c] = in[(yy * W + xx) * C + c];
      else if (!clamp) out[c] = fill_value;
      else out[c] = in[((yy < 0 ? 0 : (yy >= H ? H - 1 : yy)) * W + (xx < 0 ? 0 : (xx >= W ? W - 1 : xx))) * C + c];
    }
    return;
  }
  const float ux = bound(sx - 0.5f, -2.f, float(W) + 1.f), uy = bound(sy - 0.5f, -2.f, float(H) + 1.f);
  const i64 x0 = i64(floorf(ux)), y0 = i64(floorf(uy));
  const float fx = ux - float(x0), fy = uy - float(y0);
  const float w00 = (1 - fx) * (1 - fy), w01 = fx * (1 - fy), w10 = (1 - fx) * fy, w11 = fx * fy;
  for (int c = 0; c < C; ++c) {
    float v = w00 * tap(y0, x0, c) + w01 * tap(y0, x0 + 1, c) + w10 * tap(y0 + 1, x0, c) + w11 * tap(y0 + 1, x0 + 1, c);
    out[c] = pixel_from<T>(v);
  }
}

#define PENSTOCK_WARP(T)                                                                                \
  extern "C" __global__ void warp_affine_##T(const T* src, T* dst, const i64* desc, const i64* block_start, \
                                             int n, int C, const float* matrices, int linear, int has_fill, \
                                             float fill) {                                              \
    warp<T>(src, dst, desc, block_start, n, C, matrices, linear, has_fill, fill);                       \
  }
PENSTOCK_WARP(u8) PENSTOCK_WARP(i16) PENSTOCK_WARP(u16) PENSTOCK_WARP(i32) PENSTOCK_WARP(f32)

// ---- perspective warp (kernels/warp_perspective.cpp) ----------------------------------------------
// One thread per output pixel (all channels). The source point in float as the CPU kernel evaluates
// it (the row's terms, a fused multiply-add of the column's, the division), rounded half to even
// for nearest neighbour; linear / cubic weigh the taps in float; no other fused multiply-adds, so
// the results are the CPU's.
enum PerspDesc { kPIn, kPOut, kPH, kPW, kPC, kPOutH, kPOutW, kPPixels, kPDesc = 8 };

__device__ __forceinline__ i64 persp_border(i64 p, i64 n, int border) {
  if (p >= 0 && p < n) return p;
  if (border == 1) return p < 0 ? 0 : n - 1;  // replicate
  if (border == 2 || border == 3) {            // reflect, reflect 101
    if (n == 1) return 0;
    i64 delta = border == 3;
    do {
      if (p < 0) p = -p - 1 + delta;
      else p = n - 1 - (p - n) - delta;
    } while (p < 0 || p >= n);
    return p;
  }
  if (border == 4) {  // wrap
    p %= n;
    return p < 0 ? p + n : p;
  }
  return -1;  // constant
}

__device__ __forceinline__ i32 persp_round(float v) {  // half to even; NaN (a zero denominator) -> 0
  double d = v == v ? double(v) : 0.0;
  d = d < -2147483648.0 ? -2147483648.0 : (d > 2147483647.0 ? 2147483647.0 : d);
  return i32(rint(d));
}

__device__ __forceinline__ void persp_cubic(float x, float* w) {
  const float a = -0.75f, x1 = __fadd_rn(x, 1.f), y = __fadd_rn(1.f, -x);
  w[0] = __fadd_rn(__fmul_rn(__fadd_rn(__fmul_rn(__fadd_rn(__fmul_rn(a, x1), -5 * a), x1), 8 * a), x1), -4 * a);
  w[1] = __fadd_rn(__fmul_rn(__fmul_rn(__fadd_rn(__fmul_rn(a + 2, x), -(a + 3)), x), x), 1.f);
  w[2] = __fadd_rn(__fmul_rn(__fmul_rn(__fadd_rn(__fmul_rn(a + 2, y), -(a + 3)), y), y), 1.f);
  w[3] = __fadd_rn(__fadd_rn(__fadd_rn(1.f, -w[0]), -w[1]), -w[2]);
}

template <typename T> __device__ __forceinline__ T persp_store(float v) { return pixel_from<T>(rintf(v)); }
template <> __device__ __forceinline__ float persp_store<float>(float v) { return v; }

template <typename T>
__device__ void warp_perspective_kernel(const T* src, T* dst, const i64* desc, const i64* block_start, int n,
                                        const double* matrices, const double* fill, int fill_stride, int interp,
                                        int border) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kPDesc;
  i64 p = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (p >= d[kPPixels]) return;
  const i64 H = d[kPH], W = d[kPW], C = d[kPC], Ho = d[kPOutH], Wo = d[kPOutW];
  const i64 frame = p / (Ho * Wo), r = p - frame * Ho * Wo, y = r / Wo, x = r - y * Wo;
  const T* in = src + d[kPIn] + frame * H * W * C;
  T* out = dst + d[kPOut] + p * C;
  const double* m = matrices + s * 9;
  const double* cval = fill + s * fill_stride;
  float mf[9];
  for (int k = 0; k < 9; ++k) mf[k] = float(m[k]);
  const float fx = float(x), fy = float(y);
  const float row_x = __fadd_rn(__fmul_rn(mf[1], fy), mf[2]), row_y = __fadd_rn(__fmul_rn(mf[4], fy), mf[5]);
  const float row_w = __fadd_rn(__fmul_rn(mf[7], fy), mf[8]);
  const float den = __fmaf_rn(mf[6], fx, row_w);
  const float sx = __fdiv_rn(__fmaf_rn(mf[0], fx, row_x), den), sy = __fdiv_rn(__fmaf_rn(mf[3], fx, row_y), den);
  if (interp == 0) {
    i32 ix0 = persp_round(sx), iy0 = persp_round(sy);
    ix0 = ix0 < -32768 ? -32768 : (ix0 > 32767 ? 32767 : ix0);
    iy0 = iy0 < -32768 ? -32768 : (iy0 > 32767 ? 32767 : iy0);
    const i64 ix = persp_border(ix0, W, border), iy = persp_border(iy0, H, border);
    for (i64 c = 0; c < C; ++c) out[c] = ix < 0 || iy < 0 ? convert_sat<T, double>(cval[c]) : in[(iy * W + ix) * C + c];
    return;
  }
  const float fx0 = floorf(sx), fy0 = floorf(sy), ax = __fadd_rn(sx, -fx0), ay = __fadd_rn(sy, -fy0);
  const bool cubic = interp == 2;
  const int k = cubic ? 4 : 2, back = cubic ? 1 : 0;
  i64 xs[4], ys[4];
  for (int t = 0; t < k; ++t) {
    xs[t] = persp_border(i64(fx0) - back + t, W, border);
    ys[t] = persp_border(i64(fy0) - back + t, H, border);
  }
  float wx[4], wy[4];
  if (cubic) {
    persp_cubic(ax, wx);
    persp_cubic(ay, wy);
  }
  for (i64 c = 0; c < C; ++c) {
    const float fc = to_float(convert_sat<T, double>(cval[c]));
    auto tap = [&](int a, int b) { return ys[a] < 0 || xs[b] < 0 ? fc : to_float(in[(ys[a] * W + xs[b]) * C + c]); };
    float v;
    if (!cubic) {
      const float bx = __fadd_rn(1.f, -ax), by = __fadd_rn(1.f, -ay);
      float top = __fadd_rn(__fmul_rn(tap(0, 0), bx), __fmul_rn(tap(0, 1), ax));
      float bottom = __fadd_rn(__fmul_rn(tap(1, 0), bx), __fmul_rn(tap(1, 1), ax));
      v = __fadd_rn(__fmul_rn(top, by), __fmul_rn(bottom, ay));
    } else {
      v = 0.f;
      for (int a = 0; a < 4; ++a) {
        float row = 0.f;
        for (int b = 0; b < 4; ++b) row = __fadd_rn(row, __fmul_rn(tap(a, b), wx[b]));
        v = __fadd_rn(v, __fmul_rn(row, wy[a]));
      }
    }
    out[c] = persp_store<T>(v);
  }
}

// ---- remap (kernels/warp_perspective.cpp) ----------------------------------------------------------
enum RemapDesc { kRIn, kROut, kRH, kRW, kRC, kROutH, kROutW, kRPixels, kRMap, kRDesc = 9 };

template <typename T>
__device__ void remap_kernel(const T* src, T* dst, const i64* desc, const i64* block_start, int n, const float* mapx,
                             const float* mapy, int interp, float shift) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kRDesc;
  i64 p = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (p >= d[kRPixels]) return;
  const i64 H = d[kRH], W = d[kRW], C = d[kRC], plane = d[kROutH] * d[kROutW], frame = p / plane;
  const T* in = src + d[kRIn] + frame * H * W * C;
  T* out = dst + d[kROut] + p * C;
  const float sx = __fadd_rn(mapx[d[kRMap] + p], -shift), sy = __fadd_rn(mapy[d[kRMap] + p], -shift);
  auto at = [&](i64 yy, i64 xx, i64 c) {
    return yy >= 0 && yy < H && xx >= 0 && xx < W ? to_float(in[(yy * W + xx) * C + c]) : 0.f;
  };
  if (interp == 0) {
    const i64 ix = i64(floorf(__fadd_rn(sx, 0.5f))), iy = i64(floorf(__fadd_rn(sy, 0.5f)));
    for (i64 c = 0; c < C; ++c) out[c] = persp_store<T>(at(iy, ix, c));
    return;
  }
  const float fx0 = floorf(sx), fy0 = floorf(sy), fx = __fadd_rn(sx, -fx0), fy = __fadd_rn(sy, -fy0);
  const i64 x0 = i64(fx0), y0 = i64(fy0);
  const float gx = __fadd_rn(1.f, -fx), gy = __fadd_rn(1.f, -fy);
  for (i64 c = 0; c < C; ++c) {
    float top = __fadd_rn(__fmul_rn(at(y0, x0, c), gx), __fmul_rn(at(y0, x0 + 1, c), fx));
    float bottom = __fadd_rn(__fmul_rn(at(y0 + 1, x0, c), gx), __fmul_rn(at(y0 + 1, x0 + 1, c), fx));
    out[c] = persp_store<T>(__fadd_rn(__fmul_rn(top, gy), __fmul_rn(bottom, fy)));
  }
}

#define PENSTOCK_PERSPECTIVE(T)                                                                                \
  extern "C" __global__ void warp_perspective_##T(const T* src, T* dst, const i64* desc, const i64* block_start, \
                                                  int n, const double* matrices, const double* fill,          \
                                                  int fill_stride, int interp, int border) {                  \
    warp_perspective_kernel<T>(src, dst, desc, block_start, n, matrices, fill, fill_stride, interp, border);   \
  }                                                                                                           \
  extern "C" __global__ void remap_##T(const T* src, T* dst, const i64* desc, const i64* block_start, int n,   \
                                       const float* mapx, const float* mapy, int interp, float shift) {       \
    remap_kernel<T>(src, dst, desc, block_start, n, mapx, mapy, interp, shift);                               \
  }
PENSTOCK_PERSPECTIVE(u8) PENSTOCK_PERSPECTIVE(u16) PENSTOCK_PERSPECTIVE(i16) PENSTOCK_PERSPECTIVE(f32)
