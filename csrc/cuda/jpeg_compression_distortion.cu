// JPEG compression artefacts (kernels/jpeg_compression_distortion.cpp does a libjpeg-turbo encode/decode round
// trip): the same arithmetic as libjpeg-turbo's defaults, without the entropy coding, which is
// lossless. Colour: fixed-point RGB -> YCbCr, 4:2:0 chroma by 2x2 averaging (alternating rounding
// bias), edge replication to whole blocks, integer "islow" forward DCT, quantization by the
// quality-scaled standard tables (reciprocal multiplication), dequantization, integer "islow"
// inverse DCT, "fancy" (triangle) chroma upsampling, fixed-point YCbCr -> RGB. Gray: the Y path.
// Two launches per batch: one thread per 8x8 block (into per-frame planes), one per pixel.
enum JpegDesc { kJInOff, kJOutOff, kJPlaneOff, kJH, kJW, kJC, kJTable, kJBlocks, kJPixels, kJDesc = 9 };

#define JFIX(x) ((i32)((x) * 65536.0 + 0.5))

__device__ __forceinline__ i32 rgb_y(i32 r, i32 g, i32 b) {
  return (JFIX(0.29900) * r + JFIX(0.58700) * g + JFIX(0.11400) * b + 32768) >> 16;
}
__device__ __forceinline__ i32 rgb_cb(i32 r, i32 g, i32 b) {
  return (-JFIX(0.16874) * r - JFIX(0.33126) * g + JFIX(0.5) * b + (128 << 16) + 32767) >> 16;
}
__device__ __forceinline__ i32 rgb_cr(i32 r, i32 g, i32 b) {
  return (JFIX(0.5) * r - JFIX(0.41869) * g - JFIX(0.08131) * b + (128 << 16) + 32767) >> 16;
}

// The colour component `comp` (0 Y, 1 Cb, 2 Cr) of the pixel at (y, x) of a frame, or the gray value.
__device__ __forceinline__ i32 component(const u8* frame, i64 W, int C, i64 y, i64 x, int comp) {
  const u8* p = frame + (y * W + x) * C;
  if (C == 1) return p[0];
  i32 r = p[0], g = p[1], b = p[2];
  return comp == 0 ? rgb_y(r, g, b) : comp == 1 ? rgb_cb(r, g, b) : rgb_cr(r, g, b);
}

#define JCONST_BITS 13
#define JPASS1_BITS 2
#define JDESCALE(x, n) (((x) + (i32(1) << ((n) - 1))) >> (n))
#define FIX_0_298631336 2446
#define FIX_0_390180644 3196
#define FIX_0_541196100 4433
#define FIX_0_765366865 6270
#define FIX_0_899976223 7373
#define FIX_1_175875602 9633
#define FIX_1_501321110 12299
#define FIX_1_847759065 15137
#define FIX_1_961570560 16069
#define FIX_2_053119869 16819
#define FIX_2_562915447 20995
#define FIX_3_072711026 25172

// The odd part both transforms share (jfdctint.c, jidctint.c): (t0, t1, t2, t3) rotated in place.
__device__ __forceinline__ void odd_part(i32& t0, i32& t1, i32& t2, i32& t3) {
  i32 z1 = t0 + t3, z2 = t1 + t2, z3 = t0 + t2, z4 = t1 + t3;
  i32 z5 = (z3 + z4) * FIX_1_175875602;
  t0 *= FIX_0_298631336;
  t1 *= FIX_2_053119869;
  t2 *= FIX_3_072711026;
  t3 *= FIX_1_501321110;
  z1 *= -FIX_0_899976223;
  z2 *= -FIX_2_562915447;
  z3 = z3 * -FIX_1_961570560 + z5;
  z4 = z4 * -FIX_0_390180644 + z5;
  t0 += z1 + z3;
  t1 += z2 + z4;
  t2 += z2 + z3;
  t3 += z1 + z4;
}

