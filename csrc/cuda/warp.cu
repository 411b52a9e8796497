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
