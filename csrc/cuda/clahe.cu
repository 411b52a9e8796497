// CLAHE (kernels/clahe.cpp) in three launches per batch: the planes to equalize (grey, each channel,
// or the L of fixed-point 8-bit Lab) into a scratch buffer; one block per tile for its clipped
// histogram and table; one thread per pixel to blend the four nearest tiles' tables (and, for
// luma, to go back from Lab to RGB). The RGB -> Lab tables come from the engine (lab_tables).

__device__ __forceinline__ i32 lab_descale(i64 v, int bits) { return i32((v + (i64(1) << (bits - 1))) >> bits); }
__device__ __forceinline__ u8 clamp_u8(i32 v) { return u8(v < 0 ? 0 : (v > 255 ? 255 : v)); }
__device__ __forceinline__ u8 round_u8(float v) {
  v = rintf(v);
  return u8(v < 0.f ? 0.f : (v > 255.f ? 255.f : v));
}

// tables: gamma [256], cube root [3072], coefficients [9]
__device__ __forceinline__ void rgb_to_lab8(const i32* gamma, const i32* cbrt_tab, const i32* k, const u8* rgb,
                                            u8* lab) {
  const i64 r = gamma[rgb[0]], g = gamma[rgb[1]], b = gamma[rgb[2]];
  const i64 fx = cbrt_tab[lab_descale(r * k[0] + g * k[1] + b * k[2], 12)];
  const i64 fy = cbrt_tab[lab_descale(r * k[3] + g * k[4] + b * k[5], 12)];
  const i64 fz = cbrt_tab[lab_descale(r * k[6] + g * k[7] + b * k[8], 12)];
  lab[0] = clamp_u8(lab_descale(296 * fy - 1336934, 15));
  lab[1] = clamp_u8(lab_descale(500 * (fx - fy) + (i64(128) << 15), 15));
  lab[2] = clamp_u8(lab_descale(200 * (fy - fz) + (i64(128) << 15), 15));
}

__device__ __forceinline__ float lab_f_inverse(float t) { return t > 0.206893f ? t * t * t : (t - 16.f / 116.f) / 7.787f; }
__device__ __forceinline__ float linear_to_srgb(float v) {
  v = fminf(fmaxf(v, 0.f), 1.f);
  return v <= 0.0031308f ? v * 12.92f : 1.055f * powf(v, 1.f / 2.4f) - 0.055f;
}

__device__ __forceinline__ void lab8_to_rgb(const u8* lab, u8* rgb) {
  float l = lab[0] * 100.f / 255.f, a = lab[1] - 128.f, bb = lab[2] - 128.f;
  float y = l <= 8.f ? l / 903.3f : powf((l + 16.f) / 116.f, 3.f);
  float fy = y <= 0.008856f ? 7.787f * y + 16.f / 116.f : (l + 16.f) / 116.f;
  float x = lab_f_inverse(a / 500.f + fy) * 0.950456f, z = lab_f_inverse(fy - bb / 200.f) * 1.088754f;
  rgb[0] = round_u8(linear_to_srgb(3.240479f * x - 1.537150f * y - 0.498535f * z) * 255.f);
  rgb[1] = round_u8(linear_to_srgb(-0.969256f * x + 1.875992f * y + 0.041556f * z) * 255.f);
  rgb[2] = round_u8(linear_to_srgb(0.055648f * x - 0.204043f * y + 1.057311f * z) * 255.f);
}

__device__ __forceinline__ i64 reflect101(i64 i, i64 n) {
  if (n == 1) return 0;
  i64 period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// Per sample: input and output offsets, pixels, H, W, C, mode (0: planes as they are, 1: luma),
// scratch offset (planes of H * W back to back), first table, tiles x and y, tile h and w.
enum ClaheDesc { kCIn, kCOut, kCPixels, kCH, kCW, kCC, kCMode, kCScratch, kCLut, kCTx, kCTy, kCTh, kCTw, kCDesc = 13 };

extern "C" __global__ void clahe_planes(const u8* src, u8* scratch, const i64* desc, const i64* block_start, int n,
                                        const i32* gamma, const i32* cbrt_tab, const i32* coeffs) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kCDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kCPixels]) return;
  const u8* px = src + d[kCIn] + e * d[kCC];
  u8* planes = scratch + d[kCScratch];
  if (d[kCMode] == 1) {
    u8 lab[3];
    rgb_to_lab8(gamma, cbrt_tab, coeffs, px, lab);
    planes[e] = lab[0];
  } else {
    for (i64 c = 0; c < d[kCC]; ++c) planes[c * d[kCPixels] + e] = px[c];
  }
}