// jfdctint.c: 8 values at stride `st`, in place; pass 1 (rows) keeps PASS1_BITS extra bits.
__device__ __forceinline__ void fdct_1d(i32* v, int st, bool first) {
  const int shift = first ? JCONST_BITS - JPASS1_BITS : JCONST_BITS + JPASS1_BITS;
  i32 tmp0 = v[0] + v[7 * st], tmp7 = v[0] - v[7 * st];
  i32 tmp1 = v[st] + v[6 * st], tmp6 = v[st] - v[6 * st];
  i32 tmp2 = v[2 * st] + v[5 * st], tmp5 = v[2 * st] - v[5 * st];
  i32 tmp3 = v[3 * st] + v[4 * st], tmp4 = v[3 * st] - v[4 * st];
  i32 tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  if (first) {
    v[0] = (tmp10 + tmp11) << JPASS1_BITS;
    v[4 * st] = (tmp10 - tmp11) << JPASS1_BITS;
  } else {
    v[0] = JDESCALE(tmp10 + tmp11, JPASS1_BITS);
    v[4 * st] = JDESCALE(tmp10 - tmp11, JPASS1_BITS);
  }
  i32 z1 = (tmp12 + tmp13) * FIX_0_541196100;
  v[2 * st] = JDESCALE(z1 + tmp13 * FIX_0_765366865, shift);
  v[6 * st] = JDESCALE(z1 + tmp12 * -FIX_1_847759065, shift);
  odd_part(tmp4, tmp5, tmp6, tmp7);
  v[7 * st] = JDESCALE(tmp4, shift);
  v[5 * st] = JDESCALE(tmp5, shift);
  v[3 * st] = JDESCALE(tmp6, shift);
  v[st] = JDESCALE(tmp7, shift);
}

// jidctint.c: 8 values at stride `st`, in place; pass 1 (columns) keeps PASS1_BITS extra bits,
// pass 2 also removes the factor 8.
__device__ __forceinline__ void idct_1d(i32* v, int st, bool first) {
  const int shift = first ? JCONST_BITS - JPASS1_BITS : JCONST_BITS + JPASS1_BITS + 3;
  i32 z2 = v[2 * st], z3 = v[6 * st];
  i32 z1 = (z2 + z3) * FIX_0_541196100;
  i32 tmp2 = z1 + z3 * -FIX_1_847759065;
  i32 tmp3 = z1 + z2 * FIX_0_765366865;
  i32 tmp0 = (v[0] + v[4 * st]) * (1 << JCONST_BITS);
  i32 tmp1 = (v[0] - v[4 * st]) * (1 << JCONST_BITS);
  i32 tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  tmp0 = v[7 * st];
  tmp1 = v[5 * st];
  tmp2 = v[3 * st];
  tmp3 = v[st];
  odd_part(tmp0, tmp1, tmp2, tmp3);
  v[0] = JDESCALE(tmp10 + tmp3, shift);
  v[7 * st] = JDESCALE(tmp10 - tmp3, shift);
  v[st] = JDESCALE(tmp11 + tmp2, shift);
  v[6 * st] = JDESCALE(tmp11 - tmp2, shift);
  v[2 * st] = JDESCALE(tmp12 + tmp1, shift);
  v[5 * st] = JDESCALE(tmp12 - tmp1, shift);
  v[3 * st] = JDESCALE(tmp13 + tmp0, shift);
  v[4 * st] = JDESCALE(tmp13 - tmp0, shift);
}

// jcdctmgr.c (libjpeg-turbo): round(|v| / divisor) by a 16-bit reciprocal, sign restored.
__device__ __forceinline__ i32 quantize(i32 v, u32 divisor) {
  int r = 16 + (31 - __clz(divisor));
  u32 fq = u32((u64(1) << r) / divisor), fr = u32((u64(1) << r) % divisor), c = divisor / 2;
  if (fr == 0) {
    fq >>= 1;
    --r;
  } else if (fr <= divisor / 2) {
    ++c;
  } else {
    ++fq;
  }
  u32 t = u32(v < 0 ? -v : v);
  i32 q = i32((u32(u16(t + c)) * fq) >> r);
  return v < 0 ? -q : q;
}

