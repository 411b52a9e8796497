// Displacement effects on HWC images (kernels/displacement.cpp): water, sphere, jitter. One thread
// per pixel (all channels); the displaced point in float as the CPU computes it (no fused
// multiply-adds), sampled by nearest neighbour or bilinearly, the fill value outside.
enum DispDesc { kDInOff, kDOutOff, kDPixels, kDH, kDW, kDC, kDDesc = 6 };

__device__ __forceinline__ u64 jitter_bits(u64 seed, u64 index) {  // splitmix64's finalizer
  u64 z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ void displaced_point(int kind, const double* p, i64 x, i64 y, i64 w, i64 h, float* px,
                                                float* py) {
  if (kind == 0) {  // water
    *px = __fadd_rn(float(x), __fmul_rn(float(p[0]), sinf(__fadd_rn(__fmul_rn(float(p[2]), float(y)), float(p[4])))));
    *py = __fadd_rn(float(y), __fmul_rn(float(p[1]), cosf(__fadd_rn(__fmul_rn(float(p[3]), float(x)), float(p[5])))));
  } else if (kind == 1) {  // sphere
    float cx = float(w) / 2.f, cy = float(h) / 2.f, r = float(w / 2 > h / 2 ? w / 2 : h / 2);
    float u = __fadd_rn(__fadd_rn(float(x), 0.5f), -cx), v = __fadd_rn(__fadd_rn(float(y), 0.5f), -cy);
    float s = __fdiv_rn(__fsqrt_rn(__fadd_rn(__fmul_rn(u, u), __fmul_rn(v, v))), r);
    *px = __fadd_rn(cx, __fmul_rn(s, u));
    *py = __fadd_rn(cy, __fmul_rn(s, v));
  } else {  // jitter
    u64 degree = u64(p[0]), bits = jitter_bits(u64(p[1]), u64(y * w + x));
    i64 half = i64(degree / 2), span = 2 * half + 1;
    *px = float(x) + 0.5f + float(i64(bits % u64(span)) - half);
    *py = float(y) + 0.5f + float(i64((bits >> 32) % u64(span)) - half);
  }
}

template <typename T>
__device__ void displace(const T* src, T* dst, const i64* desc, const i64* block_start, int n, const double* params,
                         const int* masks, int kind, int linear, float fill) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kDPixels]) return;
  const i64 h = d[kDH], w = d[kDW], c = d[kDC], x = e % w, y = e / w;
  const T* in = src + d[kDInOff];
  T* out = dst + d[kDOutOff] + e * c;
  if (masks[s] == 0) {
    for (i64 ch = 0; ch < c; ++ch) out[ch] = in[e * c + ch];
    return;
  }
  float px, py;
  displaced_point(kind, params + s * 6, x, y, w, h, &px, &py);
  if (!linear) {
    i64 ix = i64(floorf(px)), iy = i64(floorf(py));
    bool inside = px >= 0.f && py >= 0.f && ix < w && iy < h;
    for (i64 ch = 0; ch < c; ++ch) out[ch] = inside ? in[(iy * w + ix) * c + ch] : pixel_from<T>(fill);
    return;
  }
  float fx = __fadd_rn(px, -0.5f), fy = __fadd_rn(py, -0.5f);
  float x0f = floorf(fx), y0f = floorf(fy);
  float wx = __fadd_rn(fx, -x0f), wy = __fadd_rn(fy, -y0f);
  i64 x0 = i64(x0f), y0 = i64(y0f);
  for (i64 ch = 0; ch < c; ++ch) {
    float v[4];
    for (int k = 0; k < 4; ++k) {
      i64 xx = x0 + (k & 1), yy = y0 + (k >> 1);
      v[k] = xx >= 0 && yy >= 0 && xx < w && yy < h ? to_float(in[(yy * w + xx) * c + ch]) : fill;
    }
    float top = __fadd_rn(v[0], __fmul_rn(wx, __fadd_rn(v[1], -v[0])));
    float bottom = __fadd_rn(v[2], __fmul_rn(wx, __fadd_rn(v[3], -v[2])));
    out[ch] = pixel_from<T>(__fadd_rn(top, __fmul_rn(wy, __fadd_rn(bottom, -top))));
  }
}

#define PENSTOCK_DISPLACE(T)                                                                                  \
  extern "C" __global__ void displace_##T(const T* src, T* dst, const i64* desc, const i64* block_start, int n,  \
                                          const double* params, const int* masks, int kind, int linear,       \
                                          float fill) {                                                       \
    displace<T>(src, dst, desc, block_start, n, params, masks, kind, linear, fill);                           \
  }
PENSTOCK_DISPLACE(u8) PENSTOCK_DISPLACE(f32)