// One block (256 threads) per tile: (plane offset, H, W, tile h, tile w, tile y, tile x, clip, table offset).
extern "C" __global__ void clahe_tables(const u8* scratch, u8* luts, const i64* tiles) {
  __shared__ u32 hist[256];
  const i64* t = tiles + i64(blockIdx.x) * 9;
  const i64 h = t[1], w = t[2], th = t[3], tw = t[4], y0 = t[5] * th, x0 = t[6] * tw, clip = t[7];
  hist[threadIdx.x] = 0;
  __syncthreads();
  const u8* plane = scratch + t[0];
  for (i64 k = threadIdx.x; k < th * tw; k += blockDim.x) {
    i64 y = reflect101(y0 + k / tw, h), x = reflect101(x0 + k % tw, w);
    atomicAdd(&hist[plane[y * w + x]], 1u);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (clip > 0) {
      i64 clipped = 0;
      for (int i = 0; i < 256; ++i)
        if (i64(hist[i]) > clip) {
          clipped += hist[i] - clip;
          hist[i] = u32(clip);
        }
      i64 batch = clipped / 256, residual = clipped - batch * 256;
      for (int i = 0; i < 256; ++i) hist[i] += u32(batch);
      if (residual) {
        i64 stride = 256 / residual > 1 ? 256 / residual : 1;
        for (i64 i = 0; i < 256 && residual > 0; i += stride, --residual) ++hist[i];
      }
    }
    const float scale = __fdiv_rn(255.f, float(th * tw));
    u8* lut = luts + t[8];
    i64 sum = 0;
    for (int i = 0; i < 256; ++i) {
      sum += hist[i];
      lut[i] = round_u8(__fmul_rn(float(sum), scale));
    }
  }
}

// The blend of the four nearest tiles' tables at (x, y) for value v; tables of one plane.
__device__ __forceinline__ u8 blend(const u8* luts, const i64* d, i64 x, i64 y, int v) {
  const float inv_th = __fdiv_rn(1.f, float(d[kCTh])), inv_tw = __fdiv_rn(1.f, float(d[kCTw]));
  const i64 tiles_x = d[kCTx], tiles_y = d[kCTy];
  float tyf = __fadd_rn(__fmul_rn(float(y), inv_th), -0.5f);
  i64 ty1 = i64(floorf(tyf));
  float ya = __fadd_rn(tyf, -float(ty1));
  i64 ty2 = ty1 + 1 < tiles_y - 1 ? ty1 + 1 : tiles_y - 1;
  ty1 = ty1 > 0 ? ty1 : 0;
  float txf = __fadd_rn(__fmul_rn(float(x), inv_tw), -0.5f);
  i64 tx1 = i64(floorf(txf));
  float xa = __fadd_rn(txf, -float(tx1));
  i64 tx2 = tx1 + 1 < tiles_x - 1 ? tx1 + 1 : tiles_x - 1;
  tx1 = tx1 > 0 ? tx1 : 0;
  const u8* top = luts + ty1 * tiles_x * 256;
  const u8* bottom = luts + ty2 * tiles_x * 256;
  const float xa1 = __fadd_rn(1.f, -xa), ya1 = __fadd_rn(1.f, -ya);
  float t = __fadd_rn(__fmul_rn(float(top[tx1 * 256 + v]), xa1), __fmul_rn(float(top[tx2 * 256 + v]), xa));
  float b = __fadd_rn(__fmul_rn(float(bottom[tx1 * 256 + v]), xa1), __fmul_rn(float(bottom[tx2 * 256 + v]), xa));
  return round_u8(__fadd_rn(__fmul_rn(t, ya1), __fmul_rn(b, ya)));
}

extern "C" __global__ void clahe_apply(const u8* src, u8* dst, const i64* desc, const i64* block_start, int n,
                                       const u8* luts, const i32* gamma, const i32* cbrt_tab, const i32* coeffs) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kCDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kCPixels]) return;
  const i64 c = d[kCC], x = e % d[kCW], y = e / d[kCW];
  const u8* px = src + d[kCIn] + e * c;
  u8* out = dst + d[kCOut] + e * c;
  const i64 plane_tables = d[kCTx] * d[kCTy] * 256;
  if (d[kCMode] == 1) {
    u8 lab[3];
    rgb_to_lab8(gamma, cbrt_tab, coeffs, px, lab);
    lab[0] = blend(luts + d[kCLut], d, x, y, lab[0]);
    lab8_to_rgb(lab, out);
  } else {
    for (i64 ch = 0; ch < c; ++ch) out[ch] = blend(luts + d[kCLut] + ch * plane_tables, d, x, y, px[ch]);
  }
}