// One thread per 8x8 block of a frame: Y blocks first (by x bx), then Cb and Cr (cby x cbx each).
// planes: per frame the decoded Y (by*8 x bx*8), Cb and Cr (cby*8 x cbx*8) planes.
extern "C" __global__ void jpeg_blocks(const u8* src, u8* planes, const i64* desc, const i64* block_start, int n,
                                       const i32* tables) {
  int f = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + f * kJDesc;
  i64 b = (i64(blockIdx.x) - block_start[f]) * blockDim.x + threadIdx.x;
  if (b >= d[kJBlocks]) return;
  const i64 H = d[kJH], W = d[kJW];
  const int C = int(d[kJC]);
  const i64 by = (H + 7) / 8, bx = (W + 7) / 8, cby = (H + 15) / 16, cbx = (W + 15) / 16;
  const i64 ch = (H + 1) / 2;  // chroma rows
  int comp = 0;
  i64 plane = d[kJPlaneOff], pw = bx * 8, row0, col0;
  if (b < by * bx) {
    row0 = b / bx * 8;
    col0 = b % bx * 8;
  } else {
    i64 cb = b - by * bx;
    comp = 1 + int(cb / (cby * cbx));
    cb %= cby * cbx;
    plane += by * 8 * pw + (comp - 1) * cby * 8 * cbx * 8;
    pw = cbx * 8;
    row0 = cb / cbx * 8;
    col0 = cb % cbx * 8;
  }
  const u8* frame = src + d[kJInOff];
  const i32* qt = tables + d[kJTable] * 128 + (comp ? 64 : 0);
  i32 v[64];
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      i64 py = row0 + y, px = col0 + x;
      i32 s;
      if (comp == 0) {  // edge replication
        s = component(frame, W, C, py < H ? py : H - 1, px < W ? px : W - 1, 0);
      } else {  // rows past the last chroma row repeat it; columns replicate the last pixel
        i64 r0 = 2 * (py < ch ? py : ch - 1), r1 = r0 + 1 < H ? r0 + 1 : H - 1;
        i64 c0 = 2 * px < W ? 2 * px : W - 1, c1 = 2 * px + 1 < W ? 2 * px + 1 : W - 1;
        s = (component(frame, W, C, r0, c0, comp) + component(frame, W, C, r0, c1, comp) +
             component(frame, W, C, r1, c0, comp) + component(frame, W, C, r1, c1, comp) + (px & 1 ? 2 : 1)) >> 2;
      }
      v[y * 8 + x] = s - 128;
    }
  for (int y = 0; y < 8; ++y) fdct_1d(v + y * 8, 1, true);
  for (int x = 0; x < 8; ++x) fdct_1d(v + x, 8, false);
  for (int k = 0; k < 64; ++k) v[k] = quantize(v[k], u32(qt[k]) * 8) * qt[k];
  for (int x = 0; x < 8; ++x) idct_1d(v + x, 8, true);
  for (int y = 0; y < 8; ++y) idct_1d(v + y * 8, 1, false);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      i32 s = v[y * 8 + x] + 128;
      planes[plane + (row0 + y) * pw + col0 + x] = u8(s < 0 ? 0 : s > 255 ? 255 : s);
    }
}

// Chroma at output pixel (y, x): libjpeg-turbo's h2v2 "fancy" upsampling (3/4 - 1/4 triangle in
// both directions, edges repeated), or plain replication when the chroma is at most 2 wide.
__device__ __forceinline__ i32 upsample(const u8* p, i64 pw, i64 ch, i64 cw, i64 y, i64 x) {
  i64 i = y >> 1, j = x >> 1;
  if (cw <= 2) return p[i * pw + j];
  i64 other = (y & 1) ? (i + 1 < ch ? i + 1 : ch - 1) : (i > 0 ? i - 1 : 0);
  i64 nb = (x & 1) ? (j + 1 < cw ? j + 1 : cw - 1) : (j > 0 ? j - 1 : 0);
  i32 here = 3 * p[i * pw + j] + p[other * pw + j];
  i32 next = 3 * p[i * pw + nb] + p[other * pw + nb];
  return (3 * here + next + ((x & 1) ? 7 : 8)) >> 4;
}

__device__ __forceinline__ u8 clamp_u8(i32 v) { return u8(v < 0 ? 0 : v > 255 ? 255 : v); }

// One thread per pixel: Y from its plane, chroma upsampled, back to RGB (jdcolor.c's tables).
extern "C" __global__ void jpeg_pixels(const u8* planes, u8* dst, const i64* desc, const i64* block_start, int n) {
  int f = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + f * kJDesc;
  i64 p = (i64(blockIdx.x) - block_start[f]) * blockDim.x + threadIdx.x;
  if (p >= d[kJPixels]) return;
  const i64 H = d[kJH], W = d[kJW], C = d[kJC];
  const i64 y = p / W, x = p % W, bx = (W + 7) / 8, by = (H + 7) / 8, cpw = (W + 15) / 16 * 8;
  const u8* yp = planes + d[kJPlaneOff];
  u8* out = dst + d[kJOutOff] + p * C;
  i32 Y = yp[y * bx * 8 + x];
  if (C == 1) {
    out[0] = u8(Y);
    return;
  }
  const u8* cbp = yp + by * 8 * bx * 8;
  const u8* crp = cbp + (H + 15) / 16 * 8 * cpw;
  const i64 ch = (H + 1) / 2, cw = (W + 1) / 2;
  i32 cb = upsample(cbp, cpw, ch, cw, y, x) - 128, cr = upsample(crp, cpw, ch, cw, y, x) - 128;
  out[0] = clamp_u8(Y + ((JFIX(1.40200) * cr + 32768) >> 16));
  out[1] = clamp_u8(Y + ((-JFIX(0.34414) * cb + 32768 - JFIX(0.71414) * cr) >> 16));
  out[2] = clamp_u8(Y + ((JFIX(1.77200) * cb + 32768) >> 16));
}
